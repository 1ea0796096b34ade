"""scripts/lint_deploy.py fails on broken deployment files, for each check it keeps (the ones no
standard tool makes: admin port, shutdown timing, runtime packages, `sluice validate`).

Each test breaks one thing in a temporary copy of docker/ and config/ (the rest of the repository
is linked in) and expects the lint to exit 1 naming the problem; the first test checks that the
unmodified copy passes, so every failure below comes from its one edit. Each edit must match the
shipped file exactly once, so a test cannot pass by editing nothing.

Environment (set by tests/deploy/CMakeLists.txt): SLUICE_BIN (for `sluice validate`) and
SLUICE_LINT_TARGETS (NAME=PATH,... of the binaries the Dockerfile copies, as the lint's --target,
for the shared-library check).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LINT = os.path.join(REPO, "scripts", "lint_deploy.py")
COPIED = ("docker", "config")  # the directories the tests edit; everything else is a symlink


class LintDeployTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.sluice = os.environ.get("SLUICE_BIN")
        cls.targets = [t for t in os.environ.get("SLUICE_LINT_TARGETS", "").split(",") if t]
        if not cls.sluice or not os.access(cls.sluice, os.X_OK):
            raise RuntimeError("SLUICE_BIN must name the built sluice binary (run through ctest)")

    def setUp(self):
        tmp = tempfile.mkdtemp(prefix="lint-deploy-test-")
        self.addCleanup(shutil.rmtree, tmp)
        self.repo = os.path.join(tmp, "repo")
        os.mkdir(self.repo)
        for entry in os.listdir(REPO):
            if entry.startswith(("build", ".git")) or entry == "__pycache__":
                continue
            if entry in COPIED:
                shutil.copytree(os.path.join(REPO, entry), os.path.join(self.repo, entry),
                                symlinks=True)
            else:
                os.symlink(os.path.join(REPO, entry), os.path.join(self.repo, entry))

    def lint(self):
        cmd = [sys.executable, LINT, "--repo", self.repo, "--sluice", self.sluice]
        cmd += [f"--target={t}" for t in self.targets]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        return proc.returncode, proc.stdout + proc.stderr

    def edit(self, rel, old, new):
        path = os.path.join(self.repo, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertEqual(text.count(old), 1, f"{rel}: the edit must match exactly once: {old!r}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def line_of(self, rel, needle):
        with open(os.path.join(self.repo, rel), encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if needle in line:
                    return n
        self.fail(f"{needle!r} not in {rel}")
        return None

    def assert_fails(self, *fragments):
        code, out = self.lint()
        self.assertEqual(code, 1, f"the lint should fail; output:\n{out}")
        for fragment in fragments:
            self.assertIn(fragment, out)
        return out

    # --- baseline ------------------------------------------------------------------------

    def test_accepts_the_unmodified_copy(self):
        code, out = self.lint()
        self.assertEqual(code, 0, out)
        for rel in ("docker/Dockerfile", "docker/kubernetes/deployment.yaml",
                    "docker/kubernetes/queue-mode/frontend.yaml",
                    "docker/kubernetes/queue-mode/app.yaml",
                    "docker/kubernetes/queue-mode/redis.yaml",
                    "docker/compose/compose.yaml", "docker/sluice.yaml", "config/sluice.yaml"):
            self.assertIn(f"checked {rel} ", out)
        self.assertIn("sluice config in ConfigMap key sluice.yaml", out)

    # --- Kubernetes: the admin port ------------------------------------------------------

    K8S = "docker/kubernetes/"

    def test_rejects_a_readiness_probe_not_on_ready(self):
        self.edit(self.K8S + "deployment.yaml", "path: /ready", "path: /stats")
        self.assert_fails("readinessProbe path must be /ready")

    def test_rejects_a_probe_and_hook_port_other_than_the_configmap_admin_port(self):
        self.edit(self.K8S + "configmap.yaml", "address: 0.0.0.0:9901", "address: 0.0.0.0:9902")
        self.assert_fails("readinessProbe port admin is 9901, but the config's admin server "
                          "listens on 9902",
                          "lifecycle.preStop runs `sluice admin` against 127.0.0.1:9901, but the "
                          "config's admin server listens on port 9902")

    def test_rejects_a_prestop_hook_aimed_at_another_port(self):
        self.edit(self.K8S + "deployment.yaml", '"--address", "127.0.0.1:9901"',
                  '"--address", "127.0.0.1:8080"')
        self.assert_fails("lifecycle.preStop runs `sluice admin` against 127.0.0.1:8080")

    def test_rejects_an_admin_server_on_loopback(self):
        self.edit(self.K8S + "configmap.yaml", "address: 0.0.0.0:9901", "address: 127.0.0.1:9901")
        self.assert_fails("is loopback: the kubelet's probe")

    def test_rejects_a_liveness_probe_on_ready(self):
        self.edit(self.K8S + "deployment.yaml", "path: /server_info", "path: /ready")
        self.assert_fails("livenessProbe on /ready")

    def test_rejects_a_service_exposing_the_admin_port(self):
        self.edit(self.K8S + "service.yaml", "targetPort: grpc", "targetPort: admin")
        self.assert_fails("exposes sluice's admin port 9901")

    def test_rejects_a_network_policy_opening_the_admin_port(self):
        self.edit(self.K8S + "networkpolicy.yaml", "- port: grpc", "- port: 9901")
        self.assert_fails("opens sluice's admin port 9901")

    def test_rejects_an_invalid_embedded_config_at_its_line(self):
        self.edit(self.K8S + "configmap.yaml", "    workers: 2\n", "    workers: 2\n    bogus: 1\n")
        line = self.line_of(self.K8S + "configmap.yaml", "bogus: 1")
        self.assert_fails(f"docker/kubernetes/configmap.yaml:{line}:5: error: sluice validate:",
                          'unknown key "bogus"')

    # --- Kubernetes: the shutdown timing -------------------------------------------------

    def test_rejects_a_grace_period_shorter_than_the_drain(self):
        self.edit(self.K8S + "deployment.yaml", "terminationGracePeriodSeconds: 30",
                  "terminationGracePeriodSeconds: 21")
        self.assert_fails("terminationGracePeriodSeconds 21 must exceed the preStop delay 5s + "
                          "drain_timeout 15s + 1s")

    def test_rejects_a_prestop_delay_the_grace_period_does_not_cover(self):
        self.edit(self.K8S + "deployment.yaml", '"--delay", "5s"', '"--delay", "15s"')
        self.assert_fails("terminationGracePeriodSeconds 30 must exceed the preStop delay 15s")

    def test_rejects_a_drain_timeout_the_grace_period_does_not_cover(self):
        self.edit(self.K8S + "configmap.yaml", "drain_timeout: 15s", "drain_timeout: 25s")
        self.assert_fails("must exceed the preStop delay 5s + drain_timeout 25s")

    def test_rejects_a_sidecar_without_a_drain_hook(self):
        self.edit(self.K8S + "deployment.yaml", '"admin", "POST", "/drain"',
                  '"admin", "GET", "/ready"')
        self.assert_fails("needs a preStop hook that drains sluice")

    def test_rejects_an_app_that_stops_before_sluice_has_drained(self):
        self.edit(self.K8S + "deployment.yaml", 'command: ["sleep", "22"]',
                  'command: ["sleep", "20"]')
        self.assert_fails("container app gets SIGTERM while sluice still drains: give it a "
                          "preStop sleep of at least 21s (got 20)")

    # --- Kubernetes: the queue-mode example ------------------------------------------------

    QUEUE = "docker/kubernetes/queue-mode/"

    def test_rejects_a_queue_app_that_stops_before_its_consumer_has_drained(self):
        self.edit(self.QUEUE + "app.yaml", 'command: ["sleep", "12"]', 'command: ["sleep", "10"]')
        self.assert_fails("Deployment sluice-queue-app: container app gets SIGTERM while sluice "
                          "still drains: give it a preStop sleep of at least 11s (got 10)")

    def test_rejects_a_queue_frontend_service_exposing_the_admin_port(self):
        self.edit(self.QUEUE + "frontend.yaml", "targetPort: grpc", "targetPort: admin")
        self.assert_fails("Service sluice-queue: exposes sluice's admin port 9901")

    def test_rejects_an_invalid_queue_in_the_consumer_configmap(self):
        self.edit(self.QUEUE + "app.yaml", "max_deliveries: 3", "max_deliveries: 0")
        line = self.line_of(self.QUEUE + "app.yaml", "max_deliveries: 0")
        self.assert_fails(f"docker/kubernetes/queue-mode/app.yaml:{line}:", "sluice validate:",
                          "queues[0].max_deliveries")

    # --- compose -------------------------------------------------------------------------

    COMPOSE = "docker/compose/"

    def test_rejects_an_invalid_compose_sluice_config(self):
        self.edit(self.COMPOSE + "sluice.yaml", "max_concurrency: 8", "max_concurrency: -8")
        self.assert_fails("docker/compose/sluice.yaml:", "sluice validate:")

    def test_rejects_the_admin_port_published_beyond_loopback(self):
        self.edit(self.COMPOSE + "compose.yaml", '"127.0.0.1:${SLUICE_HOST_ADMIN_PORT:-9901}:9901"',
                  '"${SLUICE_HOST_ADMIN_PORT:-9901}:9901"')
        self.assert_fails("publish the admin port on the host's loopback only")

    def test_rejects_a_published_admin_port_bound_to_loopback(self):
        self.edit(self.COMPOSE + "sluice.yaml", "address: 0.0.0.0:9901", "address: 127.0.0.1:9901")
        self.assert_fails("binds it to loopback, which a published port never reaches")

    def test_rejects_a_stop_grace_period_shorter_than_the_drain(self):
        self.edit(self.COMPOSE + "compose.yaml", "stop_grace_period: 10s", "stop_grace_period: 6s")
        self.assert_fails("stop_grace_period 6s must exceed drain_timeout 5s + 1s")

    # --- shipped configs -------------------------------------------------------------------

    def test_rejects_an_invalid_example_config(self):
        self.edit("config/examples/fixed_semaphore.yaml", "max_concurrency: 32",
                  "max_concurrency: lots")
        self.assert_fails("config/examples/fixed_semaphore.yaml:", "sluice validate:")

    def test_rejects_an_invalid_image_default_config(self):
        self.edit("docker/sluice.yaml", "drain_timeout: 5s", "drain_timeout: 5")
        self.assert_fails("docker/sluice.yaml:", "sluice validate:")

    # --- Dockerfile: runtime packages --------------------------------------------------------

    DF = "docker/Dockerfile"

    def test_rejects_a_runtime_image_missing_a_library_package(self):
        self.edit(self.DF, "libssl3 libyaml-cpp0.7 ", "libssl3 ")
        self.assert_fails("stage sluice: /usr/local/bin/sluice needs libyaml-cpp.so.0.7: install "
                          "libyaml-cpp0.7")

    def test_rejects_a_test_upstream_image_missing_a_library_package(self):
        if not any(t.startswith("sluice-test-upstream=") for t in self.targets):
            self.skipTest("sluice-test-upstream is not built (SLUICE_BUILD_TESTS=OFF)")
        self.edit(self.DF, "libgrpc++1.51 ", "")
        self.assert_fails("stage sluice-test-upstream: /usr/local/bin/sluice-test-upstream needs "
                          "libgrpc++.so.1.51: install libgrpc++1.51")


if __name__ == "__main__":
    unittest.main()
