"""What the compose example's sluice service must agree on with its sluice config, which no
compose tool knows: the admin port is published on the host's loopback only (and bound where
the published port reaches it), and stop_grace_period covers drain_timeout.

The file itself is checked by running it: scripts/container-test.sh brings it up with
podman-compose and makes a call through it.
"""

import os
import re

from . import yaml_lines
from .sluice_config import SluiceConfig, is_loopback

CONFIG_IN_IMAGE = "/etc/sluice/sluice.yaml"
DEFAULT_STOP_GRACE_S = 10.0
# After drain_timeout, sluice gives terminated streams one more second to flush (server.cc).
DRAIN_FLUSH_S = 1
_GO_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|m|s|ms|us|ns)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# ${NAME:-default} / ${NAME-default} / ${NAME}: the value compose uses when NAME is unset.
_INTERPOLATION = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}")


def go_duration(text):
    """Seconds for a compose duration (Go syntax: '10s', '1m30s'); None when malformed."""
    text = str(text)
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _defaults(text):
    return _INTERPOLATION.sub(lambda m: m.group(1) or "", str(text))


def _published(entry):
    """(host_ip, container_port) of a `ports:` entry, or None when unreadable."""
    if isinstance(entry, dict):
        target = entry.get("target")
        return (entry.get("host_ip"), target) if isinstance(target, int) else None
    parts = _defaults(entry).split("/")[0].rsplit(":", 2)
    try:
        return (parts[0].strip("[]") if len(parts) == 3 else None), int(parts[-1])
    except ValueError:
        return None


class ComposeChecker:
    def __init__(self, repo, path, report, validator, default_config=None):
        self.repo = repo
        self.path = path
        self.dir = os.path.dirname(path)
        self.report = report
        self.validator = validator
        self.default_config = default_config  # the image's built-in config, when none is mounted

    def error(self, line, message):
        self.report.error(self.path, line, message)

    def run(self):
        self.report.checked_file(self.path, "compose file")
        try:
            with open(self.path, encoding="utf-8") as f:
                docs = yaml_lines.load_all(f.read())
        except yaml_lines.YamlError as e:
            self.error(e.line, f"YAML: {e}")
            return
        services = docs[0].get("services") if docs and isinstance(docs[0], dict) else None
        for name, service in (services or {}).items():
            if isinstance(service, dict) and self._is_sluice(service):
                self._check_sluice(name, service)

    @staticmethod
    def _is_sluice(service):
        build = service.get("build")
        target = build.get("target") if isinstance(build, dict) else None
        image = str(service.get("image", "")).rsplit("/", 1)[-1].split(":")[0]
        return target == "sluice" or image == "sluice"

    def _config_path(self, service):
        for volume in service.get("volumes") or []:
            if isinstance(volume, str):
                parts = volume.split(":")
                if len(parts) >= 2 and parts[1] == CONFIG_IN_IMAGE:
                    return os.path.normpath(os.path.join(self.dir, parts[0]))
            elif isinstance(volume, dict) and volume.get("target") == CONFIG_IN_IMAGE:
                return os.path.normpath(os.path.join(self.dir, str(volume.get("source"))))
        return self.default_config

    def _check_sluice(self, name, service):
        config_path = self._config_path(service)
        if not config_path or not os.path.isfile(config_path):
            return  # podman-compose fails on a missing bind mount
        self.report.checked_file(config_path, f"sluice config of compose service {name}")
        if not self.validator.validate_file(config_path):
            return
        with open(config_path, encoding="utf-8") as f:
            docs = yaml_lines.load_all(f.read())
        config = SluiceConfig(docs[0] if docs else {})
        rel = os.path.relpath(config_path, self.repo)
        for entry in service.get("ports") or []:
            published = _published(entry)
            if published is None or published[1] != config.admin_port:
                continue
            host_ip, container_port = published
            if config.admin and is_loopback(config.admin[0]):
                self.error(service.line_of("ports"), f"service {name} publishes admin port "
                           f"{container_port}, but {rel} binds it to loopback, which a published "
                           "port never reaches")
            if not host_ip or not is_loopback(host_ip):
                self.error(service.line_of("ports"), f"service {name}: publish the admin port on "
                           f"the host's loopback only (127.0.0.1:{container_port}:"
                           f"{container_port}): it can drain the proxy")
        grace = service.get("stop_grace_period")
        grace_s = DEFAULT_STOP_GRACE_S if grace is None else go_duration(grace)
        if grace_s is None:
            self.error(service.line_of("stop_grace_period"), f"service {name}: "
                       f"stop_grace_period {grace!r} is not a duration")
        elif grace_s <= config.drain_timeout_s + DRAIN_FLUSH_S:
            self.error(service.line_of("stop_grace_period") if grace is not None else service.line,
                       f"service {name}: stop_grace_period {grace_s:g}s must exceed "
                       f"drain_timeout {config.drain_timeout_s:g}s + {DRAIN_FLUSH_S}s of {rel}")


def is_compose_file(path, doc):
    base = os.path.basename(path)
    return base in ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml") or (
        isinstance(doc, dict) and "services" in doc)
