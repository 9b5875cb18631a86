#!/usr/bin/env bash
# Soak: a multi-threaded allocation storm recorded for SECONDS (default 60).
#
#   bench/soak.sh [SECONDS] [--memledger PATH]
#
# Reports the recorder's sustained throughput (allocations + frees recorded per second), its peak
# RSS (VmHWM of `memledger record` itself, not the program's), the total time the program's
# threads waited for ring space (meta wait_ns) and lost records; and, for scale, the storm's own
# rate without a profiler over a short run. Exits 1 when the recording holds fewer events than
# the program reports having made (records were lost), 2 when it cannot run at all.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

SECONDS_WANTED=60
MEMLEDGER="$ROOT/build/bin/memledger"
while (($#)); do
  case "$1" in
    --memledger) MEMLEDGER="${2:?}"; shift ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) [[ "$1" =~ ^[1-9][0-9]*$ ]] || { echo "soak.sh: SECONDS must be a positive integer" >&2; exit 2; }
       SECONDS_WANTED="$1" ;;
  esac
  shift
done

build_workloads || { echo "soak.sh: building the workloads failed" >&2; exit 2; }
memledger_setup "$MEMLEDGER" || { echo "soak.sh: memledger: n/a ($ML_NA)"; exit 2; }
THREADS=4
pairs_of() { sed -n 's/^mt_storm: \([0-9]*\) malloc\/free pairs.*/\1/p' "$1" | tail -1; }

# The storm's unprofiled rate, over a fifth of the soak (at most 10 s).
short=$(( SECONDS_WANTED / 5 )); ((short < 1)) && short=1; ((short > 10)) && short=10
"$OUT/mt_storm" --threads $THREADS --seconds "$short" 2> "$OUT/soak.base.log"
base_pairs="$(pairs_of "$OUT/soak.base.log")"

db="$OUT/traces/soak.memledger.db"
mkdir -p "$OUT/traces"
rm -f "$db" "$db"-* "$OUT/soak.m"
echo "soak: recording $THREADS threads storming for ${SECONDS_WANTED}s..."
measured "$OUT/soak.m" "$ML" record -o "$db" -- "$OUT/mt_storm" --threads $THREADS --seconds "$SECONDS_WANTED" \
  2> "$OUT/soak.log"
rc=$?
m="$(tail -1 "$OUT/soak.m" 2>/dev/null)"
if ((rc != 0)) || [[ ! -s "$db" ]]; then
  echo "soak.sh: the recording failed (exit $rc): $(grep -v '^mt_storm' "$OUT/soak.log" | tail -1)"
  exit 2
fi
pairs="$(pairs_of "$OUT/soak.log")"
wall="$(kv wall_s "$m")"
facts="$(recording_facts "$ML" "$db")"
events="$(kv events "$facts")"
wait_ns="$(kv wait_ns "$facts")"
lost="$(kv lost "$facts")"
duration_ns="$(kv duration_ns "$facts")"

awk -v e="$events" -v w="$wall" -v p="$pairs" -v bp="$base_pairs" -v bs="$short" \
    -v hwm="$(kv hwm_kb "$m")" -v wn="${wait_ns:-0}" -v lost="${lost:-?}" -v d="${duration_ns:-0}" \
    -v s="$SECONDS_WANTED" -v size="$(stat -c %s "$db")" 'BEGIN {
  printf "soak: %d s storm, %d threads\n", s, 4
  printf "  program made        %d allocations + %d frees (%.2f M events/s while recorded)\n", p, p, 2 * p / s / 1e6
  printf "  unprofiled rate     %.2f M events/s (%d s run)\n", 2 * bp / bs / 1e6, bs
  printf "  recorded            %d events in %.1f s end to end: %.2f M events/s\n", e, w, e / w / 1e6
  printf "  recording duration  %.1f s (meta duration_ns)\n", d / 1e9
  printf "  recorder peak RSS   %.1f MB\n", hwm * 1024 / 1e6
  printf "  program waited      %.1f ms for ring space (meta wait_ns, summed over threads: %.1f%% of the %d threads x %d s)\n", wn / 1e6, 100 * wn / 1e9 / (4 * s), 4, s
  printf "  lost records        %s\n", lost
  printf "  recording size      %.1f MB\n", size / 1e6
}'
if (( events < 2 * pairs )); then
  echo "soak.sh: the recording holds $events events but the program made $((2 * pairs)): records were lost"
  exit 1
fi
