// The recorder core across images and memory kinds: anonymous mmap with partial munmaps, fork
// children (empty live set, inherited stacks), exec, exit statuses, the timeline, markers, modules.
#include <sys/wait.h>

#include "recorder_test_util.h"

namespace memledger::recorder {
namespace {

using namespace testutil;

const std::vector<uint64_t> kFramesM = {0x501000, 0x502000};
const std::vector<uint64_t> kFramesA = {0x401000, 0x402000};
constexpr uint64_t kM = 0x4d4d, kA = 0xaaaa;
constexpr uint64_t kPage = 4096;

class RecorderImages : public RecordingFixture {};

TEST_F(RecorderImages, PartialMunmapSplitsAndCountsBytes) {
  RecordingOptions noFold;
  noFold.fold = false;
  open(noFold);
  ImageRecorder& im = image();
  im.onRecord(stack(kM, kFramesM));
  const uint64_t base = 0x7f0000000000;
  im.onRecord(alloc(1 * kMs, base, 4 * kPage, kM, 1, Op::Mmap, AllocKind::Mmap));
  im.onRecord(unmap(2 * kMs, base + kPage, kPage));         // a hole: two pieces remain
  EXPECT_EQ(im.mmapBytes(), static_cast<int64_t>(3 * kPage));
  im.onRecord(unmap(3 * kMs, base, kPage));                 // the lower piece goes
  EXPECT_EQ(im.mmapBytes(), static_cast<int64_t>(2 * kPage));
  // A second mapping, removed by one munmap spanning it and part of the first mapping's rest.
  im.onRecord(alloc(4 * kMs, base + 4 * kPage, 2 * kPage, kM, 1, Op::Mmap, AllocKind::Mmap));
  EXPECT_EQ(im.mmapBytes(), static_cast<int64_t>(4 * kPage));
  im.onRecord(unmap(5 * kMs, base + 3 * kPage, 3 * kPage));
  EXPECT_EQ(im.mmapBytes(), static_cast<int64_t>(1 * kPage));
  finish(10 * kMs);
  auto q = [&](const char* col) {
    return query(std::string("SELECT ") + col + " FROM sites WHERE kind = 'mmap'");
  };
  EXPECT_EQ(q("alloc_count"), 2);
  EXPECT_EQ(q("alloc_bytes"), static_cast<int64_t>(6 * kPage));
  EXPECT_EQ(q("free_count"), 1);            // the second mapping is gone entirely
  EXPECT_EQ(q("freed_bytes"), static_cast<int64_t>(5 * kPage));
  EXPECT_EQ(q("leak_count"), 1);            // one page of the first mapping is left
  EXPECT_EQ(q("leak_bytes"), static_cast<int64_t>(kPage));
  EXPECT_EQ(query("SELECT peak_mmap_bytes FROM processes"), static_cast<int64_t>(4 * kPage));
  EXPECT_EQ(query("SELECT peak_mmap_ns FROM processes"), 1 * kMs);
  EXPECT_EQ(query("SELECT peak_heap_bytes FROM processes"), 0);
  // The leaked mapping is one row with its original extent; the freed one lived 1 ms (a row only
  // because of --no-fold).
  EXPECT_EQ(query("SELECT size FROM allocations WHERE t_free IS NULL"), static_cast<int64_t>(4 * kPage));
  EXPECT_EQ(query("SELECT t_free FROM allocations WHERE address = " + std::to_string(base + 4 * kPage)),
            5 * kMs);
  EXPECT_EQ(text("SELECT op FROM allocations WHERE t_free IS NULL"), "mmap");
  EXPECT_EQ(activitySum([](const Activity& a) { return a.kind == "mmap"; }, true),
            static_cast<int64_t>(6 * kPage));
}

TEST_F(RecorderImages, MapFixedOverAMappingReplacesIt) {
  ImageRecorder& im = image();
  im.onRecord(stack(kM, kFramesM));
  im.onRecord(alloc(1 * kMs, 0x10000, 2 * kPage, kM, 1, Op::Mmap, AllocKind::Mmap));
  im.onRecord(alloc(2 * kMs, 0x10000, 2 * kPage, kM, 1, Op::Mmap, AllocKind::Mmap));
  EXPECT_EQ(im.mmapBytes(), static_cast<int64_t>(2 * kPage));
  finish(3 * kMs);
  EXPECT_EQ(query("SELECT free_count FROM sites"), 1);
  EXPECT_EQ(query("SELECT leak_count FROM sites"), 1);
}

TEST_F(RecorderImages, ForkChildStartsEmptyAndInheritsStacks) {
  ImageRecorder& parent = image(100, 1);
  parent.onRecord(stack(kA, kFramesA));
  parent.onRecord(alloc(1 * kMs, 0x1000, 64, kA));
  ImageRecorder& child = image(101, 100, /*forked=*/true);
  child.onRecord(release(2 * kMs, 0x1000, 7));             // the parent's block: unknown here
  child.onRecord(alloc(3 * kMs, 0x2000, 32, kA, 7));       // stack sent on the parent's ring only
  EXPECT_EQ(child.heapBytes(), 32);
  EXPECT_EQ(parent.heapBytes(), 64);
  rec_->noteWaitStatus(101, 3 << 8);                       // exit(3), seen by the reaping parent
  rec_->closeImage(child.id(), kOrigin + 4 * kMs);
  finish(10 * kMs);
  EXPECT_EQ(query("SELECT unknown_frees FROM processes WHERE id = 2"), 1);
  EXPECT_EQ(query("SELECT parent_id FROM processes WHERE id = 2"), 1);
  EXPECT_EQ(query("SELECT forked FROM processes WHERE id = 2"), 1);
  EXPECT_EQ(query("SELECT exit_code FROM processes WHERE id = 2"), 3);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 2"), "exit");
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE image_id = 2"), 32);
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE image_id = 1"), 64);
  // The child's stack has its own ips (same addresses: same address space).
  EXPECT_EQ(query("SELECT count(*) FROM stacks WHERE image_id = 2 AND length(ips) = 8"), 1);
  EXPECT_EQ(query("SELECT count(*) FROM ips WHERE image_id = 2 AND address = " +
                  std::to_string(kFramesA[0])), 1);
}

TEST_F(RecorderImages, ExecEndsTheImageAndStatusesResolve) {
  ImageRecorder& first = image(200, 1);
  first.onRecord(stack(kA, kFramesA));
  first.onRecord(alloc(1 * kMs, 0x1000, 10, kA));
  ImageRecorder& execd = image(200, 1);  // same pid, not forked: an exec
  EXPECT_TRUE(first.closed());
  EXPECT_FALSE(execd.closed());
  ImageRecorder& other = image(300, 200, true);
  Decoded exitRec{};
  exitRec.type = RecordType::Exit;
  exitRec.a = 5;
  other.onRecord(exitRec);
  rec_->closeImage(other.id(), kOrigin + 5 * kMs);
  rec_->noteWaitStatus(200, SIGSEGV);  // killed by SIGSEGV
  rec_->closeImage(execd.id(), kOrigin + 6 * kMs);
  finish(7 * kMs);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 1"), "exec");
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE image_id = 1"), 10);
  EXPECT_EQ(query("SELECT parent_id FROM processes WHERE id = 2"), 1);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 2"), "signal");
  EXPECT_EQ(query("SELECT signal FROM processes WHERE id = 2"), SIGSEGV);
  EXPECT_EQ(query("SELECT exit_code FROM processes WHERE id = 2"), -2);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 3"), "exit");
  EXPECT_EQ(query("SELECT exit_code FROM processes WHERE id = 3"), 5);
  EXPECT_EQ(query("SELECT parent_id FROM processes WHERE id = 3"), 2);
}

TEST_F(RecorderImages, StatusArrivingBeforeTheRegistrationIsKept) {
  image(400, 1);
  image(401, 400, true);             // a fork child...
  rec_->noteWaitStatus(401, 7 << 8);  // ...reaped by its parent before its exec'd image registered
  image(401, 400);                   // the exec'd program
  rec_->noteWaitStatus(402, SIGKILL);  // a pid whose registration is still queued
  image(402, 400, true);
  finish(5 * kMs);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 2"), "exec");
  EXPECT_EQ(query("SELECT exit_code FROM processes WHERE id = 2"), -2);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 3"), "exit");
  EXPECT_EQ(query("SELECT exit_code FROM processes WHERE id = 3"), 7);
  EXPECT_EQ(query("SELECT parent_id FROM processes WHERE id = 3"), 2);
  EXPECT_EQ(text("SELECT ended_by FROM processes WHERE id = 4"), "signal");
  EXPECT_EQ(query("SELECT signal FROM processes WHERE id = 4"), SIGKILL);
}

TEST_F(RecorderImages, OrphanedForkChildFindsItsParentByCommand) {
  ImageRecorder& first = image(500, 1);
  first.onRecord(stack(kA, kFramesA));
  ImageRecorder& middle = image(501, 500, true);
  rec_->closeImage(first.id(), kOrigin + 1 * kMs);
  rec_->closeImage(middle.id(), kOrigin + 2 * kMs);
  ImageStart s;
  s.pid = 502;
  s.ppid = 9999;  // the recorder: reparented before it registered
  s.forked = true;
  s.orphaned = true;
  s.command = "prog arg";
  s.exe = "/usr/bin/prog";
  s.start_ns = kOrigin + 3 * kMs;
  ImageRecorder& daemon = rec_->openImage(s);
  daemon.onRecord(alloc(4 * kMs, 0x1000, 8, kA));  // the stack the first image sent
  finish(5 * kMs);
  EXPECT_EQ(query("SELECT parent_id FROM processes WHERE id = 3"), 2);
  EXPECT_EQ(query("SELECT ppid FROM processes WHERE id = 3"), 501);
  EXPECT_EQ(query("SELECT length(ips) FROM stacks WHERE image_id = 3"), 8);  // via middle, from first
}

TEST_F(RecorderImages, TimelineBucketsHoldEndMaxMinAndCounts) {
  ImageRecorder& im = image();
  im.onRecord(stack(kA, kFramesA));
  im.onRecord(alloc(100'000, 0x1000, 100, kA));    // bucket 0: 0 -> 100 -> 400 -> 150
  im.onRecord(alloc(200'000, 0x2000, 300, kA));
  im.onRecord(release(300'000, 0x1000));
  im.onRecord(release(400'000, 0x2000));
  im.onRecord(alloc(500'000, 0x3000, 150, kA));
  im.sampleMemory(kOrigin + 2'100'000, 1 << 20, 1 << 19);  // bucket 2: only a sample
  im.onRecord(alloc(3'500'000, 0x4000, 50, kA));   // bucket 3
  finish(5 * kMs);
  auto col = [&](const char* c, int bucket) {
    return query(std::string("SELECT ") + c + " FROM timeline WHERE t_ns = " + std::to_string(bucket * kMs));
  };
  EXPECT_EQ(query("SELECT count(*) FROM timeline"), 3);
  EXPECT_EQ(col("heap_bytes", 0), 150);
  EXPECT_EQ(col("heap_max", 0), 400);
  EXPECT_EQ(col("heap_min", 0), 0);
  EXPECT_EQ(col("allocs", 0), 3);
  EXPECT_EQ(col("frees", 0), 2);
  EXPECT_EQ(col("alloc_bytes", 0), 550);
  EXPECT_EQ(col("rss_bytes", 0), -2);  // NULL before the first sample
  EXPECT_EQ(col("rss_bytes", 2), 1 << 20);
  EXPECT_EQ(col("anon_bytes", 2), 1 << 19);
  EXPECT_EQ(col("heap_bytes", 2), 150);
  EXPECT_EQ(col("allocs", 2), 0);
  EXPECT_EQ(col("heap_min", 3), 150);
  EXPECT_EQ(col("heap_max", 3), 200);
  EXPECT_EQ(col("rss_bytes", 3), 1 << 20);
  EXPECT_EQ(query("SELECT peak_rss FROM processes"), 1 << 20);
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'bucket_ns'"), 1 * kMs);
}

TEST_F(RecorderImages, SampleWaitsForEventsStillInTheRing) {
  ImageRecorder& im = image();
  im.onRecord(stack(kA, kFramesA));
  im.sampleMemory(kOrigin + 5 * kMs, 4096, std::nullopt, /*caughtUp=*/false);
  im.onRecord(alloc(1 * kMs, 0x1000, 100, kA));  // older than the sample: its own bucket
  im.onRecord(alloc(6 * kMs, 0x2000, 100, kA));
  finish(7 * kMs);
  EXPECT_EQ(query("SELECT rss_bytes FROM timeline WHERE t_ns = " + std::to_string(1 * kMs)), -2);
  EXPECT_EQ(query("SELECT rss_bytes FROM timeline WHERE t_ns = " + std::to_string(6 * kMs)), 4096);
}

TEST_F(RecorderImages, MarkersAndModules) {
  ImageRecorder& im = image();
  Decoded mod{};
  mod.type = RecordType::Module;
  mod.ts = kOrigin + 1 * kMs;
  mod.a = 0x7f0000000000;
  mod.b = 0x7f0000001000;
  mod.c = 0x7f0000009000;
  mod.text = "/usr/lib/libfoo.so";
  im.onRecord(mod);
  Decoded gone{};
  gone.type = RecordType::ModuleGone;
  gone.ts = kOrigin + 3 * kMs;
  gone.a = mod.a;
  gone.b = mod.b;
  im.onRecord(gone);
  Decoded mark{};
  mark.type = RecordType::Marker;
  mark.ts = kOrigin + 2 * kMs;
  mark.text = "load";
  im.onRecord(mark);
  finish(4 * kMs);
  EXPECT_EQ(text("SELECT path FROM modules"), "/usr/lib/libfoo.so");
  EXPECT_EQ(query("SELECT load_ns FROM modules"), 1 * kMs);
  EXPECT_EQ(query("SELECT unload_ns FROM modules"), 3 * kMs);
  EXPECT_EQ(query("SELECT end FROM modules"), 0x7f0000009000);
  EXPECT_EQ(text("SELECT name FROM markers"), "load");
  EXPECT_EQ(query("SELECT t_ns FROM markers"), 2 * kMs);
}

}  // namespace
}  // namespace memledger::recorder
