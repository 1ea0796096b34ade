#!/usr/bin/env bash
# Runs every scenario in --smoke mode (about 10-60 s each) so CI keeps the scripts working.
# Usage: bench/smoke.sh [BUILD_DIR]   Results go to a temp dir, not bench/results/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${SLUICE_BUILD_DIR:-}}
out=$(mktemp -d /tmp/sluice-bench-smoke-XXXXXX)
args=(--smoke --out "$out")
[ -n "$build" ] && args+=(--build "$build")
passed=0
failed=0
for s in read_pacing slowdown concurrency_sweep stall proxy_cost \
  variable_service method_mix criticality stall_max queue_vs_push; do
  if /usr/bin/python3 "$here/$s.py" "${args[@]}"; then
    passed=$((passed + 1))
  else
    echo "bench smoke: $s FAILED" >&2
    failed=$((failed + 1))
  fi
done
echo "bench smoke: reports in $out"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
