"""Checks on the compose example (docker/compose/compose.yaml): the build targets exist in the
Dockerfile, mounted files exist, health-gated dependencies have a health check, and the sluice
service's config (validated by sluice) agrees with the ports it publishes."""

import os
import posixpath
import re

from . import dockerfile_parser as dp
from . import yaml_lines
from .sluice_config import SluiceConfig, is_ip_literal, is_loopback

TOP_LEVEL = frozenset(["name", "services", "networks", "volumes", "configs", "secrets", "include"])
CONFIG_IN_IMAGE = "/etc/sluice/sluice.yaml"
DEFAULT_STOP_GRACE_S = 10.0
_GO_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|m|s|ms|us|ns)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _go_duration(text):
    text = str(text)
    parts = _GO_DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def _published(entry):
    """(host_ip, host_port, container_port) of a `ports:` entry, or None when unreadable."""
    if isinstance(entry, dict):
        target = entry.get("target")
        return (entry.get("host_ip"), entry.get("published"), target) if isinstance(target,
                                                                                    int) else None
    text = str(entry).split("/")[0]
    parts = text.rsplit(":", 2)
    try:
        if len(parts) == 3:
            return parts[0].strip("[]"), int(parts[1]), int(parts[2])
        if len(parts) == 2:
            return None, int(parts[0]), int(parts[1])
        return None, None, int(parts[0])
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
        self.doc = None

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
        if len(docs) != 1 or not isinstance(docs[0], dict):
            self.error(None, "a compose file is one YAML mapping")
            return
        self.doc = doc = docs[0]
        for key in doc:
            if key == "version":
                self.error(doc.line_of(key), "`version` is obsolete in the Compose specification")
            elif key not in TOP_LEVEL and not str(key).startswith("x-"):
                self.error(doc.line_of(key), f"unknown top-level key {key!r}")
        services = doc.get("services")
        if not isinstance(services, dict) or not services:
            self.error(doc.line, "services: at least one service is required")
            return
        stages = {}
        for name, service in services.items():
            if not isinstance(service, dict):
                self.error(services.line_of(name), f"service {name} must be a mapping")
                continue
            stages[name] = self._check_build(name, service)
        for name, service in services.items():
            if isinstance(service, dict):
                self._check_service(name, service, services, stages)

    def _check_build(self, name, service):
        """The Dockerfile stage a service builds (None if it only pulls an image)."""
        build = service.get("build")
        if build is None:
            if not service.get("image"):
                self.error(service.line, f"service {name}: needs image or build")
            return None
        if isinstance(build, str):
            build = {"context": build}
        context = os.path.normpath(os.path.join(self.dir, str(build.get("context", "."))))
        if not os.path.isdir(context):
            self.error(service.line_of("build"), f"service {name}: build context "
                       f"{build.get('context')} is not a directory")
            return None
        dockerfile = os.path.join(context, str(build.get("dockerfile", "Dockerfile")))
        try:
            with open(dockerfile, encoding="utf-8") as f:
                parsed = dp.parse(f.read())
        except OSError:
            self.error(service.line_of("build"), f"service {name}: no Dockerfile at "
                       f"{os.path.relpath(dockerfile, self.repo)}")
            return None
        except dp.ParseError:
            return None  # the Dockerfile check reports it
        target = build.get("target")
        stage = parsed.stage(str(target).lower()) if target else parsed.stages[-1]
        if stage is None:
            self.error(build.line_of("target") if hasattr(build, "line_of") else service.line,
                       f"service {name}: build target {target!r} is not a stage of "
                       f"{os.path.relpath(dockerfile, self.repo)} "
                       f"({', '.join(s.name for s in parsed.stages if s.name)})")
        return stage

    def _healthy(self, service, stage):
        check = service.get("healthcheck")
        if isinstance(check, dict):
            return not check.get("disable") and check.get("test") not in (["NONE"], "NONE")
        return stage is not None and stage.last("HEALTHCHECK") is not None and (
            stage.last("HEALTHCHECK").args_text.upper() != "NONE")

    def _check_service(self, name, service, services, stages):
        depends = service.get("depends_on") or {}
        if isinstance(depends, list):
            depends = {d: {"condition": "service_started"} for d in depends}
        for dep, spec in depends.items():
            if dep not in services:
                self.error(service.line_of("depends_on"), f"service {name}: depends on unknown "
                           f"service {dep}")
            elif isinstance(spec, dict) and spec.get("condition") == "service_healthy" and (
                    not self._healthy(services[dep], stages.get(dep))):
                self.error(service.line_of("depends_on"), f"service {name} waits for {dep} to be "
                           f"healthy, but {dep} has no health check")
        mounts = {}
        for volume in service.get("volumes") or []:
            if isinstance(volume, str):
                parts = volume.split(":")
                if len(parts) >= 2 and parts[0].startswith((".", "/")):
                    mounts[parts[1]] = parts[0]
            elif isinstance(volume, dict) and volume.get("type") == "bind":
                mounts[volume.get("target")] = volume.get("source")
        for target, source in mounts.items():
            host = os.path.normpath(os.path.join(self.dir, source))
            if not os.path.exists(host):
                self.error(service.line_of("volumes"), f"service {name}: bind mount source "
                           f"{source} does not exist")
        for key in ("command", "entrypoint"):
            value = service.get(key)
            if value is not None and not isinstance(value, str) and not (
                    isinstance(value, list) and all(isinstance(w, str) for w in value)):
                self.error(service.line_of(key), f"service {name}: {key} must be a string or a "
                           "list of strings")
        stage = stages.get(name)
        image = str(service.get("image", ""))
        is_sluice = (stage is not None and stage.name == "sluice") or (
            image.rsplit("/", 1)[-1].split(":")[0] == "sluice")
        if is_sluice:
            self._check_sluice(name, service, services, mounts)

    def _check_sluice(self, name, service, services, mounts):
        source = mounts.get(CONFIG_IN_IMAGE)
        if source is None:
            config_path = self.default_config
        else:
            config_path = os.path.normpath(os.path.join(self.dir, source))
        if not config_path or not os.path.isfile(config_path):
            return
        self.report.checked_file(config_path, f"sluice config of compose service {name}")
        if not self.validator.validate_file(config_path):
            return
        with open(config_path, encoding="utf-8") as f:
            docs = yaml_lines.load_all(f.read())
        config = SluiceConfig(docs[0] if docs else {})
        rel = os.path.relpath(config_path, self.repo)
        for entry in service.get("ports") or []:
            published = _published(entry)
            if published is None:
                self.error(service.line_of("ports"), f"service {name}: cannot read port {entry!r}")
                continue
            host_ip, _, container_port = published
            if container_port == config.admin_port:
                if config.admin and is_loopback(config.admin[0]):
                    self.error(service.line_of("ports"), f"service {name} publishes admin port "
                               f"{container_port}, but {rel} binds it to loopback, which Docker's "
                               "port forwarding never reaches")
                if not host_ip or not is_loopback(host_ip):
                    self.error(service.line_of("ports"), f"service {name}: publish the admin port "
                               f"on the host's loopback only (127.0.0.1:{container_port}:"
                               f"{container_port}): it can drain the proxy")
            elif container_port not in config.listener_ports:
                self.error(service.line_of("ports"), f"service {name} publishes port "
                           f"{container_port}, which is no listener in {rel}")
        for host, port in config.endpoints:
            if not is_ip_literal(host) and host != "localhost" and host not in services:
                self.error(service.line, f"{rel}: cluster endpoint {host}:{port} is no service "
                           "of this compose file")
        grace = service.get("stop_grace_period")
        grace_s = DEFAULT_STOP_GRACE_S if grace is None else _go_duration(grace)
        if grace_s is None:
            self.error(service.line_of("stop_grace_period"), f"service {name}: "
                       f"stop_grace_period {grace!r} is not a duration")
        elif grace_s <= config.drain_timeout_s + 1:
            self.error(service.line_of("stop_grace_period") if grace is not None else service.line,
                       f"service {name}: stop_grace_period {grace_s:g}s must exceed "
                       f"drain_timeout {config.drain_timeout_s:g}s + 1s of {rel}")


def is_compose_file(path, doc):
    base = posixpath.basename(path)
    return base in ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml") or (
        isinstance(doc, dict) and "services" in doc)
