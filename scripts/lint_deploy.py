#!/usr/bin/env python3
"""Checks on sluice's deployment files that no standard tool makes.

  scripts/lint_deploy.py [--repo DIR] [--sluice BIN] [--target NAME=PATH ...]

Only what needs to know sluice: the Kubernetes example's probes, hooks, Service and
NetworkPolicy against the admin port of the config in its ConfigMap, and its grace period
against preStop delay + drain_timeout; the compose example's published admin port and
stop_grace_period against its config; the Dockerfile's runtime packages against the shared
libraries of the binaries it ships (readelf, dpkg -S); and `sluice validate` over every shipped
sluice config (config/ and docker/, ConfigMaps included). Generic checks are left to standard
tools: yamllint for the YAML (ctest deploy.yamllint), and podman for the Dockerfile, the
manifests and the compose file, which scripts/container-test.sh builds and runs for real.
Exit status 0 when clean, 1 with findings (file:line: error: ...), 2 on bad usage.
Registered with ctest by tests/deploy/CMakeLists.txt, which passes the binaries' paths.
"""

import argparse
import glob
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from deploy_lint import compose, kubernetes, runtime_packages, yaml_lines  # noqa: E402
from deploy_lint.report import Report  # noqa: E402
from deploy_lint.sluice_config import Validator  # noqa: E402

# The image's built-in config (docker/Dockerfile copies it to /etc/sluice/sluice.yaml): what a
# compose service runs with when it mounts none.
IMAGE_CONFIG = os.path.join("docker", "sluice.yaml")


def _yaml_files(root):
    found = []
    for ext in ("yaml", "yml"):
        found += glob.glob(os.path.join(root, "**", f"*.{ext}"), recursive=True)
    return sorted(found)


def _classify(path, kubernetes_dir):
    """'kubernetes', 'compose' or 'sluice' for a YAML file under docker/ or config/. Raises
    YamlError when it does not parse."""
    with open(path, encoding="utf-8") as f:
        docs = yaml_lines.load_all(f.read())
    first = docs[0] if docs else None
    if path.startswith(kubernetes_dir + os.sep) or (isinstance(first, dict) and (
            "apiVersion" in first or "kind" in first)):
        return "kubernetes"
    if compose.is_compose_file(path, first):
        return "compose"
    return "sluice"


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default=os.path.dirname(here), help="repository root")
    parser.add_argument("--sluice", help="sluice binary, for `sluice validate`")
    parser.add_argument("--target", action="append", default=[], metavar="NAME=PATH",
                        help="a CMake target's output file, for the shared-library check")
    args = parser.parse_args(argv)

    repo = os.path.abspath(args.repo)
    targets = {}
    for entry in args.target:
        name, sep, path = entry.partition("=")
        if not sep or not name or not path:
            parser.error(f"--target wants NAME=PATH, got {entry!r}")
        targets[name] = path
    report = Report(repo)
    validator = Validator(args.sluice, report)
    docker_dir = os.path.join(repo, "docker")

    dockerfile = os.path.join(docker_dir, "Dockerfile")
    if os.path.exists(dockerfile):
        runtime_packages.check(dockerfile, report, targets)
    else:
        report.error(docker_dir, None, "no docker/Dockerfile")

    manifests, composes, configs = [], [], []
    for path in _yaml_files(docker_dir) + _yaml_files(os.path.join(repo, "config")):
        try:
            kind = _classify(path, os.path.join(docker_dir, "kubernetes"))
        except yaml_lines.YamlError as e:
            report.checked_file(path, "YAML")
            report.error(path, e.line, f"YAML: {e}")
            continue
        except OSError as e:
            report.error(path, None, str(e))
            continue
        {"kubernetes": manifests, "compose": composes, "sluice": configs}[kind].append(path)
    kubernetes.KubernetesChecker(manifests, report, validator).run()
    for path in composes:
        compose.ComposeChecker(repo, path, report, validator,
                               os.path.join(repo, IMAGE_CONFIG)).run()
    for path in configs:
        report.checked_file(path, "sluice config")
        validator.validate_file(path)

    report.print()
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
