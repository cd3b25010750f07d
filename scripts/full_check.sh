#!/usr/bin/env bash
# Everything a chapter needs before its results are committed, on a machine with a GPU:
# build, every test (large ones included), the four compute-sanitizer setups, then the
# benchmarks, which write NN_chapter/results/<gpu>.json. Logs go to LOGDIR (default: build-check/logs).
#
#   scripts/full_check.sh [LOGDIR] [meson setup options...]
set -uo pipefail
cd "$(dirname "$0")/.."
logdir=${1:-build-check/logs}
shift || true
mkdir -p "$logdir"
build=build-check

step() { printf '%-28s %s\n' "$1" "$2" | tee -a "$logdir/summary.txt"; }

meson setup "$build" --reconfigure "$@" >"$logdir/setup.log" 2>&1 || meson setup "$build" "$@" >"$logdir/setup.log" 2>&1
meson compile -C "$build" >"$logdir/compile.log" 2>&1 && step compile ok || { step compile FAILED; tail -50 "$logdir/compile.log"; exit 1; }

run_tests() {  # name, meson test args...
  local name=$1; shift
  meson test -C "$build" --print-errorlogs "$@" >"$logdir/$name.log" 2>&1
  local rc=$?
  step "$name" "$( [ $rc = 0 ] && echo ok || echo FAILED) ($(grep -E '^(Ok|Fail|Skipped):' "$logdir/$name.log" | tr -s ' ' | tr '\n' ' '))"
}
run_tests tests
for setup in sanitize racecheck synccheck initcheck; do run_tests "$setup" --setup "$setup"; done

meson test -C "$build" --benchmark --verbose >"$logdir/benchmark.log" 2>&1 && step benchmark ok || step benchmark FAILED
grep -E '^\S.*(pass|FAIL|skipped)$|copy ceiling|floor:|^version' "$logdir/benchmark.log" | tail -40
cat "$logdir/summary.txt"
