#!/usr/bin/env bash
# memledger-gui's speed on four recordings, every figure of its speed targets, beside heaptrack_gui.
#
#   bench/gui_speed.sh [--build DIR] [--runs N] [--only NAME[,NAME...]] [--no-heaptrack]
#
# Recordings (made with DIR/bin/memledger, default build/, into bench/out/traces):
#   storm      malloc_storm, 10^7 malloc/free pairs, the default 1 ms timeline buckets
#   storm_1us  the same with --bucket-ms 0.001: 10^6 timeline buckets
#   py_deep    Debian's python3 on workloads/py_deep.py: 16,384 Python paths ~70 frames deep
#   torch_mlp  Debian's python3 on workloads/torch_mlp.py (skipped, with the reason, without torch)
# Each is opened N times (default 3) by `memledger-gui FILE --measure` offscreen (gui/measure.h
# says what each figure is); the line after the runs gives their medians against the targets:
# interactive Summary+Timeline < 1 s, a range in every view < 200 ms (and the CPU time all of the
# process's threads spent on it, which a loaded machine does not stretch), no GUI-thread event
# > 16 ms (wall, and the GUI thread's own CPU time: on a loaded machine a wall time also counts
# the time other processes held the core), peak RSS <= 2x the recording (both sizes: the zstd file
# on disk and the SQLite database it inflates to, which is what is read).
#
# heaptrack beside it: the same workload recorded by heaptrack (bench/lib.sh), then
#  - heaptrack_gui (Debian's heaptrack-gui) opening it to its first screen, under xvfb-run: it has
#    no headless or timing mode, so it runs with QT_USE_NATIVE_WINDOWS=1 and xdotool counts its
#    visible windows every 0.1 s; its loading page has a handful, its results page (summary and
#    bottom-up tree: heaptrack's first screen) several times more. The figure is the first sample
#    past twice the loading page's count (so +-0.1 s, and native windows cost it a little),
#    with its VmHWM then. Needs heaptrack-gui, xvfb-run and xdotool (MEMLEDGER_DEPS_BENCH=1
#    scripts/deps.sh); else it says which is missing.
#  - heaptrack_print on the same file: the same parse heaptrack_gui does before its first screen,
#    printed as text (time and peak RSS; its closest headless figure).
# storm_1us has no heaptrack counterpart (heaptrack has no timeline buckets: it is storm's file).
# Compare mode (py_deep and torch_mlp): a second run of the same workload recorded, then
# `memledger-gui A --compare B --screenshot --view flamegraph` (open both, the Compare table, the
# B − A trees and flame graph: wall time and peak RSS until the shot is written) and
# `memledger diff A B`; beside them `heaptrack_print --diff` on heaptrack's two files of the same
# runs (its headless diff: heaptrack_gui's compare mode parses the same way).
set -uo pipefail
source "$(dirname "$0")/lib.sh"

BUILD="$ROOT/build"
RUNS=3
ONLY=""
HEAPTRACK=1
while (($#)); do
  case "$1" in
    --build) BUILD="${2:?}"; shift ;;
    --runs) RUNS="${2:?}"; shift ;;
    --only) ONLY="${2:?}"; shift ;;
    --no-heaptrack) HEAPTRACK=0 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gui_speed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

[[ -x "$BUILD/bin/memledger" && -x "$BUILD/bin/memledger-gui" ]] ||
  { echo "gui_speed.sh: needs $BUILD/bin/memledger and $BUILD/bin/memledger-gui (cmake --build $BUILD --target memledger memledger-gui)" >&2; exit 2; }
build_workloads || { echo "gui_speed.sh: building the workloads failed" >&2; exit 2; }
mkdir -p "$OUT/traces"
PY=/usr/bin/python3

wanted() { [[ -z "$ONLY" || ",$ONLY," == *",$1,"* ]]; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
load() { cut -d' ' -f1 /proc/loadavg; }

# heaptrack_gui's first screen: seconds and VmHWM (MiB) as "S MIB", or "n/a (reason)".
heaptrack_gui_first_screen() {
  local file="$1" missing=""
  command -v heaptrack_gui >/dev/null || missing+=" heaptrack_gui"
  command -v xvfb-run >/dev/null || missing+=" xvfb-run"
  command -v xdotool >/dev/null || missing+=" xdotool"
  [[ -z "$missing" ]] || { echo "n/a (missing:$missing; MEMLEDGER_DEPS_BENCH=1 scripts/deps.sh)"; return; }
  local probe="$OUT/heaptrack_gui_probe.sh"
  cat > "$probe" <<'EOF'
#!/usr/bin/env bash
# Runs inside xvfb-run: starts heaptrack_gui on $1, prints "SECONDS VMHWM_KB" at its first screen.
QT_USE_NATIVE_WINDOWS=1 heaptrack_gui "$1" >/dev/null 2>&1 &
pid=$!
t0=$(date +%s%N)
first=0
for _ in $(seq 1 3000); do
  sleep 0.1
  n=$(xdotool search --onlyvisible --class heaptrack 2>/dev/null | wc -l)
  if ((first == 0 && n > 0)); then first=$n; fi
  if ((first > 0 && n > 2 * first)); then
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
    echo "$(( ($(date +%s%N) - t0) / 1000000 )) $hwm"
    kill "$pid"; wait "$pid" 2>/dev/null
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || { echo "exited"; exit 1; }
done
kill "$pid"; echo "timeout"; exit 1
EOF
  chmod +x "$probe"
  local r
  r="$(timeout 400 xvfb-run -a -s "-screen 0 1600x1000x24" "$probe" "$file" 2>/dev/null | tail -1)"
  if [[ "$r" =~ ^([0-9]+)\ ([0-9]+)$ ]]; then
    awk -v ms="${BASH_REMATCH[1]}" -v kb="${BASH_REMATCH[2]}" 'BEGIN { printf "%.2f s, VmHWM %.0f MiB", ms / 1000, kb / 1024 }'
  else
    echo "n/a (${r:-no answer})"
  fi
}

heaptrack_side() {  # heaptrack_side NAME CMD...
  local name="$1"; shift
  ((HEAPTRACK)) || return 0
  if ! heaptrack_setup; then echo "  heaptrack: n/a ($HT_NA)"; return; fi
  local ht="$OUT/traces/gui-$name.heaptrack"
  rm -f "$ht".*
  "$HT" -o "$ht" "$@" >/dev/null 2>"$OUT/gui.$name.heaptrack.log" ||
    { echo "  heaptrack: recording failed (see $OUT/gui.$name.heaptrack.log)"; return; }
  local file
  file="$(ls "$ht".* 2>/dev/null | head -1)"
  [[ -n "$file" ]] || { echo "  heaptrack: no file written"; return; }
  echo "  heaptrack's file of the same workload: $(mib "$(stat -c %s "$file")") MiB"
  echo "    heaptrack_gui to its first screen (xvfb, polled): $(heaptrack_gui_first_screen "$file")"
  local m="$OUT/gui.$name.print.measure"
  rm -f "$m"
  if MEASURE_TIMEOUT=300 measured "$m" heaptrack_print "$file" >/dev/null 2>&1; then
    local line
    line="$(cat "$m")"
    awk -v w="$(kv wall_s "$line")" -v r="$(kv hwm_kb "$line")" \
      'BEGIN { printf "    heaptrack_print (the same parse, headless): %.2f s, peak RSS %.0f MiB\n", w, r / 1024 }'
  else
    echo "    heaptrack_print: failed or timed out"
  fi
}

measure_recording() {  # measure_recording NAME DESCRIPTION DB
  local name="$1" what="$2" db="$3"
  local zst sqlite
  zst="$(stat -c %s "$db")"
  sqlite="$(zstd -dc "$db" 2>/dev/null | wc -c)"
  ((sqlite > 0)) || sqlite="$zst"  # a plain SQLite file
  echo "== $name: $what"
  echo "  file $(mib "$zst") MiB zstd, $(mib "$sqlite") MiB SQLite inflated; load average $(load) before"
  local runs="$OUT/gui.$name.runs"
  : > "$runs"
  for run in $(seq 1 "$RUNS"); do
    local line
    line="$(QT_QPA_PLATFORM=offscreen timeout 600 "$BUILD/bin/memledger-gui" "$db" --measure 2>/dev/null | tail -1)"
    echo "  run $run: $line"
    [[ "$line" == interactive_s=* ]] && echo "$line" >> "$runs"
  done
  echo "  load average $(load) after"
  "$PY" - "$runs" "$zst" "$sqlite" <<'EOF'
import statistics, sys
rows = [dict(kv.split("=", 1) for kv in l.split()) for l in open(sys.argv[1]) if l.strip()]
if not rows:
    print("  no run finished"); sys.exit(0)
zst, sql = int(sys.argv[2]), int(sys.argv[3])
med = lambda k: statistics.median(float(r[k]) for r in rows)
rss = med("peak_rss_mib") * 1048576
ok = lambda good: "ok" if good else "MISSED"
print(f"  median of {len(rows)}: interactive {med('interactive_s'):.2f} s [{ok(med('interactive_s') < 1)} < 1 s], "
      f"trees {med('trees_s'):.2f} s; range 10% {med('range_10pct_ms'):.0f} ms / 50% {med('range_50pct_ms'):.0f} ms "
      f"[{ok(max(med('range_10pct_ms'), med('range_50pct_ms')) < 200)} < 200 ms], "
      f"CPU of every thread {med('range_10pct_cpu_ms'):.0f} / {med('range_50pct_cpu_ms'):.0f} ms")
print(f"    longest GUI-thread event {med('gui_max_event_ms'):.1f} ms wall, {med('gui_max_event_cpu_ms'):.1f} ms CPU "
      f"[{ok(med('gui_max_event_ms') <= 16)} wall / {ok(med('gui_max_event_cpu_ms') <= 16)} CPU <= 16 ms]; "
      f"showing a view {med('view_show_ms'):.1f} ms wall, {med('view_show_cpu_ms'):.1f} ms CPU; "
      f"timeline paint {med('timeline_paint_ms'):.1f} ms")
print(f"    peak RSS {med('peak_rss_mib'):.0f} MiB = {rss / zst:.1f}x the zstd file, {rss / sql:.1f}x the SQLite "
      f"database [{ok(rss <= 2 * sql)} <= 2x SQLite]; {rows[0]['allocations']} allocations, {rows[0]['sites']} sites")
EOF
}

compare_side() {  # compare_side NAME DB_A CMD... : a second run of CMD against DB_A
  local name="$1" a="$2"; shift 2
  local b="$OUT/traces/gui-$name-b.memledger.db" m="$OUT/gui.$name.compare.measure"
  rm -f "$b" "$b"-*
  "$BUILD/bin/memledger" record --force -o "$b" -- "$@" >/dev/null 2>"$OUT/gui.$name-b.record.log" ||
    { echo "  compare: recording the second run failed (see $OUT/gui.$name-b.record.log)"; return; }
  for run in $(seq 1 "$RUNS"); do
    rm -f "$m"
    if QT_QPA_PLATFORM=offscreen MEASURE_TIMEOUT=600 measured "$m" "$BUILD/bin/memledger-gui" "$a" --compare "$b" \
        --screenshot "$OUT/gui.$name.compare.png" --view flamegraph >/dev/null 2>&1; then
      awk -v w="$(kv wall_s "$(cat "$m")")" -v r="$(kv hwm_kb "$(cat "$m")")" -v n="$run" \
        'BEGIN { printf "  compare run %d: memledger-gui A --compare B to the B - A flame graph: %.2f s, peak RSS %.0f MiB\n", n, w, r / 1024 }'
    else
      echo "  compare run $run: memledger-gui --compare failed or timed out"
    fi
  done
  rm -f "$m"
  if measured "$m" "$BUILD/bin/memledger" diff "$a" "$b" >/dev/null 2>&1; then
    awk -v w="$(kv wall_s "$(cat "$m")")" -v r="$(kv hwm_kb "$(cat "$m")")" \
      'BEGIN { printf "  memledger diff A B: %.2f s, peak RSS %.0f MiB\n", w, r / 1024 }'
  else
    echo "  memledger diff A B: failed or timed out"
  fi
  ((HEAPTRACK)) || return 0
  local ha hb
  ha="$(ls "$OUT/traces/gui-$name.heaptrack".* 2>/dev/null | head -1)"
  [[ -n "$ha" ]] || { echo "  heaptrack_print --diff: n/a (no heaptrack file of the first run)"; return; }
  rm -f "$OUT/traces/gui-$name-b.heaptrack".*
  "$HT" -o "$OUT/traces/gui-$name-b.heaptrack" "$@" >/dev/null 2>"$OUT/gui.$name-b.heaptrack.log" ||
    { echo "  heaptrack_print --diff: recording the second run failed"; return; }
  hb="$(ls "$OUT/traces/gui-$name-b.heaptrack".* 2>/dev/null | head -1)"
  rm -f "$m"
  if MEASURE_TIMEOUT=600 measured "$m" heaptrack_print -d "$ha" "$hb" >/dev/null 2>&1; then
    awk -v w="$(kv wall_s "$(cat "$m")")" -v r="$(kv hwm_kb "$(cat "$m")")" \
      'BEGIN { printf "  heaptrack_print --diff (headless, text): %.2f s, peak RSS %.0f MiB\n", w, r / 1024 }'
  else
    echo "  heaptrack_print --diff: failed or timed out"
  fi
}

record() {  # record NAME [RECORD OPTIONS] -- CMD... : sets DB
  local name="$1"; shift
  DB="$OUT/traces/gui-$name.memledger.db"
  rm -f "$DB" "$DB"-*
  "$BUILD/bin/memledger" record --force -o "$DB" "$@" >/dev/null 2>"$OUT/gui.$name.record.log" ||
    { echo "== $name: recording failed (see $OUT/gui.$name.record.log)"; DB=""; return 1; }
}

echo "gui_speed: $(machine_line); memledger-gui --measure, $RUNS runs each"
if wanted storm && record storm -- "$OUT/malloc_storm" 10000000; then
  measure_recording storm "malloc_storm, 10^7 malloc/free pairs, 1 ms buckets" "$DB"
  heaptrack_side storm "$OUT/malloc_storm" 10000000
fi
if wanted storm_1us && record storm_1us --bucket-ms 0.001 -- "$OUT/malloc_storm" 10000000; then
  measure_recording storm_1us "the same with --bucket-ms 0.001 (10^6 timeline buckets)" "$DB"
fi
if wanted py_deep && record py_deep -- "$PY" "$BENCH/workloads/py_deep.py"; then
  measure_recording py_deep "python3 workloads/py_deep.py, 16,384 Python paths ~70 frames deep" "$DB"
  heaptrack_side py_deep "$PY" "$BENCH/workloads/py_deep.py"
  compare_side py_deep "$DB" "$PY" "$BENCH/workloads/py_deep.py"
fi
if wanted torch_mlp; then
  workload_cmd torch_mlp
  if [[ -n "$WL_SKIP" ]]; then
    echo "== torch_mlp: skipped: $WL_SKIP"
  elif record torch_mlp -- "${WL_CMD[@]}"; then
    measure_recording torch_mlp "python3 workloads/torch_mlp.py, a PyTorch CPU MLP training loop" "$DB"
    heaptrack_side torch_mlp "${WL_CMD[@]}"
    compare_side torch_mlp "$DB" "${WL_CMD[@]}"
  fi
fi
