#!/bin/sh
# The exit scan's cost (docs/leak-kinds.md): records samples/scan_big_heap.c with MIB MiB (default
# 1024) of live heap in 1 KiB blocks, then prints the scan's time and bytes from leak_scans and
# the run with `--scan off` for comparison. Needs build/bin/memledger and build/samples.
set -eu
BUILD=${BUILD_DIR:-build}
MIB=${1:-1024}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
for scan in on off; do
  start=$(date +%s.%N)
  "$BUILD/bin/memledger" record --no-compress --no-symbols --scan $scan -o "$OUT/$scan.db" -- \
    "$BUILD/samples/scan_big_heap" "$MIB" 2>/dev/null
  end=$(date +%s.%N)
  echo "scan $scan: record wall $(echo "$end - $start" | bc) s"
done
sqlite3 "$OUT/on.db" "SELECT printf('scan of %d live blocks: %.3f s, roots %.1f MiB, blocks %.1f MiB read (%.2f GiB/s)',
  blocks, duration_ns / 1e9, root_bytes / 1048576.0, block_bytes / 1048576.0,
  (root_bytes + block_bytes) / 1073741824.0 / (duration_ns / 1e9)) FROM leak_scans"
sqlite3 "$OUT/on.db" "SELECT kind, count(*) FROM leak_kinds GROUP BY kind"
