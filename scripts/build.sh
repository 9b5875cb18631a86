#!/usr/bin/env bash
# Installs dependencies (idempotent), configures and builds.
#   scripts/build.sh               everything: the CLI, the preload library, samples, the test suite
#   scripts/build.sh TARGET...     only these CMake targets and what they depend on
# BUILD_DIR: the build folder (default build/; relative paths are taken from the repository root).
# CMAKE_ARGS: extra options for the configure step (e.g. CMAKE_ARGS="-DMEMLEDGER_GUI=OFF").
set -euo pipefail
cd "$(dirname "$0")/.."
build="${BUILD_DIR:-build}"
./scripts/deps.sh
# shellcheck disable=SC2086  # CMAKE_ARGS is a list of options
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j"$(nproc)" "${targets[@]}"
