"""docker/kubernetes/ played with `podman kube play`, and the kubelet's duties podman 4.3 leaves
out done here, from the manifest: readiness probes, and pod termination (each container's
preStop hook, then its SIGTERM, all inside terminationGracePeriodSeconds, SIGKILL after).
podman's own `kube down` stops every container at once, with no hooks; run alone it would test
nothing the manifest promises. It runs last, to remove the pod.

The manifests are played as shipped except for what a one-node engine needs: one replica, the
containers' ports published on 127.0.0.1 (hostIP/hostPort) at ports free on this machine, and,
where a pod names a Service (podman has no Services and no cluster DNS), a hostAliases entry
that gives the Service's name the IP of the pod behind it.
"""

import copy
import http.client
import json
import math
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import yaml


def fetch(method, url, timeout=3):
    """(status, body) of one HTTP request; status 0 when nothing answered (or not in HTTP)."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, res.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (OSError, urllib.error.URLError, http.client.HTTPException):
        return 0, ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Termination:
    """What happened to one container during pod termination (monotonic seconds)."""

    def __init__(self, name):
        self.name = name
        self.hook = None  # the preStop command, or None
        self.hook_exit = None
        self.hook_output = ""
        self.sigterm_at = None
        self.exited_at = None
        self.exit_code = None
        self.killed = False  # still running at the end of the grace period


class KubePod:
    """One Deployment played as one pod. configmap_path: the ConfigMap file its volumes read
    (None: none); host_aliases: [{ip, hostnames}] added to the played copy."""

    def __init__(self, podman, configmap_path, deployment_path, workdir, log, host_aliases=None):
        self.podman = podman
        self.log = log
        self.configmap_path = configmap_path
        with open(deployment_path, encoding="utf-8") as f:
            self.deployment = yaml.safe_load(f)
        self.spec = self.deployment["spec"]["template"]["spec"]
        self.grace_s = self.spec.get("terminationGracePeriodSeconds", 30)
        self.host_aliases = host_aliases or []
        self.published = {}  # (container, containerPort) -> host port
        self.played_path = f"{workdir}/{self.deployment['metadata']['name']}.played.yaml"
        self.pod_name = None

    def container(self, name):
        for c in self.spec["containers"]:
            if c["name"] == name:
                return c
        raise KeyError(name)

    def runtime_name(self, name):
        return f"{self.pod_name}-{name}"

    def port_number(self, container, port):
        """containerPort for a port given by name or number."""
        for p in container.get("ports") or []:
            if port in (p.get("name"), p.get("containerPort")):
                return p["containerPort"]
        return port if isinstance(port, int) else None

    # --- play and remove ---------------------------------------------------------------------

    def play(self):
        played = copy.deepcopy(self.deployment)
        played["spec"]["replicas"] = 1
        if self.host_aliases:
            played["spec"]["template"]["spec"]["hostAliases"] = self.host_aliases
        for c in played["spec"]["template"]["spec"]["containers"]:
            for p in c.get("ports") or []:
                host_port = free_port()
                p["hostIP"] = "127.0.0.1"
                p["hostPort"] = host_port
                self.published[(c["name"], p["containerPort"])] = host_port
        with open(self.played_path, "w", encoding="utf-8") as f:
            yaml.safe_dump(played, f, sort_keys=False)
        before = self._pods()
        args = ["kube", "play"]
        if self.configmap_path:
            args += ["--configmap", self.configmap_path]
        out = self.podman.out(*args, self.played_path, timeout=300)
        self.log(out)
        names = sorted(self._pods() - before)
        if len(names) != 1:
            raise RuntimeError(f"expected one new pod from kube play, found {names}")
        self.pod_name = names[0]
        return self.pod_name

    def _pods(self):
        pods = json.loads(self.podman.out("pod", "ps", "--format", "json", quiet=True) or "[]")
        return {p["Name"] for p in pods or []}

    def ip(self):
        """The pod's address on the engine's network (what a Service would route to)."""
        infra = self.podman.out("pod", "inspect", "--format", "{{.InfraContainerID}}",
                                self.pod_name, quiet=True)
        return self.podman.out("inspect", "--format",
                               "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                               infra, quiet=True)

    def down(self):
        return self.podman.run("kube", "down", self.played_path, check=False, timeout=120)

    # --- probes ------------------------------------------------------------------------------

    def probe(self, name, kind="readinessProbe"):
        """(passed, detail) of one run of a container's probe, as the kubelet runs it: httpGet
        to the pod's port (here the 127.0.0.1 port it is published on), exec inside."""
        c = self.container(name)
        spec = c.get(kind)
        if spec is None:
            return True, "no probe"
        timeout = spec.get("timeoutSeconds", 1)
        if "httpGet" in spec:
            get = spec["httpGet"]
            number = self.port_number(c, get["port"])
            host_port = self.published.get((name, number))
            if host_port is None:
                return False, f"port {get['port']} of {name} is not published: cannot probe it"
            url = f"http://127.0.0.1:{host_port}{get.get('path', '/')}"
            status, body = fetch("GET", url, timeout=timeout)
            # The kubelet's rule: any status from 200 to 399 passes.
            detail = f"GET {url}: {status or 'no HTTP answer'} {body.strip()!r:.80}"
            return 200 <= status < 400, detail
        if "exec" in spec:
            proc = self.podman.run("exec", self.runtime_name(name), *spec["exec"]["command"],
                                   check=False, timeout=timeout + 10, quiet=True)
            return proc.returncode == 0, f"exit {proc.returncode} {proc.stderr.strip()}"
        return False, f"{kind} of {name}: only httpGet and exec probes are emulated"

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        pending = {c["name"] for c in self.spec["containers"]}
        detail = {}
        while pending and time.monotonic() < deadline:
            for name in sorted(pending):
                ok, detail[name] = self.probe(name)
                if ok:
                    pending.discard(name)
            if pending:
                time.sleep(0.5)
        if pending:
            raise RuntimeError("not ready within {}s: {}".format(
                timeout, "; ".join(f"{n}: {detail.get(n)}" for n in sorted(pending))))

    # --- termination -------------------------------------------------------------------------

    def state(self, name):
        out = self.podman.out("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
                              self.runtime_name(name), quiet=True)
        status, code = out.split()
        return status, int(code)

    def terminate(self, t0):
        """The kubelet's pod deletion, from t0: every container's preStop hook at once; each
        container gets SIGTERM when its own hook returns, SIGKILL at the end of the grace
        period. Returns {name: Termination}."""
        deadline = t0 + self.grace_s
        results = {c["name"]: Termination(c["name"]) for c in self.spec["containers"]}

        def one(c):
            t = results[c["name"]]
            ctr = self.runtime_name(c["name"])
            hook = (c.get("lifecycle") or {}).get("preStop", {}).get("exec", {}).get("command")
            if hook:
                t.hook = hook
                try:
                    proc = subprocess.run(["podman", "exec", ctr, *hook], env=self.podman.env,
                                          capture_output=True, text=True, check=False,
                                          timeout=max(deadline - time.monotonic(), 0.1))
                    t.hook_exit = proc.returncode
                    t.hook_output = (proc.stdout + proc.stderr).strip()
                except subprocess.TimeoutExpired:
                    t.hook_exit = "timed out"
            t.sigterm_at = time.monotonic()
            remaining = max(deadline - t.sigterm_at, 0)
            # podman stop: the image's STOPSIGNAL (SIGTERM), then SIGKILL after --time.
            subprocess.run(["podman", "stop", "--time", str(math.ceil(remaining)), ctr],
                           env=self.podman.env, capture_output=True, check=False,
                           timeout=remaining + 30)
            t.exited_at = time.monotonic()
            _, t.exit_code = self.state(c["name"])
            t.killed = t.exit_code == 137

        threads = [threading.Thread(target=one, args=(c,)) for c in self.spec["containers"]]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return results
