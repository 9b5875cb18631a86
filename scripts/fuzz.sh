#!/usr/bin/env bash
# Fuzzes the recording reader (fuzz/recording_reader_fuzz.cpp) for a bounded time:
#   scripts/fuzz.sh [SECONDS]      (default 60)
# Builds the libFuzzer target with clang in build-fuzz/ (ASan + UBSan, the analyzer instrumented
# too), makes a seed corpus (a synthetic recording from schemas/ + fuzz/seed_recording.sql, real
# recordings when build/bin/memledger exists, compressed and plain, and empty/random/truncated/foreign
# files) and runs.
# Exit 0: no crash found. Otherwise libFuzzer's status, with the crashing input in build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
root="$PWD"
# Exit 77 (ctest's skip code in tests/CMakeLists.txt) when this machine cannot build a libFuzzer
# target: scripts/deps.sh installs clang and libclang-rt; without them there is nothing to run.
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: skipped: no clang++ (scripts/deps.sh installs it)" >&2
  exit 77
fi
probe="$(mktemp -d)"
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$probe/p.cpp"
linked=0
clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cpp" -o "$probe/p" 2>/dev/null && linked=1
rm -rf "$probe"
if ((!linked)); then
  echo "fuzz.sh: skipped: clang++ cannot link a libFuzzer target (libclang-rt-*-dev missing?)" >&2
  exit 77
fi
build="$root/build-fuzz"
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DMEMLEDGER_FUZZ=ON -DMEMLEDGER_TESTS=OFF -DMEMLEDGER_GUI=OFF -DMEMLEDGER_CUPTI=OFF >/dev/null
fi
cmake --build "$build" -j2 --target recording_reader_fuzz

corpus="$build/corpus"
mkdir -p "$corpus"
seed="$build/seed.db"
rm -f "$seed"
sqlite3 "$seed" < schemas/memledger.sql
sqlite3 "$seed" < fuzz/seed_recording.sql
cp "$seed" "$corpus/synthetic.db"
head -c "$(( $(stat -c %s "$seed") / 2 ))" "$seed" > "$corpus/synthetic-truncated.db"
: > "$corpus/empty"
head -c 4096 /dev/urandom > "$corpus/random"
printf 'SQLite format 3\0' > "$corpus/header-only"
rm -f "$build/foreign.db"
sqlite3 "$build/foreign.db" "CREATE TABLE t (a, b); INSERT INTO t VALUES (1, 'x');"
cp "$build/foreign.db" "$corpus/foreign.db"
cp "$seed" "$corpus/newer.db"
sqlite3 "$corpus/newer.db" "PRAGMA user_version = 99;"
# Real recordings, when a normal build is there (small programs: the fuzzer reads every seed).
# MEMLEDGER_SEED_BUILD names another build folder than build/.
seedbuild="${MEMLEDGER_SEED_BUILD:-build}"
if [[ -x "$seedbuild/bin/memledger" && -x "$seedbuild/samples/rel_fork" ]]; then
  for args in "leaf 100 0" "leakchild 4000" "spawn 300"; do
    out="$corpus/real-${args// /-}.db"
    rm -f "$out"
    "$seedbuild/bin/memledger" record -o "$out" -- "$seedbuild/samples/rel_fork" $args >/dev/null 2>&1 || true
    [[ -s "$out" ]] && head -c "$(( $(stat -c %s "$out") / 2 ))" "$out" > "${out%.db}-truncated.db"
  done
  # `record` compresses by default (the seeds above are zstd frames); one plain SQLite recording
  # too, so that mutations also reach the SQLite reader through a real recording.
  rm -f "$corpus/real-plain.db"
  "$seedbuild/bin/memledger" record --no-compress -o "$corpus/real-plain.db" -- "$seedbuild/samples/rel_fork" leaf 100 0 >/dev/null 2>&1 || true
else
  echo "fuzz.sh: no $seedbuild/bin/memledger: seeding with the synthetic recording only" >&2
fi

cd "$build"
export TMPDIR="$build"  # the target's scratch file
# MEMLEDGER_FUZZ_SEED: libFuzzer's -seed (0, the default, draws one); the test suite fixes it so
# that each CI run explores the same way from the same corpus.
exec ./bin/recording_reader_fuzz -error_exitcode=1 -seed="${MEMLEDGER_FUZZ_SEED:-0}" -max_total_time="$seconds" -max_len=1048576 -timeout=20 \
  -rss_limit_mb=4096 -print_final_stats=1 "$corpus"
