# Shared by bench/run.sh, bench/soak.sh and bench/report_speed.sh (sourced, not run).
# shellcheck disable=SC2034  # the variables set here are read by the scripts that source it
# Sets BENCH (this folder), ROOT (the checkout), OUT (bench/out, gitignored) and provides:
#   build_workloads            compile the C++ workloads and the measure tool into $OUT
#   heaptrack_setup            HT (heaptrack without its GUI auto-launch) or HT_NA=<reason>
#   memledger_setup PATH       ML=PATH when `record` works, else ML_NA=<reason>
#   workload_cmd NAME          WL_CMD / WL_ENV arrays for a workload, or WL_SKIP=<reason>
#   kv KEY LINE                the value of KEY=... in a measure line
#   recording_facts ML DB      events=, wait_ns=, lost=, duration_ns=, recorder_cpu_ns= of a recording
#   machine_line               nproc, CPU model, kernel, memory in one line

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"
OUT="$BENCH/out"
ALL_WORKLOADS=(malloc_storm mt_storm mt_paced py_dict sqlite_insert torch_mlp)
# A hung run must not eat the session: each measured command gets this many seconds.
RUN_TIMEOUT="${BENCH_RUN_TIMEOUT:-300}"
# Reporters get less: a report that takes minutes is a finding, shown as "timed out", and must
# not push a whole run past its ten minutes.
REPORT_TIMEOUT="${BENCH_REPORT_TIMEOUT:-120}"

build_workloads() {
  mkdir -p "$OUT"
  local cxx="${CXX:-g++}" src
  gcc -O2 -Wall -Wextra -o "$OUT/measure" "$BENCH/tools/measure.c" || return 1
  for src in malloc_storm mt_storm; do
    # -O2 as a real program would ship; -g so both profilers can name the frames.
    "$cxx" -O2 -g -std=c++20 -Wall -Wextra -pthread -o "$OUT/$src" "$BENCH/workloads/$src.cpp" || return 1
  done
}

# Runs a command under `measure` with a timeout; the measure line is appended to $1.
# Usage: [MEASURE_TIMEOUT=S] measured MEASURE_FILE CMD...   (returns the command's status)
measured() {
  local mfile="$1"; shift
  timeout -k 5 "${MEASURE_TIMEOUT:-$RUN_TIMEOUT}" "$OUT/measure" -o "$mfile" -- "$@"
}

kv() {  # kv KEY "k1=v1 k2=v2 ..."
  local key="$1" line="$2" tok
  for tok in $line; do
    [[ "$tok" == "$key="* ]] && { echo "${tok#*=}"; return; }
  done
  echo ""
}

# heaptrack's script opens heaptrack_gui after recording when that is installed (and nothing
# turns that off: no flag, no variable). We run a copy of the same script with exactly two
# changes: the GUI launch is disabled, and heaptrack_interpret (its recorder: it reads the pipe,
# interns stacks, symbolizes) is started under `measure` so its own peak RSS is known.
heaptrack_setup() {
  HT="" HT_NA=""
  local real
  real="$(command -v heaptrack)" || { HT_NA="heaptrack not installed (scripts/deps.sh)"; return 1; }
  real="$(readlink -f "$real")"
  HT="$OUT/heaptrack-nogui"
  sed -e "s|^EXE_PATH=.*|EXE_PATH=\"$(dirname "$real")\"|" \
      -e '/write_raw_data.*heaptrack_gui/s|\[ -x "\$EXE_PATH/heaptrack_gui" \]|false|' \
      -e 's|^\(    \)"\$INTERPRETER" < \$pipe|\1${BENCH_MEASURE:-env} ${BENCH_MEASURE:+-o "$BENCH_HT_RSS_OUT" --} "$INTERPRETER" < $pipe|' \
      "$real" > "$HT"
  chmod +x "$HT"
  # Both edits must have applied, or the copy would silently measure something else.
  if grep -q 'write_raw_data.*heaptrack_gui' "$HT" || ! grep -q 'write_raw_data" \] && false' "$HT" \
     || ! grep -q 'BENCH_MEASURE' "$HT"; then
    HT_NA="heaptrack's script changed shape; update heaptrack_setup in bench/lib.sh"
    HT=""
    return 1
  fi
  HT_VERSION="$("$HT" --version 2>/dev/null | head -1)"
}

# memledger counts as available only when a real `record` of /bin/true succeeds and leaves a
# recording: until the recorder lands the CLI answers "not available in this build".
memledger_setup() {
  ML="" ML_NA=""
  local bin="$1" probe="$OUT/probe.db" err
  if [[ ! -x "$bin" ]]; then
    ML_NA="no memledger binary at $bin (build it with ./scripts/build.sh, or pass --memledger PATH)"
    return 1
  fi
  rm -f "$probe"
  if ! err="$(timeout 60 "$bin" record -o "$probe" -- /bin/true 2>&1 >/dev/null)"; then
    ML_NA="record does not work yet: $(echo "$err" | grep -v '^$' | tail -1)"
    return 1
  fi
  if [[ ! -s "$probe" ]]; then
    ML_NA="record exited 0 but wrote no recording"
    return 1
  fi
  ML="$bin"
  ML_VERSION="$("$bin" --version 2>/dev/null | head -1)"
}

workload_cmd() {
  WL_CMD=() WL_ENV=() WL_SKIP=""
  case "$1" in
    malloc_storm) WL_CMD=("$OUT/malloc_storm") ;;
    mt_storm) WL_CMD=("$OUT/mt_storm") ;;
    # The same 20M events paced to 10M events/s (2 s unprofiled): unpaced, 4 threads make
    # events far faster than that, so only a paced run shows whether a recorder keeps 10M/s.
    mt_paced) WL_CMD=("$OUT/mt_storm" 10000000 --rate 10000000) ;;
    py_dict)
      # Set for the whole measured command (the profilers pass it on), never via `env` as the
      # traced program, which would make the profilers trace env and follow an exec.
      WL_ENV=(PYTHONMALLOC=malloc)
      WL_CMD=(/usr/bin/python3 "$BENCH/workloads/py_dict.py") ;;
    sqlite_insert)
      command -v sqlite3 >/dev/null || WL_SKIP="sqlite3 shell not installed"
      WL_CMD=("$(command -v sqlite3)" ":memory:" ".read $BENCH/workloads/sqlite_insert.sql") ;;
    torch_mlp)
      local why
      if ! why="$(/usr/bin/python3 -c 'import torch' 2>&1)"; then
        WL_SKIP="torch not importable by /usr/bin/python3 ($(echo "$why" | tail -1)); MEMLEDGER_DEPS_BENCH=1 scripts/deps.sh installs python3-torch"
      fi
      WL_CMD=(/usr/bin/python3 "$BENCH/workloads/torch_mlp.py") ;;
    *) WL_SKIP="unknown workload '$1' (known: ${ALL_WORKLOADS[*]})"; return 1 ;;
  esac
}

# A recording's facts as KEY=VALUE words (read them with kv): events (allocations + frees, the
# sum over `sites`), wait_ns, lost (records), duration_ns, recorder_cpu_ns (the draining
# thread's CPU time; empty for a recording made before the recorder wrote it). Through
# `memledger report --json`, not sqlite3: recordings are zstd-compressed once complete. Empty
# when the file cannot be read.
recording_facts() {  # recording_facts MEMLEDGER DB
  "$1" report "$2" --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
try:
    j = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
t, r = j["totals"], j["recording"]
cpu = r.get("recorder_cpu_ns")
print("events=%d wait_ns=%d lost=%d duration_ns=%d recorder_cpu_ns=%s" % (t["allocations"] + t["frees"], r["wait_ns"], r["lost_records"], r["duration_ns"], "" if cpu is None else "%d" % cpu))'
}

machine_line() {
  local cpu mem
  cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  mem="$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "nproc $(nproc), ${cpu:-unknown CPU}, kernel $(uname -r), $mem RAM"
}
