"""`sluice admin` (the real binary) against a real sluice: the image's HEALTHCHECK and the
Kubernetes preStop hook run it, so its exit status and its preStop delay are tested here, and
again inside the image by scripts/container-test.sh.

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
        self.sluice = os.environ.get("SLUICE_BIN")
        if not self.sluice or not os.access(self.sluice, os.X_OK):
            raise RuntimeError("SLUICE_BIN must name the built sluice binary (run through ctest)")
        tmp = tempfile.TemporaryDirectory(prefix="sluice-admin-test-")
        self.addCleanup(tmp.cleanup)
        config = os.path.join(tmp.name, "sluice.yaml")
        ready = os.path.join(tmp.name, "ready.json")
        with open(config, "w", encoding="utf-8") as f:
            f.write(CONFIG)
        self.log = open(os.path.join(tmp.name, "sluice.log"), "w+", encoding="utf-8")
        self.addCleanup(self.log.close)
        self.proc = subprocess.Popen([self.sluice, "--config", config, "--ready-file", ready],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.addCleanup(self._stop)
        deadline = time.monotonic() + START_WAIT_S
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                self.fail(f"sluice did not start:\n{self.log.read()}")
            time.sleep(0.02)
        with open(ready, encoding="utf-8") as f:
            self.address = f"127.0.0.1:{json.load(f)['admin_port']}"

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=CALL_WAIT_S)

    def admin(self, *args, address=None, env=None):
        """sluice admin ARGS --address ADDRESS (address=False: no --address at all)."""
        cmd = [self.sluice, "admin", *args]
        if address is not False:
            cmd += ["--address", address or self.address]
        environ = {k: v for k, v in os.environ.items() if k != "SLUICE_ADMIN_ADDRESS"}
        environ.update(env or {})
        return subprocess.run(cmd, capture_output=True, text=True, env=environ,
                              timeout=CALL_WAIT_S, check=False)

    def test_get_ready_succeeds_and_prints_the_state(self):
        result = self.admin("GET", "/ready")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "LIVE\n")
        self.assertEqual(result.stderr, "")

    def test_method_names_are_case_insensitive(self):
        self.assertEqual(self.admin("get", "/ready").returncode, 0)

    def test_get_ready_fails_after_healthcheck_fail(self):
        self.assertEqual(self.admin("POST", "/healthcheck/fail").returncode, 0)
        result = self.admin("GET", "/ready")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "HEALTHCHECK_FAILED\n")
        self.assertEqual(result.stderr.strip(),
                         "sluice admin: GET /ready: 503 Service Unavailable")

    def test_post_drain_makes_ready_fail(self):
        result = self.admin("POST", "/drain")
        self.assertEqual(result.returncode, 0, result.stderr)
        ready = self.admin("GET", "/ready")
        self.assertEqual(ready.returncode, 1)
        self.assertEqual(ready.stdout.strip(), "DRAINING")

    def test_delay_keeps_serving_until_it_is_over(self):
        # Its own process group, so the cleanup ends it even while it sleeps.
        hook = subprocess.Popen([self.sluice, "admin", "POST", "/drain", "--delay", "600s",
                                 "--address", self.address], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        self.addCleanup(hook.wait, timeout=CALL_WAIT_S)
        self.addCleanup(os.killpg, hook.pid, signal.SIGKILL)
        time.sleep(0.2)
        result = self.admin("GET", "/ready")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "LIVE")

    def test_delay_then_drains(self):
        start = time.monotonic()
        result = self.admin("POST", "/drain", "--delay", "500ms")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertGreaterEqual(time.monotonic() - start, 0.5)
        self.assertEqual(self.admin("GET", "/ready").stdout.strip(), "DRAINING")
        # sluice keeps running until SIGTERM: the kubelet sends it after the hook returns.
        self.assertIsNone(self.proc.poll())

    def test_query_strings_reach_the_server(self):
        result = self.admin("GET", "/stats?format=json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIsInstance(json.loads(result.stdout), dict)

    def test_address_from_the_environment(self):
        result = self.admin("GET", "/ready", address=False,
                            env={"SLUICE_ADMIN_ADDRESS": self.address})
        self.assertEqual(result.returncode, 0, result.stderr)
        unset = self.admin("GET", "/ready", address=False,
                           env={"SLUICE_ADMIN_ADDRESS": f"127.0.0.1:{_free_port()}"})
        self.assertEqual(unset.returncode, 1)

    def test_post_to_a_read_only_endpoint_fails(self):
        result = self.admin("POST", "/ready")
        self.assertEqual(result.returncode, 1)
        self.assertIn("405 Method Not Allowed", result.stderr)

    def test_get_of_an_unknown_path_fails(self):
        result = self.admin("GET", "/no-such-endpoint")
        self.assertEqual(result.returncode, 1)
        self.assertIn("404 Not Found", result.stderr)

    def test_fails_when_nothing_listens(self):
        port = _free_port()
        result = self.admin("GET", "/ready", address=f"127.0.0.1:{port}")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stdout, "")
        self.assertEqual(result.stderr.strip(), f"sluice admin: GET /ready: cannot connect to "
                         f"127.0.0.1:{port}: Connection refused")

    def test_fails_on_a_server_that_never_answers(self):
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen()
            port = silent.getsockname()[1]
            start = time.monotonic()
            result = self.admin("GET", "/ready", "--timeout", "1s", address=f"127.0.0.1:{port}")
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(), f"sluice admin: GET /ready: no answer from "
                         f"127.0.0.1:{port} within 1s")
        self.assertLess(time.monotonic() - start, CALL_WAIT_S)

    def test_rejects_bad_usage_with_status_2(self):
        for args in ([], ["GET"], ["GET", "ready"], ["DELETE", "/drain"],
                     ["GET", "/ready", "--delay", "5"], ["GET", "/ready", "--timeout", "0s"]):
            with self.subTest(args=args):
                self.assertEqual(self.admin(*args).returncode, 2)
        self.assertEqual(self.admin("GET", "/ready", address="9901").returncode, 2)


if __name__ == "__main__":
    unittest.main()
