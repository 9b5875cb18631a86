#!/usr/bin/env bash
# Quick start #1: installs what it needs, builds, records a bundled sample that leaks and peaks,
# and prints the report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
out=$(mktemp -d)/demo.memledger.db
./build/bin/memledger record -o "$out" -- ./build/samples/demo_leaky_peaky
./build/bin/memledger report "$out"
