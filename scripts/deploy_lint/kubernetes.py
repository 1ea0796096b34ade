"""What the Kubernetes example must agree on with the sluice config in its ConfigMap, which no
schema knows: the probes, hooks and Service reach the config's admin port (or stay off it), and
the grace period covers the preStop delay plus drain_timeout.

Everything generic is left to standard tools: yamllint for the YAML, and `podman kube play` in
scripts/container-test.sh for the objects themselves (it also runs the shutdown sequence for real).
"""

import posixpath
import re

from . import yaml_lines
from .sluice_config import SluiceConfig, is_loopback, parse_address, parse_duration

DEFAULT_GRACE_S = 30
DEFAULT_CONFIG = "/etc/sluice/sluice.yaml"  # the image's CMD (docker/Dockerfile)
DEFAULT_ADMIN_CLIENT_ADDRESS = "127.0.0.1:9901"  # `sluice admin` without --address (src/main.cc)
# After drain_timeout, sluice gives terminated streams one more second to flush (server.cc).
DRAIN_FLUSH_S = 1


def _image_name(image):
    """'registry/x/sluice:0.1.0' -> 'sluice'."""
    return image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]


def _dict(value):
    return value if isinstance(value, dict) else {}


def _sleep_seconds(command):
    """How long an exec hook sleeps: ['sleep', 'N'], or a shell command with `sleep N`."""
    if not isinstance(command, list) or not command:
        return None
    if posixpath.basename(command[0]) == "sleep" and len(command) == 2:
        text = "sleep " + command[1]
    elif posixpath.basename(command[0]) in ("sh", "bash") and "-c" in command:
        text = command[-1]
    else:
        return None
    found = re.findall(r"\bsleep\s+([0-9]+)s?\b", text)
    return sum(int(n) for n in found) if found else None


def admin_command(command):
    """(method, path, options) of a `sluice admin METHOD PATH [--opt value]...` exec command, or
    None when the command is something else."""
    if not isinstance(command, list) or len(command) < 4:
        return None
    if posixpath.basename(str(command[0])) != "sluice" or command[1] != "admin":
        return None
    words = [str(w) for w in command[2:]]
    positional, options = [], {}
    k = 0
    while k < len(words):
        word = words[k]
        if word.startswith("--"):
            name, sep, value = word[2:].partition("=")
            if not sep:
                value = words[k + 1] if k + 1 < len(words) else ""
                k += 1
            options[name] = value
        else:
            positional.append(word)
        k += 1
    if len(positional) != 2:
        return None
    return positional[0].upper(), positional[1], options


def _exec_command(handler):
    body = _dict(handler).get("exec")
    return _dict(body).get("command")


class _Pod:
    """A pod template (Pod or Deployment): where it came from and what it declares."""

    def __init__(self, path, where, spec, labels, line):
        self.path = path
        self.where = where
        self.spec = _dict(spec)
        self.labels = _dict(labels)
        self.line = line
        self.sidecar = None  # the sluice container
        self.config = None  # SluiceConfig of the config it runs with

    def containers(self):
        items = self.spec.get("containers")
        return [c for c in items if isinstance(c, dict)] if isinstance(items, list) else []

    def resolve_port(self, port, container=None):
        """(container, containerPort) for a port given by number or name, or (None, None)."""
        for c in [container] if container else self.containers():
            for p in c.get("ports") or []:
                if isinstance(p, dict) and port in (p.get("name"), p.get("containerPort")):
                    return c, p.get("containerPort")
        return None, None


class KubernetesChecker:
    def __init__(self, paths, report, validator):
        self.paths = paths
        self.report = report
        self.validator = validator
        self.objects = []  # (path, text, doc)

    def error(self, path, line, message):
        self.report.error(path, line, message)

    def run(self):
        for path in self.paths:
            self.report.checked_file(path, "Kubernetes manifest")
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                docs = yaml_lines.load_all(text)
            except yaml_lines.YamlError as e:
                self.error(path, e.line, f"YAML: {e}")
                continue
            self.objects += [(path, text, d) for d in docs if isinstance(d, dict)]
        pods = self._pods()
        for pod in pods:
            sidecars = [c for c in pod.containers()
                        if _image_name(str(c.get("image", ""))) == "sluice"]
            for c in sidecars:
                self._check_sidecar(pod, c, [o for o in pod.containers() if o not in sidecars])
        for path, _, doc in self.objects:
            if doc.get("kind") == "Service":
                self._check_service(path, doc, pods)
            elif doc.get("kind") == "NetworkPolicy":
                self._check_network_policy(path, doc, pods)

    def _find(self, kind, name):
        for path, text, doc in self.objects:
            if doc.get("kind") == kind and _dict(doc.get("metadata")).get("name") == name:
                return path, text, doc
        return None

    def _pods(self):
        pods = []
        for path, _, doc in self.objects:
            name = _dict(doc.get("metadata")).get("name")
            where = f"{doc.get('kind')} {name}"
            if doc.get("kind") == "Pod":
                pods.append(_Pod(path, where, doc.get("spec"),
                                 _dict(doc.get("metadata")).get("labels"), doc.line))
            elif doc.get("kind") == "Deployment":
                template = _dict(_dict(doc.get("spec")).get("template"))
                spec = template.get("spec")
                if isinstance(spec, dict):
                    pods.append(_Pod(path, where, spec,
                                     _dict(template.get("metadata")).get("labels"), spec.line))
        return pods

    # --- the sluice sidecar ----------------------------------------------------------------

    def _config_of(self, pod, container):
        """(ConfigMap path, text, doc, key) holding the config this container runs with."""
        args = container.get("args") or []
        config = DEFAULT_CONFIG
        for k, word in enumerate(args):
            if word in ("--config", "-c") and k + 1 < len(args):
                config = args[k + 1]
        volumes = {v.get("name"): v for v in pod.spec.get("volumes") or [] if isinstance(v, dict)}
        for mount in container.get("volumeMounts") or []:
            if not isinstance(mount, dict):
                continue
            mount_path = str(mount.get("mountPath", "")).rstrip("/")
            if mount.get("subPath"):
                key = mount["subPath"] if mount_path == config else None
            else:
                inside = config.startswith(mount_path + "/")
                key = posixpath.relpath(config, mount_path) if inside else None
            cm = _dict(volumes.get(mount.get("name"))).get("configMap")
            if key is None or not isinstance(cm, dict):
                continue
            for item in cm.get("items") or []:
                if isinstance(item, dict) and item.get("path") == key:
                    key = item.get("key")
            found = self._find("ConfigMap", cm.get("name"))
            if found is None:
                return None  # `podman kube play` reports the missing ConfigMap
            cm_path, cm_text, cm_doc = found
            if key not in _dict(cm_doc.get("data")):
                return None
            return cm_path, cm_text, cm_doc, key
        return None

    def _check_sidecar(self, pod, c, others):
        here = f"{pod.where}: container {c.get('name')}"
        pod.sidecar = c
        found = self._config_of(pod, c)
        if found is None:
            self.error(pod.path, c.line, f"{here}: no ConfigMap key holds the config it runs with")
            return
        cm_path, cm_text, cm_doc, key = found
        data = cm_doc["data"]
        key_line = data.line_of(key)
        indent = yaml_lines.block_indent(cm_text, key_line)
        self.report.checked_file(cm_path, f"sluice config in ConfigMap key {key}")
        if not self.validator.validate_text(data[key], cm_path, key_line, indent):
            return
        config = SluiceConfig(yaml_lines.load_all(data[key])[0])
        pod.config = config
        if not config.admin:
            return
        admin_host, admin_port = config.admin

        # The kubelet probes the pod IP: /ready on the admin port, bound beyond loopback.
        http = _dict(c.get("readinessProbe")).get("httpGet")
        if not isinstance(http, dict):
            self.error(pod.path, c.line, f"{here}: needs a readinessProbe with httpGet /ready on "
                       "the admin port")
        else:
            if http.get("path") != "/ready":
                self.error(pod.path, http.line, f"{here}: readinessProbe path must be /ready, got "
                           f"{http.get('path')!r}")
            _, port = pod.resolve_port(http.get("port"), c)
            port = http.get("port") if port is None else port
            if port != admin_port:
                self.error(pod.path, http.line, f"{here}: readinessProbe port {http.get('port')} "
                           f"is {port}, but the config's admin server listens on {admin_port}")
            if is_loopback(admin_host):
                self.error(cm_path, key_line, f"admin.address {admin_host}:{admin_port} is "
                           "loopback: the kubelet's probe to the pod IP can never reach it")
        live = _dict(_dict(c.get("livenessProbe")).get("httpGet"))
        if live.get("path") == "/ready":
            self.error(pod.path, live.line, f"{here}: livenessProbe on /ready restarts sluice "
                       "while it drains (503); probe another admin path")

        # Exec hooks and probes that run `sluice admin` inside the container reach it on loopback.
        lifecycle = _dict(c.get("lifecycle"))
        handlers = [(f"lifecycle.{hook}", lifecycle.get(hook)) for hook in ("preStop", "postStart")]
        handlers += [(p, c.get(p)) for p in ("readinessProbe", "livenessProbe", "startupProbe")]
        for what, handler in handlers:
            parsed = admin_command(_exec_command(handler))
            if parsed is None:
                continue
            address = parse_address(parsed[2].get("address", DEFAULT_ADMIN_CLIENT_ADDRESS))
            if address is None or address[1] != admin_port:
                self.error(pod.path, handler.line, f"{here}: {what} runs `sluice admin` against "
                           f"{parsed[2].get('address', DEFAULT_ADMIN_CLIENT_ADDRESS)}, but the "
                           f"config's admin server listens on port {admin_port}")
        self._check_shutdown(pod, c, config, others)

    def _check_shutdown(self, pod, c, config, others):
        here = f"{pod.where}: container {c.get('name')}"
        grace = pod.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_S)
        if not isinstance(grace, int):
            return  # `podman kube play` rejects it
        pre_stop = _dict(c.get("lifecycle")).get("preStop")
        parsed = admin_command(_exec_command(pre_stop))
        if parsed is None or parsed[:2] != ("POST", "/drain"):
            self.error(pod.path, c.line, f"{here}: needs a preStop hook that drains sluice: "
                       "sluice admin POST /drain --delay SECONDS")
            return
        delay = parse_duration(parsed[2].get("delay", "0s"))
        if delay is None:
            self.error(pod.path, pre_stop.line, f"{here}: preStop --delay "
                       f"{parsed[2].get('delay')!r} is not a duration")
            return
        drain = config.drain_timeout_s
        needed = delay + drain + DRAIN_FLUSH_S
        if grace <= needed:
            self.error(pod.path, pod.line, f"{pod.where}: terminationGracePeriodSeconds {grace} "
                       f"must exceed the preStop delay {delay:g}s + drain_timeout {drain:g}s + "
                       f"{DRAIN_FLUSH_S}s")
        for other in others:
            hook = _dict(_dict(other.get("lifecycle")).get("preStop"))
            sleep = _sleep_seconds(_exec_command(hook))
            if sleep is None and isinstance(hook.get("sleep"), dict):
                sleep = hook["sleep"].get("seconds")
            if not isinstance(sleep, int) or sleep < needed:
                self.error(pod.path, other.line, f"{pod.where}: container {other.get('name')} "
                           "gets SIGTERM while sluice still drains: give it a preStop sleep of at "
                           f"least {needed:g}s (got {sleep})")
            elif sleep >= grace:
                self.error(pod.path, other.line, f"{pod.where}: container {other.get('name')}'s "
                           f"preStop sleep {sleep}s uses the whole grace period {grace}s")

    # --- Service and NetworkPolicy: never the admin port -----------------------------------

    def _selected(self, selector, pods):
        if not isinstance(selector, dict) or not selector:
            return []
        return [p for p in pods if all(p.labels.get(k) == v for k, v in selector.items())]

    def _check_service(self, path, doc, pods):
        name = _dict(doc.get("metadata")).get("name")
        spec = _dict(doc.get("spec"))
        for pod in self._selected(spec.get("selector"), pods):
            if pod.config is None:
                continue
            for p in spec.get("ports") or []:
                if not isinstance(p, dict):
                    continue
                target = p.get("targetPort", p.get("port"))
                container, number = pod.resolve_port(target)
                if container is not None and container is not pod.sidecar:
                    self.error(path, p.line, f"Service {name}: targetPort {target} goes to "
                               f"container {container.get('name')}, bypassing sluice")
                elif number == pod.config.admin_port or target == pod.config.admin_port:
                    self.error(path, p.line, f"Service {name}: exposes sluice's admin port "
                               f"{pod.config.admin_port}, which can drain the proxy")

    def _check_network_policy(self, path, doc, pods):
        name = _dict(doc.get("metadata")).get("name")
        spec = _dict(doc.get("spec"))
        selected = self._selected(_dict(spec.get("podSelector")).get("matchLabels"), pods)
        for rule in spec.get("ingress") or []:
            if not isinstance(rule, dict):
                continue
            for pod in selected:
                if pod.config is None:
                    continue
                if not rule.get("ports"):
                    self.error(path, rule.line, f"NetworkPolicy {name}: an ingress rule without "
                               "ports opens every port, the admin port included")
                    continue
                for p in rule["ports"]:
                    if not isinstance(p, dict):
                        continue
                    _, number = pod.resolve_port(p.get("port"))
                    number = p.get("port") if number is None else number
                    if number == pod.config.admin_port:
                        self.error(path, p.line, f"NetworkPolicy {name}: opens sluice's admin "
                                   f"port {number} to other pods")
