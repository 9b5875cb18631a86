#!/bin/sh
# The CUDA collector on a real GPU (docs/cuda.md). One prepared script for a machine with an
# NVIDIA GPU, PyTorch with CUDA as python3, and this build carried along (BUILD_DIR, default
# build/; shared libraries a bare image lacks, e.g. libunwind.so.8, in BUILD_DIR/carry-libs).
# It prints:
#   1. samples/cuda_leak recorded: the leaked cudaMalloc (3 MiB) with its host stack
#   2. tests/gpu/torch_train.py recorded: device:0 peak beside torch.cuda.max_memory_reserved()
#      (must match within 2 MiB), then the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
#   3. the training loop's slowdown under `memledger record` (target: under 10%)
# Exit: 0 all checks held, 1 one failed, 77 skipped (no GPU driver here: the reason is printed).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$here/build}
ml=$build/bin/memledger

if [ ! -e /dev/nvidiactl ] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "skipped: no NVIDIA GPU driver on this machine (/dev/nvidiactl, nvidia-smi absent): tests/gpu/check.sh needs one"
  exit 77
fi
for f in "$ml" "$build/lib/libmemledger_preload.so" "$build/lib/libmemledger_cupti.so"; do
  [ -e "$f" ] || { echo "check.sh: $f is missing: build memledger (with CUPTI) first"; exit 1; }
done
[ -d "$build/carry-libs" ] && export LD_LIBRARY_PATH="$build/carry-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
py=python3

echo "== 1. samples/cuda_leak"
if [ -x "$build/samples/cuda_leak" ]; then
  "$ml" record --force -o "$out/leak.db" -- "$build/samples/cuda_leak" || fail=1
  "$ml" report "$out/leak.db" --json > "$out/leak.json" || fail=1
  $py - "$out/leak.json" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1]))
devs = {d["space"]: d for d in r.get("devices", [])}
d0 = devs.get("device:0")
if not d0:
    print("FAIL: no device:0 in the recording"); sys.exit(1)
print("device:0 peak %d bytes, leaked %d bytes in %d blocks" % (d0["peak_bytes"], d0["leak_bytes"], d0["leak_count"]))
ok = False
for s in d0["leak_sites"]:
    names = [f["function"] or "??" for f in s["stack"]]
    print("  leak %d bytes (%s):" % (s["bytes"], s["kind"]))
    for n in names[:8]: print("    " + n)
    ok = ok or (s["bytes"] == 3 << 20 and any(n.startswith("leak_device") for n in names))
print("leaked cudaMalloc of 3 MiB at leak_device: " + ("OK" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
else
  echo "FAIL: $build/samples/cuda_leak not built (nvcc)"; fail=1
fi

train() {  # $1: label, $2: PYTORCH_CUDA_ALLOC_CONF
  echo "== 2. torch_train.py ($1)"
  PYTORCH_CUDA_ALLOC_CONF=$2 $py "$here/tests/gpu/torch_train.py" 300 > "$out/plain.json" || { fail=1; return; }
  PYTORCH_CUDA_ALLOC_CONF=$2 "$ml" record --force -o "$out/t.db" -- $py "$here/tests/gpu/torch_train.py" 300 \
    > "$out/rec.json" || { fail=1; return; }
  "$ml" report "$out/t.db" --json > "$out/t.json" || { fail=1; return; }
  $py - "$out/plain.json" "$out/rec.json" "$out/t.json" <<'PY' || fail=1
import json, sys
plain, rec, rep = (json.loads(open(p).read().strip().splitlines()[-1]) if i < 2 else json.load(open(p))
                   for i, p in enumerate(sys.argv[1:]))
devs = {d["space"]: d for d in rep.get("devices", [])}
peak = devs.get("device:0", {}).get("peak_bytes", 0)
reserved = rec["max_memory_reserved"]
diff = abs(peak - reserved)
print("recorded device:0 peak %d bytes, torch.cuda.max_memory_reserved() %d bytes, difference %d bytes: %s"
      % (peak, reserved, diff, "OK" if diff <= 2 << 20 else "FAIL (more than 2 MiB)"))
slow = rec["seconds"] / plain["seconds"] - 1
print("training loop %.3f s plain, %.3f s recorded: slowdown %.1f%% (target < 10%%)"
      % (plain["seconds"], rec["seconds"], slow * 100))
meta = rep.get("recording", {})
sys.exit(0 if diff <= 2 << 20 else 1)
PY
}
train "default allocator" ""
train "expandable segments" "expandable_segments:True"

[ $fail -eq 0 ] && echo "all GPU checks held" || echo "some GPU checks failed"
exit $fail
