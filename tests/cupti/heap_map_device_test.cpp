// The fragmentation map of device memory (analyzer/heap_map.h) on a recording made through the
// real CUDA collector: fake_caching_app.cpp plays a caching allocator over the fake driver
// (segments by cudaMalloc, blocks carved from them reported with memledger's pool API).
// Ground truth in fake_caching_app.cpp's header.
#include <gtest/gtest.h>

#include "analyzer/heap_map.h"
#include "harness.h"

using namespace memledger::test;
namespace an = memledger::analyzer;

namespace {

constexpr uint64_t MiB = 1 << 20;

const an::MapRegion* regionOf(const std::vector<an::MapRegion>& regions, const std::string& space) {
  for (const an::MapRegion& r : regions)
    if (r.space == space) return &r;
  return nullptr;
}

// Whether a stack has a frame of `function` (its name may carry a namespace).
bool calls(const an::Stack& stack, const std::string& function) {
  for (const an::Frame& f : stack)
    if (f.function && f.function->find(function) != std::string::npos) return true;
  return false;
}

const Recorded& cachingRun() {
  static Recorded rec = [] {
    Recorded r;
    r.dir = std::make_shared<TempDir>();
    r.db = r.dir->file("caching.db");
    r.program = run({memledgerBinary(), "record", "--no-fold", "-o", r.db, "--",
                     binaryDir() + "/tests/fakecupti/fake_caching_app"},
                    RunOptions{{}, {"CUDA_INJECTION64_PATH"}});
    return r;
  }();
  return rec;
}

}  // namespace

TEST(HeapMapDevice, SegmentsAndTheBlocksInsideThem) {
  const Recorded& rec = cachingRun();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  ASSERT_EQ(rec.program.out, "fake caching done\n");
  auto r = an::Recording::open(rec.db);
  std::vector<an::MapRegion> regions = an::mapRegions(r);

  // device:0: the two cudaMalloc'ed segments, one after the other (the CUDA collector's rows).
  const an::MapRegion* device = regionOf(regions, "device:0");
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->from, 0x7f5000000000u);
  EXPECT_EQ(device->to, 0x7f5000000000u + 28 * MiB);
  EXPECT_EQ(device->rows, 2);
  an::HeapHistory segments = an::heapHistory(r, *device);
  an::MapLayout both = segments.layoutAfter(segments.events.size());
  EXPECT_EQ(both.live.size(), 2u);
  EXPECT_TRUE(both.holes.empty());
  EXPECT_TRUE(calls(r.stack(segments.blocks[both.live[1]].stack_id), "new_segment"));

  // segment0: its reserved 20 MiB, stepped event by event.
  const an::MapRegion* s0 = regionOf(regions, "pool:segment0");
  ASSERT_NE(s0, nullptr);
  EXPECT_TRUE(s0->reserved);
  EXPECT_EQ(s0->from, device->from);
  EXPECT_EQ(s0->to - s0->from, 20 * MiB);
  EXPECT_EQ(s0->rows, 8);
  an::HeapHistory h = an::heapHistory(r, *s0);
  ASSERT_EQ(h.events.size(), 11u);  // 8 blocks, 3 frees
  EXPECT_TRUE(h.everyBlock());
  for (size_t k = 0; k <= 8; ++k) {  // each allocation takes the next 2 MiB; the rest is one hole
    an::MapLayout l = h.layoutAfter(k);
    EXPECT_EQ(l.live.size(), k);
    EXPECT_EQ(l.live_bytes, k * 2 * MiB);
    ASSERT_EQ(l.holes.size(), 1u) << k;
    EXPECT_EQ(l.holes[0].address, s0->from + k * 2 * MiB);
    EXPECT_EQ(l.holes[0].size, (20 - 2 * k) * MiB);
  }
  an::MapLayout end = h.layoutAfter(h.events.size());
  EXPECT_TRUE(end.exact);
  EXPECT_EQ(end.live.size(), 5u);
  EXPECT_EQ(end.live_bytes, 10 * MiB);
  ASSERT_EQ(end.holes.size(), 4u);  // blocks 1, 3, 5 and the 4 MiB at the end
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(end.holes[size_t(i)].address, s0->from + (2 * i + 1) * 2 * MiB);
    EXPECT_EQ(end.holes[size_t(i)].size, 2 * MiB);
  }
  EXPECT_EQ(end.holes[3].size, 4 * MiB);
  EXPECT_EQ(end.largest_hole, 4 * MiB);
  EXPECT_DOUBLE_EQ(end.freeRatio(), 0.5);
  EXPECT_DOUBLE_EQ(end.externalFragmentation(), 0.6);  // 10 MiB free, the largest piece 4 MiB
  EXPECT_TRUE(calls(r.stack(h.blocks[end.live[0]].stack_id), "carve_block"));

  EXPECT_EQ(h.layoutAt(h.defaultInstant()).applied, h.events.size());  // 6 of its 10 free MiB scattered

  // segment1: the 6 MiB block that fit nowhere in segment0.
  const an::MapRegion* s1 = regionOf(regions, "pool:segment1");
  ASSERT_NE(s1, nullptr);
  EXPECT_EQ(s1->from, s0->to);
  an::MapLayout one = an::heapHistory(r, *s1).layoutAfter(1);
  EXPECT_EQ(one.live_bytes, 6 * MiB);
  ASSERT_EQ(one.holes.size(), 1u);
  EXPECT_EQ(one.holes[0].size, 2 * MiB);
}
