#!/usr/bin/env bash
# Builds sluice's container images from docker/Dockerfile and runs the deployment examples for
# real with podman: the Kubernetes example with `podman kube play` (calls through the sidecar,
# readiness, hardening, and the pod's termination with calls in flight), and the compose example
# with podman-compose. Installs what it needs (scripts/setup.sh container), keeps every image and
# container in a podman state of its own, and removes it at the end and at the start.
# Usage: scripts/container-test.sh [--keep] [--state DIR] [--jobs N]  (--keep: reuse the images
# and the build cache next time, for development). docker/README.md lists every check.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  # Rootful podman (bridge networks, port forwarding) and mmdebstrap's root mode.
  echo "container-test: run as root" >&2
  exit 2
fi
start=$(date +%s)
scripts/setup.sh container
echo "== container-test: scripts/setup.sh container: $(( $(date +%s) - start )) s"
# Debian's python3-yaml: the pyenv python3 on some machines' PATH has no yaml module.
exec /usr/bin/python3 scripts/container_test/run.py "$@"
