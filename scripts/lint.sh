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
  local files=()
  mapfile -t files < <(git ls-files 'src/*.cc' 'filters/*.cc')
  # run-clang-tidy prints each file's command and diagnostics; -quiet drops the command lines.
  # Its exit status is non-zero when any file has a warning (WarningsAsErrors: '*').
  local out
  out=$(mktemp)
  if run-clang-tidy -p "$build_dir" -j "$jobs" -quiet "${files[@]/#/$PWD/}" >"$out" 2>&1; then
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
