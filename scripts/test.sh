#!/usr/bin/env bash
# The one test command: installs what is missing, builds, runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
# playwright-core for the dashboard browser test, pinned by integration/dashboard/package-lock.json.
(cd integration/dashboard && npm ci --no-audit --no-fund --loglevel=error)
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j "${CTEST_JOBS:-2}" "$@"
