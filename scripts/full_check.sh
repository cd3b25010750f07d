#!/usr/bin/env bash
# Everything behind a chapter's committed results, on a machine with a GPU, through ./tutorial:
#   tests    build; every test; the > 2^31-element suite; the four compute-sanitizer setups
#   measure  the benchmarks, the Nsight Compute profile, the size sweep and the PyTorch peers,
#            all into BUILD/results/ (then `./tutorial publish` commits them to the chapters)
#   all      both (the default)
# Logs go to BUILD/check-logs/; a one-line verdict per step to BUILD/check-logs/summary.txt.
#
#   scripts/full_check.sh [tests|measure|all] [--builddir DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
build=build
if [ "${1:-}" = "--builddir" ]; then build=$2; fi
logs="$build/check-logs"
mkdir -p "$logs"

step() {  # name, command...: runs it, logs it, records the verdict and how long it took
  local name=$1 start rc
  shift
  start=$(date +%s)
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  local verdict=ok
  [ $rc = 0 ] || verdict="FAILED (rc $rc)"
  [ $rc = 77 ] && verdict="skipped"
  printf '%-10s %-16s %4ss  %s\n' "$name" "$verdict" "$(($(date +%s) - start))" \
    "$(grep -E '^[0-9]+ passed|^(Ok|Fail|Skipped):' "$logs/$name.log" | tr -s ' ' | tr '\n' ' ')" | tee -a "$logs/summary.txt"
  return 0
}

./tutorial --builddir "$build" build >"$logs/build.log" 2>&1 || { tail -40 "$logs/build.log"; exit 1; }
if [ "$what" = tests ] || [ "$what" = all ]; then
  step tests ./tutorial --builddir "$build" test
  step large ./tutorial --builddir "$build" test --suite large
  for setup in sanitize racecheck synccheck initcheck; do
    step "$setup" ./tutorial --builddir "$build" test --setup "$setup"
  done
fi
if [ "$what" = measure ] || [ "$what" = all ]; then
  step bench ./tutorial --builddir "$build" bench
  step profile ./tutorial --builddir "$build" profile
  step sweep ./tutorial --builddir "$build" sweep
  step peers ./tutorial --builddir "$build" peers
fi
cat "$logs/summary.txt"
