#!/usr/bin/env bash
# The heap curve of a 10M-allocation recording downsampled to 2000 points (analyzer/curve.h):
# how many milliseconds analyzer::curve() takes, and whether the exact peak was kept.
#
#   bench/curve_speed.sh [--build DIR] [--allocs N] [--points N]
#
# Records malloc_storm (N = 10M malloc/free pairs) with DIR/bin/memledger (default build/) twice:
# with the default 1 ms timeline buckets (about a thousand buckets: fewer than the points, the
# curve is read and not folded) and with 1 us buckets (about a million: what a busy hour makes
# at 1 ms). Builds bench/tools/curve_bench.cpp against DIR's analyzer library and runs it on each.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

BUILD="$ROOT/build"
ALLOCS=10000000
POINTS=2000
while (($#)); do
  case "$1" in
    --build) BUILD="${2:?}"; shift ;;
    --allocs) ALLOCS="${2:?}"; shift ;;
    --points) POINTS="${2:?}"; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "curve_speed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

lib="$BUILD/lib/libmemledger_analyzer.a"
[[ -x "$BUILD/bin/memledger" && -f "$lib" ]] ||
  { echo "curve_speed.sh: needs $BUILD/bin/memledger and $lib (cmake --build $BUILD --target memledger)" >&2; exit 2; }
build_workloads || { echo "curve_speed.sh: building the workloads failed" >&2; exit 2; }
"${CXX:-g++}" -O2 -std=c++20 -I"$ROOT" -o "$OUT/curve_bench" "$BENCH/tools/curve_bench.cpp" "$lib" \
  -lsqlite3 -lzstd -lprotobuf -lz -pthread || { echo "curve_speed.sh: building curve_bench failed" >&2; exit 2; }

mkdir -p "$OUT/traces"
echo "curve_speed: malloc_storm, $ALLOCS malloc/free pairs, recorded with $BUILD/bin/memledger, $POINTS points"
status=0
for bucket in 1 0.001; do
  db="$OUT/traces/curve-$bucket.memledger.db"
  rm -f "$db" "$db"-*
  t0=$(date +%s.%N)
  "$BUILD/bin/memledger" record --bucket-ms "$bucket" -o "$db" -- "$OUT/malloc_storm" "$ALLOCS" >/dev/null \
    2>"$OUT/curve.record.log" || { echo "curve_speed.sh: recording failed (see $OUT/curve.record.log)" >&2; exit 2; }
  awk -v a="$t0" -v b="$(date +%s.%N)" -v w="$bucket" 'BEGIN { printf "  --bucket-ms %s: recorded in %.1f s\n", w, b - a }'
  "$OUT/curve_bench" "$db" "$POINTS" 5 | sed 's/^/    /'
  ((PIPESTATUS[0] == 0)) || status=1
done
exit "$status"
