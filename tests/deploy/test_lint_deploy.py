"""scripts/lint_deploy.py fails on broken deployment files.

Each test breaks one thing in a temporary copy of docker/ and config/ (the rest of the repository
is linked in) and expects the lint to exit 1 naming the problem; the first test checks that the
unmodified copy passes, so every failure below comes from its one edit. Each edit must match the
shipped file exactly once, so a test cannot pass by editing nothing.

Environment (set by tests/deploy/CMakeLists.txt): SLUICE_BIN (for `sluice validate` and the
shared-library check), SLUICE_BINARY_DIR (the CMake build directory), SLUICE_LINT_TARGETS
(NAME=PATH,... of the binaries the Dockerfile copies, as the lint's --target).
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
        cls.binary_dir = os.environ.get("SLUICE_BINARY_DIR")
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
        if self.binary_dir:
            cmd += ["--binary-dir", self.binary_dir] + [f"--target={t}" for t in self.targets]
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
                    "docker/compose/compose.yaml", "docker/sluice.yaml", "config/sluice.yaml"):
            self.assertIn(f"checked {rel} ", out)
        self.assertIn("sluice config in ConfigMap key sluice.yaml", out)

    # --- Kubernetes manifests ------------------------------------------------------------

    K8S = "docker/kubernetes/"

    def test_rejects_a_manifest_that_is_not_yaml(self):
        self.edit(self.K8S + "deployment.yaml", "  replicas: 2\n", "  replicas: [2\n")
        self.assert_fails("docker/kubernetes/deployment.yaml:", "YAML:")

    def test_rejects_a_duplicated_key(self):
        self.edit(self.K8S + "deployment.yaml", "  replicas: 2\n", "  replicas: 2\n  replicas: 3\n")
        self.assert_fails("duplicate key 'replicas'")

    def test_rejects_an_object_without_a_name(self):
        self.edit(self.K8S + "service.yaml", "  name: sluice-demo\n", "  title: sluice-demo\n")
        self.assert_fails("docker/kubernetes/service.yaml:", "missing metadata.name")

    def test_rejects_an_object_without_api_version(self):
        self.edit(self.K8S + "networkpolicy.yaml", "apiVersion: networking.k8s.io/v1\n", "")
        self.assert_fails("missing apiVersion")

    def test_rejects_a_container_without_an_image(self):
        self.edit(self.K8S + "deployment.yaml", "image: sluice:0.1.0", 'image: ""')
        self.assert_fails("container sluice has no image")

    def test_rejects_an_unpinned_image(self):
        self.edit(self.K8S + "deployment.yaml", "image: sluice-test-upstream:0.1.0",
                  "image: sluice-test-upstream:latest")
        self.assert_fails("pin the image")

    def test_rejects_a_readiness_probe_not_on_ready(self):
        self.edit(self.K8S + "deployment.yaml", "path: /ready", "path: /stats")
        self.assert_fails("readinessProbe path must be /ready")

    def test_rejects_a_probe_port_other_than_the_configmap_admin_port(self):
        self.edit(self.K8S + "configmap.yaml", "address: 0.0.0.0:9901", "address: 0.0.0.0:9902")
        self.assert_fails("readinessProbe port admin is 9901, but the config's admin server "
                          "listens on 9902", "SLUICE_ADMIN_PORT=9901")

    def test_rejects_an_admin_server_on_loopback(self):
        self.edit(self.K8S + "configmap.yaml", "address: 0.0.0.0:9901", "address: 127.0.0.1:9901")
        self.assert_fails("is loopback: the kubelet's probe")

    def test_rejects_a_liveness_probe_on_ready(self):
        self.edit(self.K8S + "deployment.yaml", "path: /server_info", "path: /ready")
        self.assert_fails("livenessProbe on /ready")

    def test_rejects_an_invalid_embedded_config_at_its_line(self):
        self.edit(self.K8S + "configmap.yaml", "    workers: 2\n", "    workers: 2\n    bogus: 1\n")
        line = self.line_of(self.K8S + "configmap.yaml", "bogus: 1")
        self.assert_fails(f"docker/kubernetes/configmap.yaml:{line}:5: error: sluice validate:",
                          'unknown key "bogus"')

    def test_rejects_a_grace_period_shorter_than_the_drain(self):
        self.edit(self.K8S + "deployment.yaml", "terminationGracePeriodSeconds: 30",
                  "terminationGracePeriodSeconds: 15")
        self.assert_fails("terminationGracePeriodSeconds 15 must exceed the preStop delay 5s + "
                          "drain_timeout 15s")

    def test_rejects_a_sidecar_without_a_prestop_hook(self):
        self.edit(self.K8S + "deployment.yaml",
                  'command: ["/usr/local/bin/sluice-admin", "prestop", "5"]',
                  'command: ["/usr/local/bin/sluice-admin", "get", "/ready"]')
        self.assert_fails("preStop should run sluice-admin prestop N")

    def test_rejects_an_app_that_stops_before_sluice_has_drained(self):
        self.edit(self.K8S + "deployment.yaml", 'command: ["sleep", "22"]',
                  'command: ["sleep", "3"]')
        self.assert_fails("container app gets SIGTERM while sluice still drains")

    def test_rejects_a_volume_naming_a_missing_configmap(self):
        self.edit(self.K8S + "deployment.yaml", "name: sluice-demo-config", "name: other-config")
        self.assert_fails("ConfigMap other-config, which no manifest here defines")

    def test_rejects_a_service_exposing_the_admin_port(self):
        self.edit(self.K8S + "service.yaml", "targetPort: grpc", "targetPort: admin")
        self.assert_fails("exposes sluice's admin port 9901")

    def test_rejects_a_service_that_selects_no_pod(self):
        self.edit(self.K8S + "service.yaml",
                  "  selector:\n    app.kubernetes.io/name: sluice-demo",
                  "  selector:\n    app.kubernetes.io/name: sluice-dmeo")
        self.assert_fails("spec.selector matches no pod template")

    def test_rejects_a_network_policy_opening_the_admin_port(self):
        self.edit(self.K8S + "networkpolicy.yaml", "- port: grpc", "- port: 9901")
        self.assert_fails("opens sluice's admin port 9901")

    # --- compose ---------------------------------------------------------------------------

    COMPOSE = "docker/compose/"

    def test_rejects_an_invalid_compose_sluice_config(self):
        self.edit(self.COMPOSE + "sluice.yaml", "max_concurrency: 8", "max_concurrency: -8")
        self.assert_fails("docker/compose/sluice.yaml:", "sluice validate:")

    def test_rejects_an_unknown_build_target(self):
        self.edit(self.COMPOSE + "compose.yaml", "target: sluice-test-upstream",
                  "target: test-upstream")
        self.assert_fails("build target 'test-upstream' is not a stage")

    def test_rejects_the_admin_port_published_beyond_loopback(self):
        self.edit(self.COMPOSE + "compose.yaml", '"127.0.0.1:9901:9901"', '"9901:9901"')
        self.assert_fails("publish the admin port on the host's loopback only")

    def test_rejects_a_cluster_endpoint_that_is_no_service(self):
        self.edit(self.COMPOSE + "sluice.yaml", "[upstream:50051]", "[backend:50051]")
        self.assert_fails("cluster endpoint backend:50051 is no service")

    def test_rejects_a_missing_bind_mount(self):
        self.edit(self.COMPOSE + "compose.yaml", "./sluice.yaml:", "./sluice-missing.yaml:")
        self.assert_fails("bind mount source ./sluice-missing.yaml does not exist")

    # --- shipped configs -------------------------------------------------------------------

    def test_rejects_an_invalid_example_config(self):
        self.edit("config/examples/fixed_semaphore.yaml", "max_concurrency: 32",
                  "max_concurrency: lots")
        self.assert_fails("config/examples/fixed_semaphore.yaml:", "sluice validate:")

    def test_rejects_an_invalid_image_default_config(self):
        self.edit("docker/sluice.yaml", "drain_timeout: 5s", "drain_timeout: 5")
        self.assert_fails("docker/sluice.yaml:", "sluice validate:")

    # --- Dockerfile ------------------------------------------------------------------------

    DF = "docker/Dockerfile"

    def test_rejects_an_unknown_instruction(self):
        self.edit(self.DF, "COPY --chmod=0755 docker/", "CPY --chmod=0755 docker/")
        self.assert_fails("unknown instruction 'CPY'")

    def test_rejects_a_dangling_continuation(self):
        self.edit(self.DF, 'CMD ["--config", "/etc/sluice/sluice.yaml"]\n',
                  'CMD ["--config", "/etc/sluice/sluice.yaml"] \\\n')
        self.assert_fails("ends with a line continuation")

    def test_rejects_an_empty_line_inside_a_continuation(self):
        self.edit(self.DF, "/var/lib/apt/lists/* \\\n    && groupadd --system --gid 10001 sluice",
                  "/var/lib/apt/lists/* \\\n\n    && groupadd --system --gid 10001 sluice")
        self.assert_fails("empty line inside a continued instruction")

    def test_rejects_an_exec_form_that_is_not_json(self):
        self.edit(self.DF, 'CMD ["--config", "/etc/sluice/sluice.yaml"]',
                  "CMD ['--config', '/etc/sluice/sluice.yaml']")
        self.assert_fails("exec form is not valid JSON")

    def test_rejects_copy_from_an_unknown_stage(self):
        self.edit(self.DF, "COPY --from=build /src/build/src/sluice",
                  "COPY --from=builder /src/build/src/sluice")
        self.assert_fails("COPY --from=builder: no earlier stage of that name")

    def test_rejects_a_binary_path_the_build_does_not_produce(self):
        self.edit(self.DF, "/src/build/src/sluice /usr/local/bin/sluice",
                  "/src/build/sluice /usr/local/bin/sluice")
        self.assert_fails("the build does not produce sluice")

    def test_rejects_a_final_stage_running_as_root(self):
        self.edit(self.DF, "USER 10001:10001\n# 8080", "USER root\n# 8080")
        self.assert_fails("stage sluice runs as root")

    def test_rejects_a_final_stage_without_user(self):
        self.edit(self.DF, "USER 10001:10001\n# 8080", "# 8080")
        self.assert_fails("never sets USER")

    def test_rejects_a_final_stage_without_healthcheck(self):
        self.edit(self.DF, "HEALTHCHECK --interval=10s --timeout=3s --start-period=5s "
                  '--retries=3 \\\n    CMD ["/usr/local/bin/sluice-admin", "get", "/ready"]\n', "")
        self.assert_fails("final stage sluice has no HEALTHCHECK")

    def test_rejects_a_healthcheck_that_skips_ready(self):
        self.edit(self.DF, '"get", "/ready"]', '"get", "/stats"]')
        self.assert_fails("the HEALTHCHECK must probe the admin /ready endpoint")

    def test_rejects_a_run_of_a_missing_script(self):
        self.edit(self.DF, "RUN scripts/build.sh -DSLUICE_BUILD_TESTS=OFF",
                  "RUN scripts/make.sh -DSLUICE_BUILD_TESTS=OFF")
        self.assert_fails("RUN scripts/make.sh: no such script in the repository")

    def test_rejects_a_run_of_a_script_not_copied_yet(self):
        self.edit(self.DF, "COPY scripts/setup.sh scripts/setup.sh\n", "")
        self.assert_fails("RUN scripts/setup.sh: not copied into stage build before this RUN")

    def test_rejects_a_copy_of_a_missing_file(self):
        self.edit(self.DF, "COPY docker/sluice.yaml ", "COPY docker/sluice-default.yaml ")
        self.assert_fails("COPY docker/sluice-default.yaml: no such file in the repository")

    def test_rejects_a_base_image_other_than_bookworm_slim(self):
        self.edit(self.DF, "ARG DEBIAN_IMAGE=debian:bookworm-slim", "ARG DEBIAN_IMAGE=ubuntu:24.04")
        self.assert_fails("FROM ubuntu:24.04: base images must be one of debian:bookworm-slim")

    def test_rejects_a_config_port_missing_from_expose(self):
        self.edit(self.DF, "EXPOSE 8080 9901", "EXPOSE 8080")
        self.assert_fails("port 9901 of docker/sluice.yaml is not in EXPOSE")

    def test_rejects_a_runtime_image_missing_a_library_package(self):
        self.edit(self.DF, "libssl3 libyaml-cpp0.7 ", "libssl3 ")
        self.assert_fails("needs libyaml-cpp.so.0.7: install libyaml-cpp0.7")


if __name__ == "__main__":
    unittest.main()
