#!/usr/bin/env bash
# Quick start #2: installs what it needs, builds everything (the test suite included), runs the
# whole test suite with ctest. BUILD_DIR: the build folder (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@"
