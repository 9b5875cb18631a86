#!/usr/bin/env bash
# What Python frames cost, and whether each tool names the user's line: plain python3, heaptrack,
# memledger record --no-python, memledger record (Python frames), memray run, memray run --native,
# side by side on four Python workloads (issue 18's proof list).
#
#   bench/python_overhead.sh [--memledger PATH] [--memray-python PY]
#
#   --memledger PATH    the memledger binary (default build/bin/memledger)
#   --memray-python PY  a python that can `import memray` and runs as /usr/bin/python3 (e.g. a
#                       venv made with `/usr/bin/python3 -m venv --system-site-packages V` and
#                       `V/bin/pip install memray`); default: /usr/bin/python3 itself when it can
#                       import memray, else memray is reported as not available
#
# Workloads, all under /usr/bin/python3: samples/python/leaky.py (leak and peak at py_leaker,
# leaky.py:7), samples/python/numpy_peak.py (peak at its lines 5-6; skipped without numpy),
# bench/workloads/torch_mlp.py (300 small steps; the forward line 31 or loss.backward() line 32
# would be named, but its heap peak is what `import torch` left, so memledger names the import)
# and samples/python/torch_peak.py (an MLP whose loop holds 64 MiB tensors at the heap peak: the
# forward line 23 or the backward line 24; both skipped without torch). One run each, wall
# clock of the whole command (the profiler's own start-up, writing and, for memledger,
# symbolization included); under each workload's line, a "cpu" line: the same runs' CPU time
# (user + system, every process of the tree), which counts memledger's recorder process working
# beside the program on another core (memray writes from the program's own threads and
# symbolizes at report time, heaptrack interprets in a second process too). "names" says whether
# memledger's peak site #1 (and for leaky.py also leak site #1) has a frame at the expected
# file:line; memray and heaptrack are not asked (heaptrack has no Python frames; memray's
# reader is not run here). Prints the table and writes it as the last section of
# bench/RESULTS.md (after the marker that bench/summarize.py keeps); logs and recordings go to
# bench/out/python/.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
MARK="<!-- bench/python_overhead.sh writes from here on -->"
for a in "$@"; do  # help only: nothing is run, RESULTS.md stays as it is
  [[ "$a" == -h || "$a" == --help ]] && { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
done
if [[ -z "${BENCH_PY_INNER:-}" ]]; then
  mkdir -p "$OUT/python"
  BENCH_PY_INNER=1 "$0" "$@" | tee "$OUT/python/table.txt"
  rc=${PIPESTATUS[0]}
  ((rc)) && exit "$rc"
  md="$BENCH/RESULTS.md"
  [[ -f "$md" ]] || : > "$md"
  {
    awk -v m="$MARK" '$0 == m { exit } { print }' "$md"
    echo "$MARK"
    echo "## Python frames: overhead and named lines (bench/python_overhead.sh $*)"
    echo
    echo "One run each, wall clock of the whole command (\"cpu\" lines: the same runs' user + system"
    echo "time over the process tree); ratios to plain python3. \"names\": whether"
    echo "memledger's peak site #1 (leaky.py: also leak site #1) has a frame at the expected line."
    echo
    echo '```'
    cat "$OUT/python/table.txt"
    echo '```'
  } > "$md.tmp" && mv "$md.tmp" "$md"
  exit 0
fi

MEMLEDGER="$ROOT/build/bin/memledger" MEMRAY_PY=""
while (($#)); do
  case "$1" in
    --memledger) MEMLEDGER="${2:?--memledger needs a path}"; shift ;;
    --memray-python) MEMRAY_PY="${2:?--memray-python needs a path}"; shift ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "python_overhead.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
[[ -x "$PY" ]] || { echo "python_overhead.sh: no $PY" >&2; exit 2; }
mkdir -p "$OUT/python"
P="$OUT/python"
gcc -O2 -Wall -Wextra -o "$OUT/measure" "$BENCH/tools/measure.c" || { echo "python_overhead.sh: building measure failed" >&2; exit 1; }
heaptrack_setup
memledger_setup "$MEMLEDGER"
[[ -n "$ML_NA" ]] && { echo "python_overhead.sh: memledger n/a ($ML_NA)" >&2; exit 2; }
[[ -z "$MEMRAY_PY" ]] && "$PY" -c 'import memray' 2>/dev/null && MEMRAY_PY="$PY"
MR_NA=""
if [[ -z "$MEMRAY_PY" ]]; then
  MR_NA="memray not importable by $PY (pass --memray-python)"
elif ! "$MEMRAY_PY" -c 'import memray' 2>/dev/null; then
  MR_NA="$MEMRAY_PY cannot import memray"
fi

# name FILE LINE: the workload's script and the line memledger should name.
WL_NAMES=(leaky numpy torch_mlp torch_peak)
declare -A WL_SCRIPT WL_LINES WL_ARGS WL_NA
WL_SCRIPT[leaky]="$ROOT/samples/python/leaky.py";      WL_LINES[leaky]="7"
WL_SCRIPT[numpy]="$ROOT/samples/python/numpy_peak.py"; WL_LINES[numpy]="5 6"
WL_SCRIPT[torch_mlp]="$BENCH/workloads/torch_mlp.py";  WL_LINES[torch_mlp]="31 32"
WL_SCRIPT[torch_peak]="$ROOT/samples/python/torch_peak.py"; WL_LINES[torch_peak]="23 24"
"$PY" -c 'import numpy' 2>/dev/null || WL_NA[numpy]="numpy not importable by $PY"
"$PY" -c 'import torch' 2>/dev/null || WL_NA[torch_mlp]="torch not importable by $PY"
WL_NA[torch_peak]="${WL_NA[torch_mlp]:-}"

# wall TAG CMD...: runs CMD under measure, prints its wall seconds or "failed"; its CPU seconds
# (user + system of the whole process tree) are left in $P/TAG.cpu for cpu() to read.
wall() {
  local tag="$1"; shift
  rm -f "$P/$tag.m" "$P/$tag.cpu"
  if measured "$P/$tag.m" "$@" > "$P/$tag.log" 2>&1 && [[ -s "$P/$tag.m" ]]; then
    kv cpu_s "$(tail -1 "$P/$tag.m")" > "$P/$tag.cpu"
    kv wall_s "$(tail -1 "$P/$tag.m")"
  else
    echo "failed"
  fi
}
cpu() { [[ -s "$P/$1.cpu" ]] && cat "$P/$1.cpu" || echo "n/a"; }

# names DB SCRIPT LINES: "yes (file:line)" when memledger's peak site #1 (and, for leaky.py, leak
# site #1) has a frame at SCRIPT and one of LINES, else "no (what it names)".
names() {
  "$MEMLEDGER" report "$1" --json --top 5 2>/dev/null | "$PY" -c '
import json, sys
script, lines, leaks_too = sys.argv[1], {int(x) for x in sys.argv[2].split()}, sys.argv[3] == "1"
r = json.load(sys.stdin)
def hit(site):
    for f in site.get("stack", []):
        if (f.get("file") or "") == script and f.get("line") in lines:
            return "%s:%d" % (script.rsplit("/", 1)[-1], f["line"])
    return None
def first_py(site):  # the innermost Python frame, and the script frame when that is another file
    py = [f for f in site.get("stack", []) if (f.get("file") or "").endswith(".py")]
    if not py:
        return "no Python frame"
    text = lambda f: "%s:%s" % (f["file"].rsplit("/", 1)[-1], f.get("line"))
    own = [f for f in py if f["file"] == script]
    return text(py[0]) + (" in " + text(own[0]) if own and own[0] is not py[0] else "")
checks = [("peak", r["peak"]["sites"])] + ([("leak", r["leaks"]["sites"])] if leaks_too else [])
out = []
for what, sites in checks:
    h = hit(sites[0]) if sites else None
    out.append(what + " " + (h if h else "NO (" + (first_py(sites[0]) if sites else "no site") + ")"))
print(", ".join(out))
' "$2" "$3" "$4" 2>/dev/null || echo "unreadable"
}

ratio() { [[ "$1" =~ ^[0-9.]+$ && "$2" =~ ^[0-9.]+$ ]] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2fx", a/b}' || echo "-"; }

echo "python_overhead: $(date -u '+%Y-%m-%d %H:%M UTC'), $(machine_line), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python: $($PY --version 2>&1); memledger: ${ML_VERSION:-?} (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null))"
echo "heaptrack: ${HT_VERSION:-n/a $HT_NA}; memray: $([[ -z "$MR_NA" ]] && "$MEMRAY_PY" -m memray --version 2>/dev/null | head -1 || echo "n/a ($MR_NA)")"
printf '\n%-10s %8s %14s %14s %14s %14s %14s  %s\n' workload plain heaptrack "ml --no-python" "ml python" memray "memray native" "memledger names"
for w in "${WL_NAMES[@]}"; do
  if [[ -n "${WL_NA[$w]:-}" ]]; then printf '%-10s skipped: %s\n' "$w" "${WL_NA[$w]}"; continue; fi
  s="${WL_SCRIPT[$w]}"
  base="$(wall "$w.plain" "$PY" "$s")"
  ht="n/a"; [[ -n "$HT" ]] && { rm -f "$P/$w".ht*; ht="$(wall "$w.ht" "$HT" -o "$P/$w.ht" "$PY" "$s")"; }
  nopy="$(wall "$w.nopy" "$ML" record --force --no-python -o "$P/$w.nopy.db" -- "$PY" "$s")"
  withpy="$(wall "$w.py" "$ML" record --force -o "$P/$w.py.db" -- "$PY" "$s")"
  mr="n/a" mrn="n/a"
  if [[ -z "$MR_NA" ]]; then
    rm -f "$P/$w.mr.bin" "$P/$w.mrn.bin"
    mr="$(wall "$w.mr" "$MEMRAY_PY" -m memray run -q -o "$P/$w.mr.bin" "$s")"
    mrn="$(wall "$w.mrn" "$MEMRAY_PY" -m memray run -q --native -o "$P/$w.mrn.bin" "$s")"
  fi
  cell() { [[ "$1" == n/a || "$1" == failed ]] && echo "$1" || echo "$1s $(ratio "$1" "$base")"; }
  nm="python: $(names "$P/$w.py.db" "$s" "${WL_LINES[$w]}" "$([[ $w == leaky ]] && echo 1 || echo 0)")"
  nm+="; --no-python: $(names "$P/$w.nopy.db" "$s" "${WL_LINES[$w]}" "$([[ $w == leaky ]] && echo 1 || echo 0)")"
  printf '%-10s %7ss %14s %14s %14s %14s %14s  %s\n' "$w" "$base" "$(cell "$ht")" "$(cell "$nopy")" \
    "$(cell "$withpy")" "$(cell "$mr")" "$(cell "$mrn")" "$nm"
  base="$(cpu "$w.plain")"
  [[ -n "$HT" ]] && ht="$(cpu "$w.ht")"
  [[ -z "$MR_NA" ]] && { mr="$(cpu "$w.mr")"; mrn="$(cpu "$w.mrn")"; }
  printf '%-10s %7ss %14s %14s %14s %14s %14s\n' "  cpu" "$base" "$(cell "$ht")" "$(cell "$(cpu "$w.nopy")")" \
    "$(cell "$(cpu "$w.py")")" "$(cell "$mr")" "$(cell "$mrn")"
done
