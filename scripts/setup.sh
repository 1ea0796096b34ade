#!/usr/bin/env bash
# Installs every Debian bookworm package sluice needs to build, test and benchmark.
# Idempotent: installs only what is missing.
# Usage: scripts/setup.sh [build|upstream|test|demo|bench|container|lint|all]
set -euo pipefail

profile=${1:-test}

build_pkgs=(g++ cmake ninja-build pkg-config libboost1.81-dev libboost-json1.81-dev
  libnghttp2-dev libssl-dev libyaml-cpp-dev libspdlog-dev libcli11-dev libjemalloc-dev)
test_pkgs=(libgtest-dev libgmock-dev libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev
  python3-grpcio python3-grpc-tools python3-h2 python3-yaml nghttp2-client openssl procps nodejs chromium
  clang libclang-rt-14-dev redis-server yamllint)
# The bundled gRPC test service and client alone (docker/Dockerfile's upstream-build stage):
# gRPC and protobuf, plus googletest because configuring with SLUICE_BUILD_TESTS=ON looks for it.
upstream_pkgs=(libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev libgtest-dev libgmock-dev)
# scripts/lint.sh: clang-format, clang-tidy (with run-clang-tidy), shellcheck, flake8.
lint_pkgs=(clang-format clang-tidy shellcheck flake8)
bench_pkgs=(nghttp2-proxy nghttp2-server haproxy nginx python3-matplotlib util-linux)
# scripts/container-test.sh: a container engine (podman with the runc runtime: crun cannot set
# RLIMIT_NOFILE in every sandbox), mmdebstrap for the base image (no image registry is needed),
# podman-compose for docker/compose, yamllint for the YAML the deploy lint no longer parses.
container_pkgs=(podman runc conmon golang-github-containers-common netavark aardvark-dns iptables
  catatonit uidmap slirp4netns fuse-overlayfs mmdebstrap debian-archive-keyring podman-compose
  yamllint python3-yaml)

case "$profile" in
  build) want=("${build_pkgs[@]}") ;;
  upstream) want=("${build_pkgs[@]}" "${upstream_pkgs[@]}") ;;
  test) want=("${build_pkgs[@]}" "${test_pkgs[@]}") ;;
  demo) want=("${build_pkgs[@]}" "${test_pkgs[@]}" python3-matplotlib) ;;
  bench) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}") ;;
  container) want=("${container_pkgs[@]}") ;;
  lint) want=("${lint_pkgs[@]}") ;;
  all) want=("${build_pkgs[@]}" "${test_pkgs[@]}" "${bench_pkgs[@]}" "${container_pkgs[@]}" "${lint_pkgs[@]}") ;;
  *) echo "usage: $0 [build|upstream|test|demo|bench|container|lint|all]" >&2; exit 2 ;;
esac

# npm ships inside NodeSource's nodejs build; Debian's own nodejs packages it separately.
# Only the profiles that run node tests want it.
case "$profile" in build | upstream | container | lint) ;; *) command -v npm >/dev/null 2>&1 || want+=(npm) ;; esac

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Debian ships the Rapid Reset and CONTINUATION backports as point releases of
# libnghttp2-14 that still report 1.52.0: make sure the newest one is installed.
need_upgrade=0
if dpkg-query -W -f='${Version}' libnghttp2-14 2>/dev/null | grep -qv "deb12u[3-9]"; then
  need_upgrade=1
fi

if [ ${#missing[@]} -gt 0 ] || [ "$need_upgrade" -eq 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  $sudo apt-get install -y -qq --only-upgrade libnghttp2-14 libnghttp2-dev || true
fi
