#!/usr/bin/env bash
# memledger-gui on a 10M-allocation recording: seconds to an interactive Summary+Timeline and to
# the call trees, range-update times, the GUI thread's longest block, peak RSS vs the file's size.
#
#   bench/gui_speed.sh [--build DIR] [--allocs N] [--db FILE]
#
# Records malloc_storm (N = 10M malloc/free pairs, default) with DIR/bin/memledger (default
# build/), unless --db names a recording, and runs `DIR/bin/memledger-gui FILE --measure`
# offscreen (gui/measure.h says what each figure is). heaptrack_gui has no headless timing mode:
# it is not run beside it.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

BUILD="$ROOT/build"
ALLOCS=10000000
DB=""
while (($#)); do
  case "$1" in
    --build) BUILD="${2:?}"; shift ;;
    --allocs) ALLOCS="${2:?}"; shift ;;
    --db) DB="${2:?}"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gui_speed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

[[ -x "$BUILD/bin/memledger" && -x "$BUILD/bin/memledger-gui" ]] ||
  { echo "gui_speed.sh: needs $BUILD/bin/memledger and $BUILD/bin/memledger-gui (cmake --build $BUILD --target memledger memledger-gui)" >&2; exit 2; }
if [[ -z "$DB" ]]; then
  build_workloads || { echo "gui_speed.sh: building the workloads failed" >&2; exit 2; }
  mkdir -p "$OUT/traces"
  DB="$OUT/traces/gui-storm.memledger.db"
  rm -f "$DB" "$DB"-*
  "$BUILD/bin/memledger" record -o "$DB" -- "$OUT/malloc_storm" "$ALLOCS" >/dev/null 2>"$OUT/gui.record.log" ||
    { echo "gui_speed.sh: recording failed (see $OUT/gui.record.log)" >&2; exit 2; }
fi
echo "gui_speed: $DB ($(du -h "$DB" | cut -f1)), memledger-gui --measure, 3 runs"
for run in 1 2 3; do
  QT_QPA_PLATFORM=offscreen timeout 300 "$BUILD/bin/memledger-gui" "$DB" --measure 2>/dev/null | sed "s/^/  run $run: /"
done
