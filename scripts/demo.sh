#!/usr/bin/env bash
# The first thing to run: installs what is missing, builds, and shows what sluice is for.
#
# A gRPC service with one worker slows down (10 ms -> 40 ms -> 10 ms per call) while clients keep
# sending 80 calls/s. The demo runs that story three times, about 20 s each, through sluice with:
#   no_filter           - sluice only proxies: the backlog grows, most calls time out;
#   fixed_1             - the best fixed limit (from bench/results/slowdown.md) behind a 100 ms
#                         queue-wait budget: excess calls are shed fast with RESOURCE_EXHAUSTED;
#   rtt_gradient_alifo  - the adaptive limit, not told the worker count, with adaptive LIFO.
# It prints the per-phase table, writes plots to bench/results/demo-*.png, and gives the
# dashboard's address while each policy runs (http://127.0.0.1:9901/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo
echo "demo: building sluice, the test upstream and the load generator (first time: a few minutes)"
TARGETS="sluice sluice-test-upstream sluice-loadgen sluice_test_py" scripts/build.sh \
  -DSLUICE_BUILD_TESTS=ON
admin_port=9901
if (exec 3<>"/dev/tcp/127.0.0.1/$admin_port") 2>/dev/null; then
  admin_port=0  # taken: use an ephemeral port (the log says which)
fi
exec /usr/bin/python3 bench/slowdown.py --build "${BUILD_DIR:-build}" \
  --policies no_filter,fixed_1,rtt_gradient_alifo --reps 1 --phase-seconds 6 \
  --name demo --admin-port "$admin_port" --print-table
