#!/usr/bin/env bash
# Quick start #2: installs what it needs, builds, runs the whole test suite with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@"
