"""Checks on the Kubernetes manifests (docker/kubernetes/*.yaml): the required fields of each
object, the references between them, and what the sluice sidecar needs from its pod (probe on
the admin port of the config in the ConfigMap, a grace period that covers the drain, ...)."""

import os
import posixpath
import re

from . import yaml_lines
from .sluice_config import SluiceConfig, is_loopback

API_VERSIONS = {
    "ConfigMap": "v1",
    "Service": "v1",
    "Pod": "v1",
    "Deployment": "apps/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
}
DEFAULT_GRACE_S = 30
DEFAULT_CONFIG = "/etc/sluice/sluice.yaml"  # the image's CMD (docker/Dockerfile)
# After drain_timeout, sluice gives terminated streams one more second to flush (server.cc).
DRAIN_FLUSH_S = 1
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_PROBE_HANDLERS = ("httpGet", "tcpSocket", "exec", "grpc")


def _image_name(image):
    """'registry/x/sluice:0.1.0' -> 'sluice'."""
    return image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]


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


class _Pod:
    """A pod template: where it came from and what it declares."""

    def __init__(self, owner, spec, labels, line):
        self.owner = owner
        self.spec = spec if isinstance(spec, dict) else {}
        self.labels = labels if isinstance(labels, dict) else {}
        self.line = line
        # Set by the sidecar check: the sluice container and its parsed config.
        self.sidecar = None
        self.config = None

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
            if not docs:
                self.error(path, None, "no Kubernetes object in this file")
            for doc in docs:
                if self._check_object(path, doc):
                    self.objects.append((path, text, doc))
        seen = {}
        for path, _, doc in self.objects:
            key = (doc["kind"], doc["metadata"]["name"])
            if key in seen:
                self.error(path, doc.line, f"{key[0]} {key[1]} is also defined in {seen[key]}")
            seen[key] = self.report.where(path)
        pods = self._pods()
        for pod in pods:
            self._check_pod(pod)
        for path, _, doc in self.objects:
            if doc["kind"] == "Service":
                self._check_service(path, doc, pods)
            elif doc["kind"] == "NetworkPolicy":
                self._check_network_policy(path, doc, pods)

    # --- every object ----------------------------------------------------------------------

    def _check_object(self, path, doc):
        if not isinstance(doc, dict):
            self.error(path, None, "a Kubernetes object must be a mapping")
            return False
        ok = True
        for field in ("apiVersion", "kind"):
            if not isinstance(doc.get(field), str) or not doc.get(field):
                self.error(path, doc.line, f"missing {field}")
                ok = False
        meta = doc.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str) or not name:
            self.error(path, doc.line, "missing metadata.name")
            ok = False
        elif not _DNS_SUBDOMAIN.match(name) or len(name) > 253:
            self.error(path, meta.line_of("name"), f"metadata.name {name!r} is not a DNS name")
        if not ok:
            return False
        kind = doc["kind"]
        if kind not in API_VERSIONS:
            self.error(path, doc.line, f"kind {kind}: not one this lint knows how to check "
                       f"({', '.join(sorted(API_VERSIONS))})")
            return False
        if doc["apiVersion"] != API_VERSIONS[kind]:
            self.error(path, doc.line_of("apiVersion"),
                       f"{kind} wants apiVersion {API_VERSIONS[kind]}, got {doc['apiVersion']}")
        if kind == "Service" and (not _DNS_LABEL.match(name) or len(name) > 63 or
                                  name[0].isdigit()):
            self.error(path, meta.line_of("name"), f"Service name {name!r} must be a DNS label")
        if kind == "ConfigMap":
            data = doc.get("data")
            if data is not None and (not isinstance(data, dict) or
                                     not all(isinstance(v, str) for v in data.values())):
                self.error(path, doc.line_of("data"), "ConfigMap data must map keys to strings")
        return True

    def _find(self, kind, name):
        for path, text, doc in self.objects:
            if doc["kind"] == kind and doc["metadata"]["name"] == name:
                return path, text, doc
        return None

    def _pods(self):
        pods = []
        for path, _, doc in self.objects:
            spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
            where = f"{doc['kind']} {doc['metadata']['name']}"
            if doc["kind"] == "Pod":
                pods.append(_Pod((path, where), spec, doc["metadata"].get("labels"), doc.line))
            elif doc["kind"] == "Deployment":
                template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
                meta = template.get("metadata")
                meta = meta if isinstance(meta, dict) else {}
                labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
                selector = spec.get("selector") if isinstance(spec.get("selector"), dict) else {}
                match = selector.get("matchLabels")
                if not isinstance(match, dict) or not match:
                    self.error(path, spec.line if spec else doc.line,
                               f"{where}: spec.selector.matchLabels is required")
                elif any(labels.get(k) != v for k, v in match.items()):
                    self.error(path, selector.line,
                               f"{where}: spec.selector does not match the pod template's labels")
                if not isinstance(template.get("spec"), dict):
                    self.error(path, doc.line, f"{where}: spec.template.spec is required")
                    continue
                pods.append(_Pod((path, where), template["spec"], labels, template["spec"].line))
        return pods

    # --- pods and containers ---------------------------------------------------------------

    def _check_pod(self, pod):
        path, where = pod.owner
        containers = pod.containers()
        if not containers:
            self.error(path, pod.line, f"{where}: at least one container is required")
            return
        volumes = {v.get("name"): v for v in pod.spec.get("volumes") or [] if isinstance(v, dict)}
        for name, volume in volumes.items():
            cm = volume.get("configMap")
            if isinstance(cm, dict) and not cm.get("optional") and not self._find("ConfigMap",
                                                                                    cm.get("name")):
                self.error(path, volume.line, f"{where}: volume {name} uses ConfigMap "
                           f"{cm.get('name')}, which no manifest here defines")
        names, port_names, port_numbers = set(), set(), set()
        for c in containers:
            name = c.get("name")
            if not isinstance(name, str) or not _DNS_LABEL.match(name):
                self.error(path, c.line, f"{where}: container name {name!r} is missing or not a "
                           "DNS label")
            elif name in names:
                self.error(path, c.line, f"{where}: two containers are named {name}")
            names.add(name)
            image = c.get("image")
            if not isinstance(image, str) or not image.strip():
                self.error(path, c.line, f"{where}: container {name} has no image")
            elif (":" not in image.rsplit("/", 1)[-1] and "@" not in image or
                  image.endswith(":latest")):
                self.error(path, c.line_of("image"), f"{where}: container {name}: pin the image "
                           f"to a version, not {image!r}")
            for p in c.get("ports") or []:
                if not isinstance(p, dict):
                    continue
                number, pname = p.get("containerPort"), p.get("name")
                if not isinstance(number, int) or not 1 <= number <= 65535:
                    self.error(path, p.line, f"{where}: container {name}: containerPort "
                               f"{number!r} is not a port number")
                elif number in port_numbers:
                    self.error(path, p.line, f"{where}: port {number} is declared twice")
                port_numbers.add(number)
                if pname is not None:
                    if (not isinstance(pname, str) or not _PORT_NAME.match(pname) or len(pname) > 15
                            or not re.search("[a-z]", pname)):
                        self.error(path, p.line, f"{where}: port name {pname!r} is not a valid "
                                   "IANA service name (15 chars at most)")
                    elif pname in port_names:
                        self.error(path, p.line, f"{where}: port name {pname} is used twice")
                    port_names.add(pname)
            for mount in c.get("volumeMounts") or []:
                if isinstance(mount, dict) and mount.get("name") not in volumes:
                    self.error(path, mount.line, f"{where}: container {name} mounts volume "
                               f"{mount.get('name')}, which the pod does not define")
            for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
                if probe_name in c:
                    self._check_handler(pod, c, c[probe_name], f"{name}.{probe_name}")
            lifecycle = c.get("lifecycle") if isinstance(c.get("lifecycle"), dict) else {}
            for hook in ("preStop", "postStart"):
                if hook in lifecycle:
                    self._check_handler(pod, c, lifecycle[hook], f"{name}.lifecycle.{hook}")
        grace = pod.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_S)
        if not isinstance(grace, int) or grace < 0:
            self.error(path, pod.line, f"{where}: terminationGracePeriodSeconds must be a whole "
                       "number of seconds")
            return
        sidecars = [c for c in containers if _image_name(str(c.get("image", ""))) == "sluice"]
        for c in sidecars:
            self._check_sluice(pod, c, grace, [o for o in containers if o not in sidecars])

    def _check_handler(self, pod, container, handler, what):
        path, where = pod.owner
        if not isinstance(handler, dict):
            self.error(path, container.line, f"{where}: {what} must be a mapping")
            return
        kinds = [k for k in _PROBE_HANDLERS + ("sleep",) if k in handler]
        if len(kinds) != 1:
            self.error(path, handler.line, f"{where}: {what} needs exactly one of "
                       f"{', '.join(_PROBE_HANDLERS)}")
            return
        body = handler[kinds[0]]
        if kinds[0] == "exec":
            command = body.get("command") if isinstance(body, dict) else None
            if not isinstance(command, list) or not command or not all(isinstance(w, str)
                                                                       for w in command):
                self.error(path, handler.line, f"{where}: {what}.exec.command must be a list of "
                           "strings")
        elif kinds[0] in ("httpGet", "tcpSocket", "grpc"):
            port = body.get("port") if isinstance(body, dict) else None
            if pod.resolve_port(port, container)[0] is None and not isinstance(port, int):
                self.error(path, handler.line, f"{where}: {what}: port {port!r} is not a port of "
                           f"container {container.get('name')}")
            if kinds[0] == "httpGet" and not str(body.get("path", "/")).startswith("/"):
                self.error(path, handler.line, f"{where}: {what}: path must start with /")

    # --- the sluice sidecar ----------------------------------------------------------------

    def _config_of(self, pod, container):
        """(ConfigMap path, text, doc, key) holding the config this container runs with."""
        path, where = pod.owner
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
            volume = volumes.get(mount.get("name"), {})
            cm = volume.get("configMap") if isinstance(volume, dict) else None
            if key is None or not isinstance(cm, dict):
                continue
            for item in cm.get("items") or []:
                if isinstance(item, dict) and item.get("path") == key:
                    key = item.get("key")
            found = self._find("ConfigMap", cm.get("name"))
            if found is None:
                return None  # reported with the volumes
            cm_path, cm_text, cm_doc = found
            data = cm_doc.get("data") if isinstance(cm_doc.get("data"), dict) else {}
            if key not in data:
                self.error(cm_path, cm_doc.line, f"ConfigMap {cm.get('name')} has no key {key!r}, "
                           f"which {where} container {container.get('name')} reads as {config}")
                return None
            return cm_path, cm_text, cm_doc, key
        self.error(path, container.line, f"{where}: container {container.get('name')} runs with "
                   f"{config}, but no ConfigMap is mounted there")
        return None

    def _check_sluice(self, pod, c, grace, others):
        path, where = pod.owner
        name = c.get("name")
        pod.sidecar = c
        found = self._config_of(pod, c)
        if found is None:
            return
        cm_path, cm_text, cm_doc, key = found
        data = cm_doc["data"]
        key_line = data.line_of(key)
        indent = yaml_lines.block_indent(cm_text, key_line)
        self.report.checked_file(cm_path, f"sluice config in ConfigMap key {key}")
        if not self.validator.validate_text(data[key], cm_path, key_line, indent):
            return
        try:
            docs = yaml_lines.load_all(data[key])
        except yaml_lines.YamlError as e:
            self.error(cm_path, key_line + (e.line or 0), f"embedded config: {e}")
            return
        config = SluiceConfig(docs[0] if docs else {})
        pod.config = config
        for problem in config.problems:
            self.error(cm_path, key_line, problem)
        if not config.admin:
            return
        admin_host, admin_port = config.admin
        here = f"{where}: container {name}"
        declared = {p.get("containerPort") for p in c.get("ports") or [] if isinstance(p, dict)}
        for port in [admin_port] + config.listener_ports:
            if port not in declared:
                self.error(path, c.line, f"{here}: port {port} of the sluice config is not in "
                           "ports")
        # The kubelet probes the pod IP: /ready on the admin port, bound beyond loopback.
        probe = c.get("readinessProbe")
        http = probe.get("httpGet") if isinstance(probe, dict) else None
        if not isinstance(http, dict):
            self.error(path, c.line, f"{here}: needs a readinessProbe with httpGet /ready on the "
                       "admin port")
        else:
            if http.get("path") != "/ready":
                self.error(path, http.line, f"{here}: readinessProbe path must be /ready, got "
                           f"{http.get('path')!r}")
            _, port = pod.resolve_port(http.get("port"), c)
            port = http.get("port") if port is None else port
            if port != admin_port:
                self.error(path, http.line, f"{here}: readinessProbe port {http.get('port')} is "
                           f"{port}, but the config's admin server listens on {admin_port}")
            if is_loopback(admin_host):
                self.error(cm_path, key_line, f"admin.address {admin_host}:{admin_port} is "
                           "loopback: the kubelet's probe to the pod IP can never reach it")
        live = c.get("livenessProbe")
        live_http = live.get("httpGet") if isinstance(live, dict) else None
        if isinstance(live_http, dict) and live_http.get("path") == "/ready":
            self.error(path, live_http.line, f"{here}: livenessProbe on /ready restarts sluice "
                       "while it drains (503); probe another admin path")
        for env in c.get("env") or []:
            if (isinstance(env, dict) and env.get("name") == "SLUICE_ADMIN_PORT" and
                    str(env.get("value")) != str(admin_port)):
                self.error(path, env.line, f"{here}: SLUICE_ADMIN_PORT={env.get('value')} but the "
                           f"admin server listens on {admin_port}")
        for host, port in config.endpoints:
            if not is_loopback(host):
                self.error(cm_path, key_line, f"cluster endpoint {host}:{port}: a sidecar reaches "
                           "its app over the pod's loopback")
        self._check_shutdown(pod, c, grace, config, others)

    def _check_shutdown(self, pod, c, grace, config, others):
        path, where = pod.owner
        here = f"{where}: container {c.get('name')}"
        lifecycle = c.get("lifecycle") if isinstance(c.get("lifecycle"), dict) else {}
        pre_stop = lifecycle.get("preStop")
        command = pre_stop.get("exec", {}).get("command") if isinstance(pre_stop, dict) else None
        if not isinstance(command, list):
            self.error(path, c.line, f"{here}: needs a preStop exec hook that lets sluice drain "
                       "(e.g. /usr/local/bin/sluice-admin prestop 5)")
            return
        delay = 0
        if posixpath.basename(command[0]) == "sluice-admin" and command[1:2] == ["prestop"]:
            if len(command) != 3 or not command[2].isdigit():
                self.error(path, pre_stop.line, f"{here}: preStop: sluice-admin prestop SECONDS")
                return
            delay = int(command[2])
        elif _sleep_seconds(command) is not None:
            delay = _sleep_seconds(command)
        else:
            self.error(path, pre_stop.line, f"{here}: preStop should run sluice-admin prestop N "
                       "(keep serving N seconds, then POST /drain)")
        drain = config.drain_timeout_s
        needed = delay + drain + DRAIN_FLUSH_S
        if grace <= drain or grace <= needed:
            self.error(path, pod.line, f"{where}: terminationGracePeriodSeconds {grace} must "
                       f"exceed the preStop delay {delay}s + drain_timeout {drain:g}s + "
                       f"{DRAIN_FLUSH_S}s")
        for other in others:
            lifecycle = other.get("lifecycle") if isinstance(other.get("lifecycle"), dict) else {}
            other_hook = lifecycle.get("preStop")
            sleep = None
            if isinstance(other_hook, dict):
                if isinstance(other_hook.get("exec"), dict):
                    sleep = _sleep_seconds(other_hook["exec"].get("command"))
                elif isinstance(other_hook.get("sleep"), dict):
                    sleep = other_hook["sleep"].get("seconds")
            if not isinstance(sleep, int) or sleep < needed:
                self.error(path, other.line, f"{where}: container {other.get('name')} gets SIGTERM "
                           f"while sluice still drains: give it a preStop sleep of at least "
                           f"{needed:g}s (got {sleep})")
            elif sleep >= grace:
                self.error(path, other.line, f"{where}: container {other.get('name')}'s preStop "
                           f"sleep {sleep}s uses the whole grace period {grace}s")

    # --- Service and NetworkPolicy ---------------------------------------------------------

    def _selected(self, selector, pods):
        if not isinstance(selector, dict) or not selector:
            return []
        return [p for p in pods if all(p.labels.get(k) == v for k, v in selector.items())]

    @staticmethod
    def _sluice_ports(pod):
        """(sluice container, listener ports, admin port) of the pod, as its check found them."""
        if pod.config is None:
            return pod.sidecar, set(), None
        return pod.sidecar, set(pod.config.listener_ports), pod.config.admin_port

    def _check_service(self, path, doc, pods):
        name = doc["metadata"]["name"]
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        selected = self._selected(spec.get("selector"), pods)
        if not selected:
            self.error(path, spec.line if spec else doc.line,
                       f"Service {name}: spec.selector matches no pod template here")
            return
        ports = spec.get("ports")
        if not isinstance(ports, list) or not ports:
            self.error(path, doc.line, f"Service {name}: spec.ports is required")
            return
        for pod in selected:
            sidecar, listeners, admin = self._sluice_ports(pod)
            for p in ports:
                if not isinstance(p, dict) or not isinstance(p.get("port"), int):
                    self.error(path, getattr(p, "line", doc.line), f"Service {name}: each port "
                               "needs a numeric port")
                    continue
                target = p.get("targetPort", p.get("port"))
                container, number = pod.resolve_port(target)
                if container is None:
                    self.error(path, p.line, f"Service {name}: targetPort {target} is no "
                               f"container port of {pod.owner[1]}")
                elif sidecar is not None and container is not sidecar:
                    self.error(path, p.line, f"Service {name}: targetPort {target} goes to "
                               f"container {container.get('name')}, bypassing sluice")
                elif number == admin:
                    self.error(path, p.line, f"Service {name}: exposes sluice's admin port "
                               f"{admin}, which can drain the proxy")
                elif pod.config is not None and number not in listeners:
                    self.error(path, p.line, f"Service {name}: targetPort {target} ({number}) is "
                               "not a sluice listener")

    def _check_network_policy(self, path, doc, pods):
        name = doc["metadata"]["name"]
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        selector = spec.get("podSelector") if isinstance(spec.get("podSelector"), dict) else {}
        selected = self._selected(selector.get("matchLabels"), pods)
        if not selected:
            self.error(path, spec.line if spec else doc.line,
                       f"NetworkPolicy {name}: podSelector matches no pod template here")
            return
        for rule in spec.get("ingress") or []:
            if not isinstance(rule, dict):
                continue
            for pod in selected:
                _, _, admin = self._sluice_ports(pod)
                if not rule.get("ports"):
                    self.error(path, rule.line, f"NetworkPolicy {name}: an ingress rule without "
                               "ports opens every port, the admin port included")
                    continue
                for p in rule["ports"]:
                    if not isinstance(p, dict):
                        continue
                    _, number = pod.resolve_port(p.get("port"))
                    number = p.get("port") if number is None else number
                    if admin is not None and number == admin:
                        self.error(path, p.line, f"NetworkPolicy {name}: opens sluice's admin "
                                   f"port {admin} to other pods")


def manifest_paths(directory):
    return sorted(os.path.join(directory, f) for f in os.listdir(directory)
                  if f.endswith((".yaml", ".yml")))
