// Throughput of the recorder core: alloc/free pairs from 4 stacks and 4 threads with a sliding
// window of live blocks, fed straight into an ImageRecorder writing a real SQLite file. Prints
// events/s; asserts the exact totals. MEMLEDGER_BENCH_PAIRS scales it (default 1M pairs; the
// number quoted in reports is 10M).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "recorder_test_util.h"

namespace memledger::recorder {
namespace {

using namespace testutil;

class RecorderThroughput : public RecordingFixture {};

TEST_F(RecorderThroughput, AllocFreePairs) {
  uint64_t pairs = 1'000'000;
  if (const char* env = std::getenv("MEMLEDGER_BENCH_PAIRS")) pairs = std::strtoull(env, nullptr, 10);
  const uint64_t kWindow = 4096;  // live blocks at any time
  std::vector<std::vector<uint64_t>> frames(4);
  for (uint64_t s = 0; s < 4; ++s)
    for (uint64_t d = 0; d < 16; ++d) frames[s].push_back(0x400000 + s * 0x1000 + d * 0x10);
  ImageRecorder& im = image();
  for (uint64_t s = 0; s < 4; ++s) im.onRecord(stack(0x1000 + s, frames[s]));

  auto start = std::chrono::steady_clock::now();
  std::clock_t cpuStart = std::clock();
  Decoded a = alloc(0, 0, 0, 0);
  Decoded f = release(0, 0);
  for (uint64_t i = 0; i < pairs + kWindow; ++i) {
    if (i < pairs) {
      a.ts = kOrigin + i * 50;
      a.a = 0x10000000 + (i % (kWindow * 2)) * 64;
      a.b = 16 + (i & 255);
      a.c = 0x1000 + (i & 3);
      a.tid = static_cast<uint32_t>(1 + (i & 3));
      im.onRecord(a);
    }
    if (i >= kWindow) {
      uint64_t j = i - kWindow;  // free the block allocated kWindow pairs ago
      f.ts = kOrigin + i * 50 + 10;
      f.a = 0x10000000 + (j % (kWindow * 2)) * 64;
      f.tid = static_cast<uint32_t>(1 + (j & 3));
      im.onRecord(f);
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // CPU time too: the shared build machines are often oversubscribed, wall time then lies.
  double cpu = static_cast<double>(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  double events = 2.0 * static_cast<double>(pairs);
  std::printf("[ recorder ] %.0f events: %.3f s wall (%.2f M/s), %.3f s cpu (%.2f M/s)\n", events,
              secs, events / secs / 1e6, cpu, events / cpu / 1e6);
  EXPECT_EQ(im.heapBytes(), 0);
  finish(pairs * 50 + kWindow * 50 + kMs);
  EXPECT_EQ(query("SELECT sum(alloc_count) FROM sites"), static_cast<int64_t>(pairs));
  EXPECT_EQ(query("SELECT sum(free_count) FROM sites"), static_cast<int64_t>(pairs));
  EXPECT_EQ(query("SELECT sum(leak_count) FROM sites"), 0);
  EXPECT_EQ(query("SELECT max(max_live_count) <= 4096 FROM sites"), 1);
}

}  // namespace
}  // namespace memledger::recorder
