// The ledger model on real programs: pools counted once (samples/pool_arena.c), device-like kinds
// from the collector entry point in their own spaces (samples/collector_events.c), and the
// simultaneous peak over live processes (samples/fork_tree.c). Ground truth in each sample's header.
#include <gtest/gtest.h>

#include "harness.h"
#include "analyzer/live_sets.h"

using namespace memledger::test;

namespace {

constexpr int64_t MiB = 1 << 20;

const json* spaceNamed(const json& list, const std::string& name) {
  for (const json& s : list)
    if (s["name"] == name) return &s;
  return nullptr;
}

}  // namespace

TEST(LedgerPools, APoolIsCountedOnceInTheHeap) {
  const Recorded& rec = recordOnce(sample("pool_arena"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const json& report = reportOnce(rec);
  const json& peak = report["peak"];
  // The 64 MiB arena is the heap; the 16 blocks inside it are not counted again.
  EXPECT_GE(peak["bytes"].get<int64_t>(), 64 * MiB);
  EXPECT_LT(peak["bytes"].get<int64_t>(), 64 * MiB + 64 * 1024);
  const json* pool = spaceNamed(peak["pools"], "pool:tensors");
  ASSERT_NE(pool, nullptr) << peak["pools"].dump(1);
  EXPECT_EQ((*pool)["reserved_bytes"], 64 * MiB);
  EXPECT_EQ((*pool)["bytes"], 64 * MiB);   // in use at its peak: all 16 blocks
  EXPECT_EQ((*pool)["end_bytes"], 0);      // destroyed: its last 8 blocks went with it
  EXPECT_EQ((*pool)["space"], "heap");     // its memory is the malloc'ed arena
  EXPECT_FALSE((*pool)["destroyed_ns"].is_null());
  const json* unnamed = spaceNamed(peak["pools"], "custom");
  ASSERT_NE(unnamed, nullptr);
  EXPECT_EQ((*unnamed)["bytes"], 64 * MiB);
  EXPECT_EQ((*unnamed)["end_bytes"], 8 * MiB);
  // The heap's live set at its peak holds the arena and no pool block.
  for (const json& s : peak["sites"]) EXPECT_NE(s["kind"], "custom") << s.dump();
}

TEST(LedgerPools, BlocksFreedInAPoolLowerInUseNotTheHeap) {
  const Recorded& rec = recordOnce(sample("pool_arena"));
  std::string db = plainRecording(rec.db);
  // The heap's live bytes never went above the arena and the runtime's few allocations.
  EXPECT_LT(sqlInt(db, "SELECT peak_bytes FROM spaces WHERE image_id = 1 AND name = 'heap'"), 64 * MiB + 64 * 1024);
  // Leaks: 2 blocks of the unnamed pool (8 MiB), never the destroyed pool's blocks, never the arena.
  const json& leaks = reportOnce(rec)["leaks"];
  int64_t custom = 0;
  for (const json& s : leaks["sites"])
    if (s["kind"] == "custom") custom += s["bytes"].get<int64_t>();
  EXPECT_EQ(custom, 8 * MiB);
}

TEST(LedgerCollector, DeviceKindsLandInTheirOwnSpaces) {
  const Recorded& rec = recordOnce(sample("collector_events"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "events sent\n");
  const json& peak = reportOnce(rec)["peak"];
  const json* dev0 = spaceNamed(peak["spaces"], "device:0");
  const json* dev1 = spaceNamed(peak["spaces"], "device:1");
  const json* pinned = spaceNamed(peak["spaces"], "pinned");
  ASSERT_TRUE(dev0 && dev1 && pinned) << peak["spaces"].dump(1);
  EXPECT_EQ((*dev0)["bytes"], 7 * MiB);
  EXPECT_EQ((*dev1)["bytes"], 8 * MiB);
  EXPECT_EQ((*pinned)["bytes"], 256 * 1024);
  // The host heap peak does not move: only the program's own mallocs (100 B and stdio's buffer).
  EXPECT_LT(peak["bytes"].get<int64_t>(), 64 * 1024);
  // 6 MiB of device memory is never freed: two device leaks at device_alloc.
  int64_t device = 0;
  for (const json& s : reportOnce(rec)["leaks"]["sites"])
    if (s["kind"] == "device") {
      device += s["bytes"].get<int64_t>();
      EXPECT_TRUE(stackHas(s["stack"], "device_alloc")) << s.dump();
    }
  EXPECT_EQ(device, 6 * MiB);
}

TEST(LedgerCollector, WithoutMemledgerTheEntryPointIsAbsent) {
  RunResult r = run({sample("collector_events")});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "no collector\n");
}

TEST(LedgerSpaces, EveryImageAndTheRecordingHaveSpaceRows) {
  const Recorded& rec = recordOnce(sample("collector_events"));
  std::string db = plainRecording(rec.db);
  EXPECT_EQ(sqlInt(db, "SELECT count(*) FROM spaces WHERE image_id = 0 AND name = 'device:0'"), 1);
  EXPECT_EQ(sqlInt(db, "SELECT peak_bytes FROM spaces WHERE image_id = 0 AND name = 'device:0'"), 7 * MiB);
  // The live set at device 0's simultaneous peak: the three blocks, 7 MiB (schema 8 packs it in
  // peak_site_lists: read through the analyzer's one reader of both forms).
  int64_t live = 0, sites = 0;
  for (const auto& s : memledger::analyzer::detail::peakSites(memledger::analyzer::Recording::open(db), "device:0")) {
    live += s.bytes;
    ++sites;
  }
  EXPECT_EQ(live, 7 * MiB);
  EXPECT_GE(sites, 1);
}

TEST(LedgerProcessTree, TheHeapPeakIsWhatLiveProcessesHeldAtOnce) {
  const Recorded& rec = recordOnce(sample("overlap_tree"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const json& report = reportOnce(rec);
  const json& peak = report["peak"];
  EXPECT_EQ(peak["scope"], "all processes");
  // 1 + 2 + 3 MiB at once (plus the runtime's few KiB per process); never the 10 MiB of a sum
  // that keeps exited processes.
  int64_t bytes = peak["bytes"].get<int64_t>();
  EXPECT_GE(bytes, 6 * MiB);
  EXPECT_LT(bytes, 6 * MiB + 256 * 1024);
  // The live set at that instant: the three holds, from three processes.
  int64_t held = 0;
  for (const char* f : {"parent_hold", "child_two", "child_three"}) held += sumWith(peak["sites"], f, "bytes");
  EXPECT_EQ(held, 6 * MiB);
  EXPECT_EQ(sumWith(peak["sites"], "child_four", "bytes"), 0);
  // Every process keeps its own peak.
  int64_t largest = 0;
  for (const json& p : report["processes"]) largest = std::max(largest, p["peak_heap_bytes"].get<int64_t>());
  EXPECT_GE(largest, 4 * MiB);
  EXPECT_LT(largest, 4 * MiB + 256 * 1024);
  // Phases never count a process that has ended: no phase peaks above the simultaneous peak.
  for (const json& ph : report["phases"]) EXPECT_LE(ph["peak_bytes"].get<int64_t>(), bytes) << ph.dump();
  // Leaks stay: 2 + 3 + 4 MiB from the children, 1 MiB from the parent.
  EXPECT_EQ(sumWith(report["leaks"]["sites"], "child_two", "bytes") +
                sumWith(report["leaks"]["sites"], "child_three", "bytes") +
                sumWith(report["leaks"]["sites"], "child_four", "bytes"),
            9 * MiB);
}
