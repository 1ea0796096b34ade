"""docker/sluice-admin against a real sluice: the image's HEALTHCHECK and the Kubernetes preStop
hook run this script, and no container engine runs in CI, so it is tested here directly.

Environment (set by tests/deploy/CMakeLists.txt): SLUICE_BIN, the sluice binary.
"""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(REPO, "docker", "sluice-admin")
# Bounds on waiting for processes, not assertions about speed.
START_WAIT_S = 30
CALL_WAIT_S = 30

CONFIG = """
admin:
  address: 127.0.0.1:0
workers: 1
listeners:
  - name: ingress
    address: 127.0.0.1:0
    cluster: app
clusters:
  - name: app
    endpoints: [127.0.0.1:1]
drain_timeout: 1s
log_level: warn
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SluiceAdminTest(unittest.TestCase):

    def setUp(self):
        sluice = os.environ.get("SLUICE_BIN")
        if not sluice or not os.access(sluice, os.X_OK):
            raise RuntimeError("SLUICE_BIN must name the built sluice binary (run through ctest)")
        tmp = tempfile.TemporaryDirectory(prefix="sluice-admin-test-")
        self.addCleanup(tmp.cleanup)
        config = os.path.join(tmp.name, "sluice.yaml")
        ready = os.path.join(tmp.name, "ready.json")
        with open(config, "w", encoding="utf-8") as f:
            f.write(CONFIG)
        self.log = open(os.path.join(tmp.name, "sluice.log"), "w+", encoding="utf-8")
        self.addCleanup(self.log.close)
        self.proc = subprocess.Popen([sluice, "--config", config, "--ready-file", ready],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop)
        deadline = time.monotonic() + START_WAIT_S
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                self.fail(f"sluice did not start:\n{self.log.read()}")
            time.sleep(0.02)
        with open(ready, encoding="utf-8") as f:
            self.admin_port = json.load(f)["admin_port"]

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=CALL_WAIT_S)

    def admin(self, *args, port=None, env=None):
        environ = dict(os.environ, SLUICE_ADMIN_PORT=str(port or self.admin_port))
        environ.update(env or {})
        return subprocess.run([SCRIPT, *args], capture_output=True, text=True, env=environ,
                              timeout=CALL_WAIT_S, check=False)

    def test_get_ready_succeeds_and_prints_the_state(self):
        result = self.admin("get", "/ready")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "LIVE")

    def test_get_ready_fails_after_healthcheck_fail(self):
        self.assertEqual(self.admin("post", "/healthcheck/fail").returncode, 0)
        result = self.admin("get", "/ready")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout.strip(), "HEALTHCHECK_FAILED")
        self.assertIn("503", result.stderr)

    def test_post_drain_makes_ready_fail(self):
        result = self.admin("post", "/drain")
        self.assertEqual(result.returncode, 0, result.stderr)
        ready = self.admin("get", "/ready")
        self.assertEqual(ready.returncode, 1)
        self.assertEqual(ready.stdout.strip(), "DRAINING")

    def test_prestop_keeps_serving_during_its_delay(self):
        # Its own process group, so the cleanup also ends the `sleep` it is waiting in.
        hook = subprocess.Popen([SCRIPT, "prestop", "600"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                env=dict(os.environ, SLUICE_ADMIN_PORT=str(self.admin_port)))
        self.addCleanup(hook.wait, timeout=CALL_WAIT_S)
        self.addCleanup(os.killpg, hook.pid, signal.SIGKILL)
        result = self.admin("get", "/ready")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "LIVE")

    def test_prestop_drains_once_its_delay_is_over(self):
        result = self.admin("prestop", "0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.admin("get", "/ready").stdout.strip(), "DRAINING")
        # sluice keeps running until SIGTERM: the kubelet sends it after the hook returns.
        self.assertIsNone(self.proc.poll())

    def test_post_to_a_read_only_endpoint_fails(self):
        result = self.admin("post", "/ready")
        self.assertEqual(result.returncode, 1)
        self.assertIn("405", result.stderr)

    def test_get_of_an_unknown_path_fails(self):
        result = self.admin("get", "/no-such-endpoint")
        self.assertEqual(result.returncode, 1)
        self.assertIn("404", result.stderr)

    def test_get_fails_when_nothing_listens(self):
        result = self.admin("get", "/ready", port=_free_port())
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot connect", result.stderr)

    def test_get_fails_on_a_server_that_never_answers(self):
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            result = self.admin("get", "/ready", port=silent.getsockname()[1],
                                env={"SLUICE_ADMIN_TIMEOUT": "1"})
        self.assertEqual(result.returncode, 1)
        self.assertIn("no answer", result.stderr)

    def test_rejects_bad_usage_with_status_2(self):
        for args in ([], ["get"], ["get", "ready"], ["prestop", "5s"], ["delete", "/drain"]):
            with self.subTest(args=args):
                self.assertEqual(self.admin(*args).returncode, 2)


if __name__ == "__main__":
    unittest.main()
