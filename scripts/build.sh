#!/usr/bin/env bash
# Configures and builds sluice (Release) into ${BUILD_DIR:-build}. Extra arguments go to the
# CMake configure step; TARGETS="a b" builds only those targets; SLUICE_UNITY_BUILD=ON makes it a
# unity build (one translation unit per target: about half the build time, what CI uses).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DSLUICE_UNITY_BUILD="${SLUICE_UNITY_BUILD:-OFF}" "$@" >/dev/null
if [ -n "${TARGETS:-}" ]; then
  # shellcheck disable=SC2086  # a list of target names
  cmake --build "$build_dir" -j "$jobs" --target $TARGETS
else
  cmake --build "$build_dir" -j "$jobs"
fi
