#!/usr/bin/env bash
# Quick start #1: installs what it needs, builds only what the demo runs (the memledger CLI, its
# preload library and one sample; not the test suite, which scripts/test.sh builds), records the
# sample that leaks and peaks, and prints the report.
# BUILD_DIR: the build folder (default build/), as for scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
./scripts/build.sh memledger memledger_preload sample_demo_leaky_peaky
out="$(mktemp -d)/demo.memledger.db"
"$build/bin/memledger" record -o "$out" -- "$build/samples/demo_leaky_peaky"
"$build/bin/memledger" report "$out"
