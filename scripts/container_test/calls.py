"""gRPC calls from outside the pod: sluice-test-client (from the test-upstream image) in a
container of its own on the host's network, dialling 127.0.0.1 and a port published to it.
The container stays up and each call is a `podman exec` in it: that starts in a fraction of the
time a new container takes, which matters for a call that must land inside a 5 s window."""

import json
import subprocess
import time

CLIENT_IMAGE = "localhost/sluice-test-upstream:0.1.0"


class ClientContainer:
    def __init__(self, podman, name):
        self.podman = podman
        self.name = name

    def __enter__(self):
        self.podman.run("run", "-d", "--name", self.name, "--network", "host", "--read-only",
                        "--entrypoint", "sleep", CLIENT_IMAGE, "infinity")
        return self

    def __exit__(self, *exc):
        self.podman.run("rm", "--force", "--time", "0", self.name, check=False, quiet=True)

    def call(self, port, service_time_s, label):
        return Call(self.podman, self.name, port, service_time_s, label)


class Call:
    """One call, started at once; result() waits for it and returns the client's JSON plus the
    times it started and ended (monotonic seconds)."""

    def __init__(self, podman, container, port, service_time_s, label, deadline_s=None):
        self.label = label
        self.service_time_s = service_time_s
        deadline_s = deadline_s or service_time_s + 30
        args = ["exec", container, "/usr/local/bin/sluice-test-client",
                "--target", f"127.0.0.1:{port}", "--method", "unary",
                "--service-time", f"{int(service_time_s * 1000)}ms",
                "--deadline", f"{int(deadline_s * 1000)}ms"]
        self.started = time.monotonic()
        self.ended = None
        self._proc = podman.popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._timeout = deadline_s + 60
        self._result = None

    def result(self):
        if self._result is None:
            try:
                out, err = self._proc.communicate(timeout=self._timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                out, err = self._proc.communicate()
            self.ended = time.monotonic()
            try:
                self._result = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                self._result = {"status_code": -1, "status_name": "NO_RESULT",
                                "status_message": (err or out).strip()[-500:]}
        return self._result

    def ok(self):
        return self.result().get("status_code") == 0

    def through_sluice(self):
        """sluice stamps x-sluice-queue-us on every response it forwards."""
        return "x-sluice-queue-us" in self.result().get("initial_metadata", {})

    def describe(self):
        r = self.result()
        return (f"{self.label} ({self.service_time_s:g}s of service time): {r.get('status_name')}"
                f" {r.get('status_message', '')!r}".rstrip())

    def kill(self):
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
