#!/bin/sh
# The CUDA collector's cost per device API call (docs/cuda.md), on the fake libcupti (no GPU
# needed): tests/cupti/fake_cuda_app plays the driver; its hot loop makes ROUNDS x (4 cudaMalloc +
# 4 cudaFree), i.e. 8 driver calls (each inside a runtime call) per round. Three runs each:
#   plain      the program alone (no subscriber: the fake's callbacks return at once)
#   no-cuda    memledger record --no-cuda (host recording only)
#   recorded   memledger record (the collector counts every call on its calling thread)
# Prints the best time of each and (recorded - no-cuda) / driver calls.
# usage: bench/cupti_cost.sh [ROUNDS]   (BUILD_DIR, default build/)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$here/build}
rounds=${1:-50000}
app=$build/tests/fakecupti/fake_cuda_app
ml=$build/bin/memledger
[ -x "$app" ] || { echo "cupti_cost: $app missing (build memledger_cupti_tests)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best() {  # best wall seconds of 3 runs of "$@"
  b=
  for i in 1 2 3; do
    s=$(date +%s.%N); "$@" >/dev/null 2>&1; e=$(date +%s.%N)
    t=$(echo "$e - $s" | bc -l)
    if [ -z "$b" ] || [ "$(echo "$t < $b" | bc -l)" = 1 ]; then b=$t; fi
  done
  echo "$b"
}
unset CUDA_INJECTION64_PATH || true
plain=$(best "$app" 0 "$rounds")
nocuda=$(best "$ml" record --force --no-cuda -o "$tmp/a.db" -- "$app" 0 "$rounds")
rec=$(best "$ml" record --force -o "$tmp/b.db" -- "$app" 0 "$rounds")
calls=$((rounds * 8))
printf 'rounds %d (%d driver calls)\nplain     %.3f s\nno-cuda   %.3f s\nrecorded  %.3f s\n' "$rounds" "$calls" "$plain" "$nocuda" "$rec"
echo "cost per driver call under recording: $(echo "($rec - $nocuda) * 1000000000 / $calls" | bc -l | cut -d. -f1) ns"
