#!/usr/bin/env bash
# The analyzer used from several threads at once, under ThreadSanitizer:
#   scripts/tsan.sh [GTEST_FILTER]     (default: the thread, control and curve tests)
# Builds the analyzer and memledger_analyzer_thread_tests (tests/unit/analyzer_threads_test.cpp,
# analyzer_control_test.cpp, analyzer_curve_test.cpp) with -fsanitize=thread in build-tsan/, and
# runs them. The tests that record a sample with the real CLI use the plain build in build/
# (MEMLEDGER_RECORD_BUILD): the CLI and its preload library are not built with TSan, only what
# reads recordings. Builds memledger, its preload library and the samples there when missing.
# Exit 0: the tests passed and TSan reported nothing (a report fails the run: halt_on_error).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
filter="${1:-AnalyzerThreads*:AnalyzerControl*:AnalyzerCurve*}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)

plain="$root/build"
if [[ ! -x "$plain/bin/memledger" || ! -x "$plain/samples/three_phases" || ! -x "$plain/samples/demo_leaky_peaky" ]]; then
  [[ -f "$plain/CMakeCache.txt" ]] || cmake -S . -B "$plain" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
  cmake --build "$plain" -j2 --target memledger memledger_preload sample_three_phases sample_demo_leaky_peaky
fi

build="$root/build-tsan"
flags="-fsanitize=thread -fno-omit-frame-pointer"
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread \
    -DMEMLEDGER_GUI=OFF -DMEMLEDGER_CUPTI=OFF >/dev/null
fi
cmake --build "$build" -j2 --target memledger_analyzer_thread_tests

# halt_on_error: the first race ends the run with TSan's exit code (66), so nothing passes by.
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
export MEMLEDGER_RECORD_BUILD="$plain"
run=("$build/bin/memledger_analyzer_thread_tests" "--gtest_filter=$filter")
# Kernels with high mmap randomness break TSan's memory layout ("unexpected memory mapping"):
# without ASLR it runs.
if command -v setarch >/dev/null && setarch "$(uname -m)" -R true 2>/dev/null; then
  run=(setarch "$(uname -m)" -R "${run[@]}")
fi
"${run[@]}"
