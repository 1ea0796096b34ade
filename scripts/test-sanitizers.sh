#!/usr/bin/env bash
# Sanitizer runs (issue 6), with the presets in CMakePresets.json.
#
#   tsan  ThreadSanitizer (build-tsan): the tests whose code runs on several threads at once
#         (permit gate, stats shards, worker pools, dispatcher, access log writer), then the
#         sluice binary under TSan through the integration modules in $TSAN_INTEGRATION (two
#         workers sharing filter state). The test upstream and client come from a normal build
#         ($TOOLS_BUILD_DIR): Debian's gRPC is not built with TSan, so a TSan-built gRPC program
#         reports races inside gRPC that are not there.
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (build-asan): everything built; every
#         unit and integration test registered with ctest, then those of the modules in
#         $ASAN_EXTRA_INTEGRATION that ctest does not know, run directly.
#   ci    what CI runs, sized for its time budget: tsan (as above), then asan building only the
#         sluice binary and the unit tests of the code that parses untrusted input (h2, proxy,
#         config, queue: RESP and the envelope, plus the Redis connection's lifetimes against a
#         real redis-server), running those, then the modules in $ASAN_CI_INTEGRATION with
#         the test tools of $TOOLS_BUILD_DIR (not instrumented, as for tsan).
#   all   tsan, then asan. The default.
#
# Usage: scripts/test-sanitizers.sh [tsan|asan|ci|all]
# Environment: SAN_JOBS                build jobs (default 2)
#              CTEST_JOBS              parallel ctest tests (default 2)
#              TOOLS_BUILD_DIR         normal build holding the test tools (default build; its
#                                      tool targets are built if missing)
#              TSAN_INTEGRATION        default: test_proxy test_admission test_h2_floods
#                                      test_h2_limits test_h2_conformance
#              ASAN_CI_INTEGRATION     default: test_proxy test_h2_floods test_h2_limits
#                                      test_h2_conformance test_tls
#              ASAN_EXTRA_INTEGRATION  default: test_h2_floods test_h2_limits
#                                      test_h2_conformance test_tls
# Prints how long each phase took; exits non-zero when a test fails or a sanitizer reports.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mode=${1:-all}
jobs=${SAN_JOBS:-2}
ctest_jobs=${CTEST_JOBS:-2}
tools_build=${TOOLS_BUILD_DIR:-build}
h2_modules='test_h2_floods test_h2_limits test_h2_conformance'
tsan_integration=${TSAN_INTEGRATION-test_proxy test_admission $h2_modules}
asan_ci_integration=${ASAN_CI_INTEGRATION-test_proxy $h2_modules test_tls}
asan_extra_integration=${ASAN_EXTRA_INTEGRATION-$h2_modules test_tls}

# The runtime options of the test presets (ctest applies those; direct runs use these).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_init_order=1:quarantine_size_mb=4}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}

# Concurrency tests: targets, and their gtest suite names for ctest -R.
tsan_targets=(limiters_test shard_test counter_test gauge_test histogram_test stats_registry_test
              fakes_test access_log_test itest_worker_pool_test itest_timer_threads_test)
tsan_suites='PermitGateTest|PermitTest|PermitWaitTest|CounterTest|GaugeTest|FloatGaugeTest'
tsan_suites+='|HistogramTest|ShardTest|StatsRegistryTest|FakeDispatcherTest|AccessLogTest'
tsan_suites+='|ItestWorkerPoolTest|ItestTimerThreadsTest'

# asan in ci mode: these unit test binaries run directly (no other unit target is built).
asan_ci_unit_targets=(h2_body_buffer_test h2_output_queue_test h2_session_pair_test
                      proxy_grpc_util_test config_error_test units_test config_loader_test
                      filters_test config_dump_test shipped_configs_test
                      queue_resp_parser_test queue_redis_replies_test queue_envelope_test
                      queue_reply_test queue_metadata_codec_test queue_redis_connection_test
                      queue_reply_inbox_test)
tool_targets=(sluice-test-upstream sluice-test-client sluice_test_py sluice-loadgen)

phase_start=0
phase() {
  phase_start=$(date +%s)
  echo "== $*"
}
phase_done() {
  echo "== done in $(($(date +%s) - phase_start))s"
}

# run_modules SLUICE_BIN TOOLS_DIR MODULE...: integration modules with /usr/bin/python3, as
# integration/tests/CMakeLists.txt runs them, with sluice and the test tools from given builds.
run_modules() {
  local sluice=$1 tools=$2
  shift 2
  local m
  for m in "$@"; do
    echo "-- $m"
    (cd integration/tests &&
      SLUICE_BIN="$root/$sluice" \
      TEST_UPSTREAM_BIN="$root/$tools/integration/upstream/sluice-test-upstream" \
      TEST_CLIENT_BIN="$root/$tools/integration/client/sluice-test-client" \
      LOADGEN_BIN="$root/$tools/tools/loadgen/sluice-loadgen" \
      PYTHONPATH="$root/$tools/integration/proto/python:$root/integration/tests" \
      PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m unittest "$m")
  done
}

run_tsan() {
  phase "tsan: configure + build the concurrency tests${tsan_integration:+ and sluice}"
  cmake --preset tsan >/dev/null
  local targets=("${tsan_targets[@]}")
  [ -z "$tsan_integration" ] || targets+=(sluice)
  cmake --build --preset tsan -j "$jobs" --target "${targets[@]}"
  phase_done
  phase "tsan: concurrency unit tests"
  ctest --preset tsan -j "$ctest_jobs" --no-tests=error -R "^($tsan_suites)\\."
  phase_done
  if [ -n "$tsan_integration" ]; then
    phase "tsan: test tools (not instrumented) in $tools_build"
    [ -f "$tools_build/CMakeCache.txt" ] ||
      cmake -S . -B "$tools_build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$tools_build" -j "$jobs" --target "${tool_targets[@]}"
    phase_done
    phase "tsan: sluice under TSan: $tsan_integration"
    # shellcheck disable=SC2086
    run_modules build-tsan/src/sluice "$tools_build" $tsan_integration
    phase_done
  fi
}

run_asan() {
  local scope=$1
  phase "asan: configure + build ($scope)"
  cmake --preset asan >/dev/null
  if [ "$scope" = ci ]; then
    # The test upstream, client and load generator come from the normal build, as for TSan:
    # they are the harness, not what is tested, and building them (gRPC, protobuf code) under
    # ASan cost CI minutes.
    cmake --build --preset asan -j "$jobs" --target sluice "${asan_ci_unit_targets[@]}"
  else
    cmake --build --preset asan -j "$jobs"
  fi
  phase_done
  if [ "$scope" = ci ]; then
    phase "asan: unit tests of h2, proxy, config, queue"
    local t bin
    for t in "${asan_ci_unit_targets[@]}"; do
      bin=$(find build-asan/tests -name "$t" -type f -perm -u+x | head -1)
      [ -n "$bin" ] || { echo "test-sanitizers.sh: $t not built" >&2; exit 1; }
      "$bin" --gtest_brief=1
    done
    phase_done
    phase "asan: test tools (not instrumented) in $tools_build"
    [ -f "$tools_build/CMakeCache.txt" ] ||
      cmake -S . -B "$tools_build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$tools_build" -j "$jobs" --target "${tool_targets[@]}"
    phase_done
    phase "asan: integration: $asan_ci_integration"
    # shellcheck disable=SC2086
    run_modules build-asan/src/sluice "$tools_build" $asan_ci_integration
    phase_done
  else
    phase "asan: unit + integration tests (ctest)"
    ctest --preset asan -j "$ctest_jobs" -L 'unit|integration'
    phase_done
    # The extra modules ctest does not know yet (registered ones already ran above).
    local extra=() m
    for m in $asan_extra_integration; do
      ctest --preset asan -N -R "^integration\.$m\$" | grep -q "Total Tests: 0" && extra+=("$m")
    done
    if [ ${#extra[@]} -gt 0 ]; then
      phase "asan: integration not registered with ctest: ${extra[*]}"
      run_modules build-asan/src/sluice build-asan "${extra[@]}"
      phase_done
    fi
  fi
}

total_start=$(date +%s)
case "$mode" in
  tsan) run_tsan ;;
  asan) run_asan all ;;
  ci) run_tsan; run_asan ci ;;
  all) run_tsan; run_asan all ;;
  *) echo "usage: $0 [tsan|asan|ci|all]" >&2; exit 2 ;;
esac
echo "== sanitizers ($mode) passed in $(($(date +%s) - total_start))s"
