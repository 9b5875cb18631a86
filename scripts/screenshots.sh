#!/usr/bin/env bash
# Makes the README's and docs/gui.md's screenshots again, headless, from the bundled samples:
#   scripts/screenshots.sh [OUT_DIR]        (default: docs/screenshots)
# It needs a build (scripts/build.sh; BUILD_DIR as there) and Debian's /usr/bin/python3 for the
# Python run. Each picture is a `memledger-gui FILE --screenshot` of a fresh recording, so the
# numbers in it are those of this machine's run (times and addresses differ from run to run).
# Not made here: fragmentation-device.png, which needs the fake CUDA driver of tests/cupti
# (GuiFragmentationTests draws the same view).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
out="${1:-docs/screenshots}"
ml="$build/bin/memledger"
gui="$build/bin/memledger-gui"
samples="$build/samples"
for f in "$ml" "$gui" "$samples/demo_leaky_peaky"; do
  [[ -x "$f" ]] || { echo "screenshots: $f is missing: build first (scripts/build.sh)" >&2; exit 2; }
done
mkdir -p "$out"
tmp="$(mktemp -d /tmp/memledger-screenshots.XXXX)"
trap 'rm -rf "$tmp"' EXIT
export QT_QPA_PLATFORM=offscreen

# rec NAME [record options] -- COMMAND...: records into $tmp/NAME.db (the program's output dropped).
rec() {
  local name="$1"
  shift
  "$ml" record -o "$tmp/$name.db" "$@" > "$tmp/$name.log" 2>&1 || true
  [[ -s "$tmp/$name.db" ]] || { echo "screenshots: recording $name failed:" >&2; cat "$tmp/$name.log" >&2; exit 1; }
}
# shot NAME OUT.png [memledger-gui options]: one view of $tmp/NAME.db.
shot() {
  local name="$1" png="$2"
  shift 2
  "$gui" "$tmp/$name.db" --screenshot "$out/$png" "$@" 2> "$tmp/gui.log" ||
    { echo "screenshots: $png failed:" >&2; cat "$tmp/gui.log" >&2; exit 1; }
  echo "$out/$png"
}

rec demo -- "$samples/demo_leaky_peaky"
shot demo summary.png --view summary
shot demo charts-allocations.png --view charts --chart allocations
shot demo live-at.png --view bottom-up --at 30ms
shot demo leaks.png --view leaks
shot demo sizes.png --view sizes

rec three -- "$samples/three_phases"
shot three charts.png --view charts --chart consumed
shot three summary-dark.png --view summary --dark
# Phase 1, selected as a drag over it on the timeline would.
phase1="$("$ml" phases "$tmp/three.db" --json | /usr/bin/python3 -c '
import json, sys
p = json.load(sys.stdin)["phases"][0]
print("%dns:%dns" % (p["start_ns"], p["end_ns"]))')"
shot three top-down-range.png --view top-down --range "$phase1"

rec ci_leaky_leak10 -- "$samples/ci_leaky" leak 10
rec ci_leaky_peak4m -- "$samples/ci_leaky" peak 4000000
shot ci_leaky_leak10 compare.png --compare "$tmp/ci_leaky_peak4m.db" --view compare
shot ci_leaky_leak10 compare-bottom-up.png --compare "$tmp/ci_leaky_peak4m.db" --view bottom-up
shot ci_leaky_leak10 compare-leaks.png --compare "$tmp/ci_leaky_peak4m.db" --view leaks

rec holes --no-fold -- "$samples/heap_holes"
shot holes fragmentation.png --view fragmentation

if [[ -x /usr/bin/python3 ]]; then
  rec python -- /usr/bin/python3 samples/python/leaky.py
  shot python flamegraph.png --view flamegraph
  shot python bottom-up-python.png --view bottom-up
else
  echo "screenshots: no /usr/bin/python3: flamegraph.png and bottom-up-python.png not made" >&2
fi
