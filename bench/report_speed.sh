#!/usr/bin/env bash
# Reporter speed on a 10M-allocation recording: `memledger report` vs `heaptrack_print`.
#
#   bench/report_speed.sh [--memledger PATH] [--allocs N]
#
# Records malloc_storm (N = 10M malloc/free pairs) once with each profiler, then times each
# reporter on its own recording and reads its peak RSS. memledger records with --no-fold when
# its `record` has that option, so every allocation is a row, as in heaptrack's trace.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

MEMLEDGER="$ROOT/build/bin/memledger"
ALLOCS=10000000
while (($#)); do
  case "$1" in
    --memledger) MEMLEDGER="${2:?}"; shift ;;
    --allocs) ALLOCS="${2:?}"; shift ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "report_speed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

build_workloads || { echo "report_speed.sh: building the workloads failed" >&2; exit 2; }
heaptrack_setup || echo "heaptrack: n/a ($HT_NA)"
memledger_setup "$MEMLEDGER" || echo "memledger: n/a ($ML_NA)"
mkdir -p "$OUT/traces"
M="$OUT/rs.m"
rm -f "$M"*

line() {  # line NAME MEASURE_LINE SIZE_BYTES
  awk -v n="$1" -v w="$(kv wall_s "$2")" -v h="$(kv hwm_kb "$2")" -v s="$3" \
    'BEGIN { printf "  %-28s %8.2f s   peak RSS %8.1f MB   file %8.1f MB\n", n, w, h * 1024 / 1e6, s / 1e6 }'
}

echo "report_speed: malloc_storm, $ALLOCS malloc/free pairs"
if [[ -n "$HT" ]]; then
  t="$OUT/traces/rs.heaptrack"
  rm -f "$t".*
  BENCH_MEASURE="$OUT/measure" BENCH_HT_RSS_OUT="$M.interp" measured "$M.htrec" "$HT" -o "$t" \
    "$OUT/malloc_storm" "$ALLOCS" > /dev/null 2> "$OUT/rs.heaptrack.log"
  f="$(ls "$t".zst "$t".gz 2>/dev/null | head -1)"
  if [[ -n "$f" ]]; then
    measured "$M.htp" heaptrack_print "$f" > /dev/null 2>> "$OUT/rs.heaptrack.log"
    # The script's own RSS is a shell's: the recorder's is heaptrack_interpret's.
    line "heaptrack (record)" "wall_s=$(kv wall_s "$(tail -1 "$M.htrec")") hwm_kb=$(kv hwm_kb "$(tail -1 "$M.interp")")" \
      "$(stat -c %s "$f")"
    line "heaptrack_print" "$(tail -1 "$M.htp")" "$(stat -c %s "$f")"
  else
    echo "  heaptrack: recording failed (see $OUT/rs.heaptrack.log)"
  fi
fi
if [[ -n "$ML" ]]; then
  db="$OUT/traces/rs.memledger.db"
  rm -f "$db" "$db"-*
  fold=()
  "$ML" record --help 2>&1 | grep -q -- '--no-fold' && fold=(--no-fold)
  # Plain SQLite: the row count below reads it with sqlite3, and the report times are the
  # queries' alone (a compressed recording adds its decompression, ~0.1 s per 50 MB).
  "$ML" record --help 2>&1 | grep -q -- '--no-compress' && fold+=(--no-compress)
  measured "$M.mlrec" "$ML" record "${fold[@]}" -o "$db" -- "$OUT/malloc_storm" "$ALLOCS" \
    > /dev/null 2> "$OUT/rs.memledger.log"
  if [[ -s "$db" ]]; then
    rows="$(sqlite3 "$db" 'select count(*) from allocations' 2>/dev/null)"
    measured "$M.mlr" "$ML" report "$db" > /dev/null 2>> "$OUT/rs.memledger.log"
    measured "$M.mlj" "$ML" report "$db" --json > /dev/null 2>> "$OUT/rs.memledger.log"
    line "memledger record ${fold[*]:-(folding)}" "$(tail -1 "$M.mlrec")" "$(stat -c %s "$db")"
    line "memledger report" "$(tail -1 "$M.mlr")" "$(stat -c %s "$db")"
    line "memledger report --json" "$(tail -1 "$M.mlj")" "$(stat -c %s "$db")"
    echo "  (memledger's recording holds $rows allocation rows)"
  else
    echo "  memledger: recording failed: $(grep memledger "$OUT/rs.memledger.log" | tail -1)"
  fi
fi
