#!/usr/bin/env bash
# What `record --python-allocators` costs on a script made of small objects, beside memray's
# --trace-python-allocators (issue 18, docs/python.md "Small objects").
#
#   bench/python_allocators.sh [--memledger PATH] [--memray-python PY] [--entries N]
#
#   --memledger PATH    the memledger binary (default build/bin/memledger)
#   --memray-python PY  a python that can `import memray` and runs as /usr/bin/python3 (default
#                       /work/venv-memray/bin/python when it exists, else /usr/bin/python3 when it
#                       can import memray, else memray is reported as not available)
#   --entries N         the workload's dict entries (default 1000000)
#
# Workload: bench/workloads/py_dict.py under /usr/bin/python3 with CPython's own allocator
# (pymalloc): N entries, each a str key, a tuple, an int and a str, ~4 objects of at most 512
# bytes per entry that never reach malloc. One run each, wall clock of the whole command
# (start-up, writing, symbolization included), ratios to plain python3:
#   plain                 python3 alone
#   ml                    memledger record (pymalloc's objects unseen: only its arenas, as mmap)
#   ml --py-alloc         memledger record --python-allocators (every object, kind pyobject)
#   ml PYTHONMALLOC=malloc  the alternative mechanism: every object through malloc and its hooks
#                       (changes the program's allocator: objects become heap blocks)
#   memray                memray run
#   memray --trace-py     memray run --trace-python-allocators
# "objects" is the number of pyobject allocations the --python-allocators recording holds and
# "ns/object" what each cost over plain `ml` ((ml --py-alloc - ml) / objects).
# Then the cost per object inside the program alone, from bench/workloads/py_small_objects.py
# (3 x N entries of a tuple and two ints, made and freed; it prints its own process CPU time per
# object, which the rest of a loaded machine does not change): the same six columns.
# Logs and recordings go to bench/out/python_allocators/.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

MEMLEDGER="$ROOT/build/bin/memledger" MEMRAY_PY="" ENTRIES=1000000
while (($#)); do
  case "$1" in
    --memledger) MEMLEDGER="${2:?--memledger needs a path}"; shift ;;
    --memray-python) MEMRAY_PY="${2:?--memray-python needs a path}"; shift ;;
    --entries) ENTRIES="${2:?--entries needs a number}"; shift ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "python_allocators.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
PY=/usr/bin/python3
[[ -x "$PY" ]] || { echo "python_allocators.sh: no $PY" >&2; exit 2; }
P="$OUT/python_allocators"
mkdir -p "$P"
gcc -O2 -Wall -Wextra -o "$OUT/measure" "$BENCH/tools/measure.c" || { echo "python_allocators.sh: building measure failed" >&2; exit 1; }
memledger_setup "$MEMLEDGER"
[[ -n "$ML_NA" ]] && { echo "python_allocators.sh: memledger n/a ($ML_NA)" >&2; exit 2; }
if [[ -z "$MEMRAY_PY" ]]; then
  if [[ -x /work/venv-memray/bin/python ]]; then MEMRAY_PY=/work/venv-memray/bin/python
  elif "$PY" -c 'import memray' 2>/dev/null; then MEMRAY_PY="$PY"; fi
fi
MR_NA=""
[[ -z "$MEMRAY_PY" ]] && MR_NA="memray not importable (pass --memray-python)"
[[ -n "$MEMRAY_PY" ]] && ! "$MEMRAY_PY" -c 'import memray' 2>/dev/null && MR_NA="$MEMRAY_PY cannot import memray"

S="$BENCH/workloads/py_dict.py"
# wall TAG ENV CMD...: runs CMD under measure with ENV (VAR=VALUE, or "") set for the whole
# measured command (measure traces its direct child, so `env` comes before it), prints its
# wall seconds or "failed".
wall() {
  local tag="$1" setting="$2"; shift 2
  rm -f "$P/$tag.m"
  if env ${setting:+"$setting"} timeout -k 5 "$RUN_TIMEOUT" "$OUT/measure" -o "$P/$tag.m" -- "$@" \
       > "$P/$tag.log" 2>&1 && [[ -s "$P/$tag.m" ]]; then
    kv wall_s "$(tail -1 "$P/$tag.m")"
  else
    echo "failed"
  fi
}
ratio() { [[ "$1" =~ ^[0-9.]+$ && "$2" =~ ^[0-9.]+$ ]] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2fx", a/b}' || echo "-"; }
cell() { [[ "$1" =~ ^[0-9.]+$ ]] && echo "$1s $(ratio "$1" "$base")" || echo "$1"; }

echo "python_allocators: $(date -u '+%Y-%m-%d %H:%M UTC'), $(machine_line), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python: $($PY --version 2>&1); memledger: ${ML_VERSION:-?} (git $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null));" \
     "memray: $([[ -z "$MR_NA" ]] && "$MEMRAY_PY" -m memray --version 2>/dev/null | head -1 || echo "n/a ($MR_NA)")"
echo "workload: py_dict.py $ENTRIES (pymalloc), one run each, wall clock and ratio to plain"
echo
base="$(wall plain "" "$PY" "$S" "$ENTRIES")"
ml="$(wall ml "" "$ML" record --force -o "$P/ml.db" -- "$PY" "$S" "$ENTRIES")"
pa="$(wall pa "" "$ML" record --force --python-allocators -o "$P/pa.db" -- "$PY" "$S" "$ENTRIES")"
mm="$(wall mm PYTHONMALLOC=malloc "$ML" record --force -o "$P/mm.db" -- "$PY" "$S" "$ENTRIES")"
mr="n/a" mrt="n/a"
if [[ -z "$MR_NA" ]]; then
  rm -f "$P/mr.bin" "$P/mrt.bin"
  mr="$(wall mr "" "$MEMRAY_PY" -m memray run -q -o "$P/mr.bin" "$S" "$ENTRIES")"
  mrt="$(wall mrt "" "$MEMRAY_PY" -m memray run -q --trace-python-allocators -o "$P/mrt.bin" "$S" "$ENTRIES")"
fi
objects="$("$ML" report "$P/pa.db" --kind pyobject --json 2>/dev/null | "$PY" -c '
import json, sys
t = json.load(sys.stdin)["totals"]["by_kind"]
print(t.get("pyobject", {}).get("allocations", 0))' 2>/dev/null || echo 0)"
per="-"
[[ "$pa" =~ ^[0-9.]+$ && "$ml" =~ ^[0-9.]+$ && "$objects" -gt 0 ]] &&
  per="$(awk -v a="$pa" -v b="$ml" -v n="$objects" 'BEGIN{printf "%.0f", (a-b)*1e9/n}')"
printf '%-30s %s\n' "plain" "${base}s" "memledger" "$(cell "$ml")" "memledger --py-alloc" "$(cell "$pa")" \
  "memledger PYTHONMALLOC=malloc" "$(cell "$mm")" "memray run" "$(cell "$mr")" \
  "memray --trace-py-alloc" "$(cell "$mrt")"
echo
echo "pyobject allocations recorded: $objects; --python-allocators over memledger: $per ns per object"
rcpu() { local v; v="$(kv recorder_cpu_ns "$(recording_facts "$ML" "$1")")"; [[ -n "$v" ]] && awk -v n="$v" 'BEGIN{printf "%.2fs", n/1e9}' || echo "?"; }
echo "memledger's recorder process, CPU while draining: memledger $(rcpu "$P/ml.db"), --py-alloc $(rcpu "$P/pa.db"), PYTHONMALLOC=malloc $(rcpu "$P/mm.db")"

# The program's own CPU per object (the recorder's work, in its own process, not included).
W="$BENCH/workloads/py_small_objects.py"
per_object() {  # per_object TAG ENV CMD...: the workload's "N ns per object", or "failed"
  local tag="$1" setting="$2"; shift 2
  if env ${setting:+"$setting"} timeout -k 5 "$RUN_TIMEOUT" "$@" > "$P/$tag.cpu.log" 2>&1; then
    sed -n 's/^py_small_objects: \([0-9.]*\) ns per object$/\1/p' "$P/$tag.cpu.log" | tail -1
  else
    echo "failed"
  fi
}
echo
echo "inside the program: py_small_objects.py $ENTRIES, process CPU per object (ratio to plain)"
c0="$(per_object plain "" "$PY" "$W" "$ENTRIES")"
cpu() { [[ "$1" =~ ^[0-9.]+$ ]] && echo "$1 ns $(ratio "$1" "$c0")" || echo "${1:-failed}"; }
printf '%-30s %s\n' "plain" "$c0 ns" \
  "memledger" "$(cpu "$(per_object ml "" "$ML" record --force --no-symbols -o "$P/cpu-ml.db" -- "$PY" "$W" "$ENTRIES")")" \
  "memledger --py-alloc" "$(cpu "$(per_object pa "" "$ML" record --force --no-symbols --python-allocators -o "$P/cpu-pa.db" -- "$PY" "$W" "$ENTRIES")")" \
  "memledger PYTHONMALLOC=malloc" "$(cpu "$(per_object mm PYTHONMALLOC=malloc "$ML" record --force --no-symbols -o "$P/cpu-mm.db" -- "$PY" "$W" "$ENTRIES")")" \
  "plain PYTHONMALLOC=malloc" "$(cpu "$(per_object pm PYTHONMALLOC=malloc "$PY" "$W" "$ENTRIES")")"
if [[ -z "$MR_NA" ]]; then
  printf '%-30s %s\n' \
    "memray run" "$(cpu "$(per_object mr "" "$MEMRAY_PY" -m memray run -q -fo "$P/cpu-mr.bin" "$W" "$ENTRIES")")" \
    "memray --trace-py-alloc" "$(cpu "$(per_object mrt "" "$MEMRAY_PY" -m memray run -q --trace-python-allocators -fo "$P/cpu-mrt.bin" "$W" "$ENTRIES")")"
fi
