#!/usr/bin/env bash
# Everything behind a chapter's committed results, on a machine with a GPU, through ./tutorial:
#   tests    build; every test; the > 2^31-element suite; the four compute-sanitizer setups
#   measure  the benchmarks, the Nsight Compute profile, the size sweep and the PyTorch peers,
#            all into BUILD/results/ (then `./tutorial publish` commits them to the chapters)
#   all      both (the default)
# Logs go to BUILD/check-logs/; a one-line verdict per step to BUILD/check-logs/summary.txt.
#
#   scripts/full_check.sh [tests|measure|all] [--builddir DIR] [--chapter CH]
#
# --chapter CH keeps one chapter (its tests, its GPU tests under the sanitizers, its benchmark,
# profile, sweep and peers); without it, every chapter.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
shift || true
build=build
chapter=
while [ $# -gt 0 ]; do
  case "$1" in
    --builddir) build=$2; shift 2 ;;
    --chapter) chapter=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
# meson test's --suite argument for one suite ("" for all) of --chapter's tests, or of every chapter's.
suite() { [ -n "$chapter" ] && echo "--suite $chapter${1:+:$1}" || { [ -n "$1" ] && echo "--suite $1"; }; }
logs="$build/check-logs"
mkdir -p "$logs"
: >"$logs/summary.txt"

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
  # shellcheck disable=SC2046  # the --suite words split on purpose
  step tests ./tutorial --builddir "$build" test $(suite "") ${chapter:+--no-suite $chapter:large}
  step large ./tutorial --builddir "$build" test $(suite large)
  # A chapter's whole suite would bring back the suites the sanitizer setups leave out; its gpu
  # suite is what they are for.
  for setup in sanitize racecheck synccheck initcheck; do
    step "$setup" ./tutorial --builddir "$build" test --setup "$setup" $([ -n "$chapter" ] && suite gpu)
  done
fi
if [ "$what" = measure ] || [ "$what" = all ]; then
  step bench ./tutorial --builddir "$build" bench $(suite "")
  step profile ./tutorial --builddir "$build" profile $chapter
  step sweep ./tutorial --builddir "$build" sweep $chapter
  step peers ./tutorial --builddir "$build" peers $chapter
fi
cat "$logs/summary.txt"
