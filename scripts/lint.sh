#!/usr/bin/env bash
# The linters the style guide promises, all of which must pass in CI (.ci/run):
#   - clang-format: every C++ file, check mode (.clang-format: Google, 100 columns);
#   - clang-tidy: src/ and filters/ (.clang-tidy: bugprone, performance, concurrency, modernize),
#     with the compile commands of a configured build ($BUILD_DIR, default build);
#   - ShellCheck: every shell script;
#   - flake8: the Python of bench/, integration/, scripts/, tests/, fuzz/ and tools/ (.flake8).
# yamllint runs as a ctest test (tests/deploy), over docker/ and config/.
#
# Usage: scripts/lint.sh [format|tidy|shell|python|all]   (default all)
# Environment: BUILD_DIR (default build), JOBS (clang-tidy processes, default 2).
# Exits non-zero when any linter reports anything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh lint

what=${1:-all}
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-2}
failed=()

run() {
  local name=$1
  shift
  local start
  start=$(date +%s)
  echo "== lint: $name"
  if "$@"; then
    echo "== lint: $name clean ($(($(date +%s) - start)) s)"
  else
    echo "== lint: $name FAILED ($(($(date +%s) - start)) s)"
    failed+=("$name")
  fi
}

lint_format() {
  git ls-files -z '*.cc' '*.h' | xargs -0 clang-format --dry-run --Werror
}

lint_tidy() {
  if [ ! -f "$build_dir/compile_commands.json" ]; then
    echo "no $build_dir/compile_commands.json: configure a build first (scripts/build.sh)" >&2
    return 1
  fi
  # The translation units of src/ and filters/ the build compiles: the sources themselves, or in
  # a unity build (SLUICE_UNITY_BUILD) the unity files that include them, a dozen instead of ~95
  # (each parses the Asio headers once: about a tenth of the time). Diagnostics are reported in
  # the included sources all the same (HeaderFilterRegex).
  local files=()
  mapfile -t files < <(/usr/bin/python3 - "$build_dir" "$PWD" <<'PY'
import json, os, sys
build, root = os.path.realpath(sys.argv[1]), sys.argv[2]
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = os.path.realpath(os.path.join(e["directory"], e["file"]))
    for top in ("src", "filters"):
        if f.startswith(os.path.join(root, top) + "/") or f.startswith(os.path.join(build, top) + "/"):
            if f.endswith((".cc", ".cxx")) and not f.endswith("dashboard_page.cc"):
                print(f)
PY
  )
  if [ ${#files[@]} -eq 0 ]; then
    echo "no sources of src/ or filters/ in $build_dir/compile_commands.json" >&2
    return 1
  fi
  echo "clang-tidy over ${#files[@]} translation units"
  # run-clang-tidy prints each file's command and diagnostics; -quiet drops the command lines.
  # Its exit status is non-zero when any file has a warning (WarningsAsErrors: '*').
  local out
  out=$(mktemp)
  if run-clang-tidy -p "$build_dir" -j "$jobs" -quiet "${files[@]}" >"$out" 2>&1; then
    rm -f "$out"
    return 0
  fi
  grep -E "(warning|error):" "$out" | grep -v "warnings generated" | sort -u || cat "$out"
  rm -f "$out"
  return 1
}

lint_shell() {
  git ls-files -z '*.sh' | xargs -0 shellcheck
}

lint_python() {
  flake8 bench integration scripts tests fuzz tools
}

case "$what" in
  format) run clang-format lint_format ;;
  tidy) run clang-tidy lint_tidy ;;
  shell) run shellcheck lint_shell ;;
  python) run flake8 lint_python ;;
  all)
    run clang-format lint_format
    run shellcheck lint_shell
    run flake8 lint_python
    run clang-tidy lint_tidy
    ;;
  *) echo "usage: $0 [format|tidy|shell|python|all]" >&2; exit 2 ;;
esac

if [ ${#failed[@]} -gt 0 ]; then
  echo "lint failed: ${failed[*]}" >&2
  exit 1
fi
echo "lint: all clean"
