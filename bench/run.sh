#!/usr/bin/env bash
# memledger vs heaptrack vs no profiler, end to end, on six workloads.
#
#   bench/run.sh [--quick] [--runs N] [--memledger PATH] [--build] [WORKLOAD...]
#
#   --quick           one run of each (default: 3, or --runs N)
#   --memledger PATH  the memledger binary (default build/bin/memledger)
#   --build           run ./scripts/build.sh first (builds build/bin/memledger)
#   WORKLOAD          any of: malloc_storm mt_storm mt_paced py_dict sqlite_insert torch_mlp
#                     (default: all)
#
# For each workload the three modes run interleaved (baseline, heaptrack, memledger, then again),
# so slow drift of a shared machine hits them alike. Times are wall clock of the whole command:
# heaptrack's includes its interpreter and compressor, memledger's includes symbolization. Each
# recording is then read by its own reporter (heaptrack_print, memledger report), timed too.
# Raw numbers go to bench/out/results.tsv; bench/summarize.py turns them into the table printed
# here and written to bench/RESULTS.md (never edit that file by hand: rerun this script).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
COMMAND_USED="bench/run.sh $*"

RUNS=3 BUILD=0
MEMLEDGER="$ROOT/build/bin/memledger"
WORKLOADS=()
while (($#)); do
  case "$1" in
    --quick) RUNS=1 ;;
    --runs) RUNS="${2:?--runs needs a number}"; shift ;;
    --memledger) MEMLEDGER="${2:?--memledger needs a path}"; shift ;;
    --build) BUILD=1 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) WORKLOADS+=("$1") ;;
  esac
  shift
done
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --runs wants a positive number" >&2; exit 2; }
((${#WORKLOADS[@]})) || WORKLOADS=("${ALL_WORKLOADS[@]}")
for w in "${WORKLOADS[@]}"; do
  workload_cmd "$w" || { echo "run.sh: $WL_SKIP" >&2; exit 2; }
done
MEMLEDGER="$(readlink -f "$MEMLEDGER" 2>/dev/null || echo "$MEMLEDGER")"

if ((BUILD)); then
  (cd "$ROOT" && ./scripts/build.sh) || { echo "run.sh: ./scripts/build.sh failed" >&2; exit 1; }
fi
build_workloads || { echo "run.sh: building the workloads failed" >&2; exit 1; }
heaptrack_setup
memledger_setup "$MEMLEDGER"

RES="$OUT/results.tsv" INFO="$OUT/results.info"
LOGS="$OUT/logs"
mkdir -p "$LOGS" "$OUT/traces"
rm -f "$LOGS"/*.log
printf 'workload\tmode\trun\twall_s\tstatus\thwm_kb\ttree_kb\trecorder_kb\tsize_bytes\treport_s\treport_kb\treport_status\tevents\twait_ns\trecorder_cpu_ns\n' > "$RES"
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine=$(machine_line)"
  echo "load=$(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)"
  echo "command=$COMMAND_USED"
  echo "runs=$RUNS"
  echo "run_timeout=$RUN_TIMEOUT"
  echo "report_timeout=$REPORT_TIMEOUT"
  # A binary built from a working tree with uncommitted sources is not quite that commit: say so.
  dirty="$(git -C "$ROOT" status --porcelain -- interpose recorder cli analyzer 2>/dev/null | wc -l)"
  echo "git=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$( ((dirty)) &&
    echo " with $dirty memledger source file(s) uncommitted at run time")"
  echo "heaptrack=${HT_VERSION:-n/a}"
  echo "heaptrack_na=$HT_NA"
  echo "memledger=${ML_VERSION:-memledger n/a} ($MEMLEDGER)"
  echo "memledger_na=$ML_NA"
} > "$INFO"
[[ -n "$HT_NA" ]] && echo "heaptrack: n/a ($HT_NA)"
[[ -n "$ML_NA" ]] && echo "memledger: n/a ($ML_NA)"

# row WORKLOAD MODE RUN MEASURE_LINE [recorder_kb size report_line events wait_ns recorder_cpu_ns]
row() {
  local m="$4" r="${7:-}" rstatus=""
  # A reporter killed by the timeout leaves no measure line at all.
  [[ -z "$r" && "$2" != base ]] && rstatus=killed
  [[ -n "$r" ]] && rstatus="$(kv status "$r")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" \
    "$(kv wall_s "$m")" "$(kv status "$m")" "$(kv hwm_kb "$m")" "$(kv tree_maxrss_kb "$m")" \
    "${5:-}" "${6:-}" "$(kv wall_s "$r")" "$(kv hwm_kb "$r")" "$rstatus" "${8:-}" "${9:-}" "${10:-}" >> "$RES"
}

# Runs one measured command with the workload's environment; the program's stdout is dropped
# (the sqlite shell prints its query result), stderr goes to the run's log.
run_measured() {  # run_measured MFILE LOG CMD...
  local mfile="$1" log="$2"; shift 2
  rm -f "$mfile" "$mfile.interp"
  # A subshell, so the workload's variables (PYTHONMALLOC) reach only this command.
  (
    export "${WL_ENV[@]}" BENCH_MEASURE="$OUT/measure" BENCH_HT_RSS_OUT="$mfile.interp"
    measured "$mfile" "$@" > /dev/null 2> "$log"
  )
}

last_line() { [[ -s "$1" ]] && tail -1 "$1" || echo ""; }

for w in "${WORKLOADS[@]}"; do
  workload_cmd "$w"
  if [[ -n "$WL_SKIP" ]]; then
    echo "$w: skipped ($WL_SKIP)"
    echo "skip_$w=$WL_SKIP" >> "$INFO"
    continue
  fi
  for ((r = 1; r <= RUNS; ++r)); do
    m="$OUT/m.$w"
    log="$LOGS/$w.base.$r.log"
    if run_measured "$m" "$log" "${WL_CMD[@]}"; then
      row "$w" base "$r" "$(last_line "$m")"
      echo "$w run $r: baseline $(kv wall_s "$(last_line "$m")") s"
    else
      echo "$w run $r: baseline FAILED (exit $?; see $log)"
      echo "fail_${w}_base=baseline exit status $(kv status "$(last_line "$m")"); see bench/out/logs/$(basename "$log")" >> "$INFO"
      continue
    fi

    if [[ -n "$HT" ]]; then
      t="$OUT/traces/$w.heaptrack"
      rm -f "$t".*
      log="$LOGS/$w.heaptrack.$r.log"
      if run_measured "$m" "$log" "$HT" -o "$t" "${WL_CMD[@]}"; then
        f="$(ls "$t".zst "$t".gz 2>/dev/null | head -1)"
        rm -f "$m.rep"
        MEASURE_TIMEOUT=$REPORT_TIMEOUT measured "$m.rep" heaptrack_print "$f" > /dev/null 2>> "$log"
        row "$w" heaptrack "$r" "$(last_line "$m")" "$(kv hwm_kb "$(last_line "$m.interp")")" \
          "$(stat -c %s "$f")" "$(last_line "$m.rep")"
        echo "$w run $r: heaptrack $(kv wall_s "$(last_line "$m")") s, heaptrack_print $(kv wall_s "$(last_line "$m.rep")") s"
      else
        echo "$w run $r: heaptrack FAILED (see $log)"
        echo "fail_${w}_heaptrack=heaptrack exit status $(kv status "$(last_line "$m")"); see bench/out/logs/$(basename "$log")" >> "$INFO"
      fi
    fi

    if [[ -n "$ML" ]]; then
      db="$OUT/traces/$w.memledger.db"
      rm -f "$db" "$db"-*
      log="$LOGS/$w.memledger.$r.log"
      if run_measured "$m" "$log" "$ML" record -o "$db" -- "${WL_CMD[@]}" && [[ -s "$db" ]]; then
        rm -f "$m.rep"
        MEASURE_TIMEOUT=$REPORT_TIMEOUT measured "$m.rep" "$ML" report "$db" > /dev/null 2>> "$log"
        facts="$(recording_facts "$ML" "$db")"
        events="$(kv events "$facts")"
        wait_ns="$(kv wait_ns "$facts")"
        row "$w" memledger "$r" "$(last_line "$m")" "$(kv hwm_kb "$(last_line "$m")")" \
          "$(stat -c %s "$db")" "$(last_line "$m.rep")" "$events" "$wait_ns" \
          "$(kv recorder_cpu_ns "$facts")"
        echo "$w run $r: memledger $(kv wall_s "$(last_line "$m")") s, report $(kv wall_s "$(last_line "$m.rep")") s"
      else
        reason="exit status $(kv status "$(last_line "$m")"): $(grep 'memledger' "$log" | tail -1)"
        echo "$w run $r: memledger FAILED ($reason; see $log)"
        echo "fail_${w}_memledger=$reason" >> "$INFO"
      fi
    fi
  done
done

/usr/bin/python3 "$BENCH/summarize.py" "$RES" "$INFO" "$BENCH/RESULTS.md"
