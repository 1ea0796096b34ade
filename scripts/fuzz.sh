#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang + ASan + UBSan and runs each one for a bounded
# time on its seed corpus (fuzz/corpus/<name>/, read-only: new inputs go to the build dir).
# Exits non-zero when a target finds a crash, leak, UB or broken invariant; the reproducer is
# written to $FUZZ_BUILD_DIR/artifacts/ (rerun it with: <build>/fuzz/<target> <file>).
#
# Usage: scripts/fuzz.sh [config_loader|grpc_timeout|server_session|resp_parser|queue_codec ...]
#        (default: all five)
# Environment: FUZZ_SECONDS   seconds per target (default 30)
#              FUZZ_BUILD_DIR build directory (default build-fuzz)
#              FUZZ_JOBS      parallel build jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-30}
build=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${FUZZ_JOBS:-2}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(config_loader grpc_timeout server_session resp_parser queue_codec)
fi

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }

# Same settings as the `fuzz` preset in CMakePresets.json. Every library is instrumented for
# coverage (fuzzer-no-link); only the fuzz targets link libFuzzer's main.
flags="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined"
flags+=" -fno-sanitize-recover=undefined"
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSLUICE_FUZZ=ON -DSLUICE_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]/%/_fuzzer}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts"
status=0
for t in "${targets[@]}"; do
  bin="$build/fuzz/${t}_fuzzer"
  work="$build/corpus/$t"
  mkdir -p "$work"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/artifacts/$t-")
  case "$t" in
    config_loader) args+=(-max_len=16384 -dict=fuzz/config_loader.dict) ;;
    grpc_timeout) args+=(-max_len=64) ;;
    server_session) args+=(-max_len=65536) ;;
    resp_parser) args+=(-max_len=4096) ;;
    queue_codec) args+=(-max_len=4096) ;;
  esac
  echo "== $t: ${seconds}s"
  if ! "$bin" "${args[@]}" "$work" "fuzz/corpus/$t" 2>"$build/$t.log"; then
    echo "fuzz.sh: $t FAILED; log: $build/$t.log" >&2
    grep -E "ERROR|invariant|runtime error|Test unit written" "$build/$t.log" | head -20 >&2
    status=1
  else
    grep -E "^stat::number_of_executed_units|^#[0-9]+.*DONE" "$build/$t.log" | tail -2
  fi
done
exit $status
