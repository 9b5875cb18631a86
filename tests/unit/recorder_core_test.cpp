// The recorder core fed with hand-made records: pairing, leaks, the exact peak with its live set,
// temporaries, realloc chains, folding. Every number is checked in the SQLite file it writes.
#include "recorder_test_util.h"

namespace memledger::recorder {
namespace {

using namespace testutil;

const std::vector<uint64_t> kFramesA = {0x401000, 0x402000, 0x403000};
const std::vector<uint64_t> kFramesB = {0x401100, 0x402000, 0x403000};
const std::vector<uint64_t> kFramesC = {0x401200, 0x403000};
constexpr uint64_t kA = 0xaaaa, kB = 0xbbbb, kC = 0xcccc;

class RecorderCore : public RecordingFixture {
 protected:
  void stacks(ImageRecorder& im) {
    im.onRecord(stack(kA, kFramesA));
    im.onRecord(stack(kB, kFramesB));
    im.onRecord(stack(kC, kFramesC));
  }
  // stacks.id of kA, kB, kC (ordinal 1, 2, 3). Stacks are a tree of rows: kA is row 1 (its three
  // ips); kB shares 0x402000 <- 0x403000 with it, which gets row 2, and kB is row 3 (0x401100,
  // parent 2); kC shares 0x403000, row 4, and is row 5 (0x401200, parent 4).
  static int64_t stackId(uint64_t ordinal) { return 2 * static_cast<int64_t>(ordinal) - 1; }
  std::string site(uint64_t stackOrdinal, const char* col, const char* kind = "malloc") {
    return "SELECT " + std::string(col) + " FROM sites WHERE stack_id = " + std::to_string(stackId(stackOrdinal)) +
           " AND kind = '" + kind + "'";
  }
};

TEST_F(RecorderCore, LeaksAndTotalsPerSite) {
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 100, kA));
  im.onRecord(alloc(2 * kMs, 0x2000, 100, kA));
  im.onRecord(alloc(3 * kMs, 0x3000, 120, kA));
  im.onRecord(alloc(4 * kMs, 0x4000, 50, kB, 1, Op::New, AllocKind::New));
  im.onRecord(release(5 * kMs, 0x2000));
  finish(10 * kMs);

  EXPECT_EQ(query(site(1, "alloc_count")), 3);
  EXPECT_EQ(query(site(1, "alloc_bytes")), 320);
  EXPECT_EQ(query(site(1, "free_count")), 1);
  EXPECT_EQ(query(site(1, "freed_bytes")), 100);
  EXPECT_EQ(query(site(1, "leak_count")), 2);
  EXPECT_EQ(query(site(1, "leak_bytes")), 220);
  EXPECT_EQ(query(site(1, "min_size")), 100);
  EXPECT_EQ(query(site(1, "max_size")), 120);
  EXPECT_EQ(query(site(1, "same_size_count")), 1);
  EXPECT_EQ(query(site(1, "lifetime_ns_sum")), 3 * kMs);
  EXPECT_EQ(query(site(1, "max_live_count")), 3);
  EXPECT_EQ(query(site(2, "leak_bytes", "new")), 50);
  EXPECT_EQ(query("SELECT count(*) FROM sites"), 2);
  // By default only leaks are rows (no free); the freed block is in the site's totals only.
  EXPECT_EQ(query("SELECT count(*) FROM allocations WHERE t_free IS NULL"), 3);
  EXPECT_EQ(query("SELECT count(*) FROM allocations"), 3);
  EXPECT_EQ(query("SELECT count(*) FROM allocations WHERE address = 8192"), 0);
  EXPECT_EQ(query("SELECT count(*) FROM allocations WHERE op = 'new' AND kind = 'new'"), 1);
  EXPECT_EQ(text("SELECT value FROM meta WHERE key = 'allocation_rows'"), "leaks");
  EXPECT_EQ(text("SELECT value FROM meta WHERE key = 'schema_version'"), std::to_string(memledger::schema::kSchemaVersion));
  // Per-site activity per 1 ms bucket: the freed block's allocation is still there, at 2 ms, and
  // its free at 5 ms (schema 7).
  EXPECT_EQ(query("SELECT count(*) FROM site_buckets"), 1);  // 5 buckets of one image, one commit
  std::vector<Activity> act = activity();
  ASSERT_EQ(act.size(), 5u);
  EXPECT_EQ(act[1].t_ns, static_cast<int64_t>(2 * kMs));
  EXPECT_EQ(act[1].stack_id, 1);
  EXPECT_EQ(act[1].alloc_bytes, 100);
  EXPECT_EQ(activitySum([](const Activity& a) { return a.stack_id == 1; }), 3);
  EXPECT_EQ(activitySum([](const Activity& a) { return a.stack_id == 1; }, true), 320);
  EXPECT_EQ(act[3].stack_id, 3);
  EXPECT_EQ(act[3].kind, "new");
  EXPECT_EQ(act[4].t_ns, static_cast<int64_t>(5 * kMs));
  EXPECT_EQ(act[4].stack_id, 1);
  EXPECT_EQ(act[4].allocs, 0);
  EXPECT_EQ(act[4].frees, 1);
  EXPECT_EQ(act[4].freed_bytes, 100);
  EXPECT_EQ(act[4].temps, 0);  // 0x3000 and 0x4000 were allocated after it
  // What the site held at the end: its allocations minus its frees, the leaks.
  EXPECT_EQ(activitySum([](const Activity& a) { return a.stack_id == 1; }, true) -
                [&] {
                  int64_t freed = 0;
                  for (const Activity& a : act) freed += a.stack_id == 1 ? a.freed_bytes : 0;
                  return freed;
                }(),
            220);
  // Stacks: ips are interned per image, innermost first; the stacks share outer frames as a tree.
  EXPECT_EQ(query("SELECT count(*) FROM stacks"), 5);
  EXPECT_EQ(query("SELECT count(*) FROM ips"), 5);
  EXPECT_EQ(text("SELECT hex(ips) FROM stacks WHERE id = 1"), "010000000200000003000000");
  EXPECT_EQ(query("SELECT count(*) FROM stacks WHERE parent_id IS NULL"), 3);  // 1, 2 and 4
  EXPECT_EQ(query("SELECT parent_id FROM stacks WHERE id = 3"), 2);
  EXPECT_EQ(query("SELECT parent_id FROM stacks WHERE id = 5"), 4);
  // A whole stack: the row's ips, then its parent's whole stack.
  auto chain = [&](int64_t id) {
    return text("WITH RECURSIVE c(id, parent, ips, depth) AS (SELECT id, parent_id, ips, 0 FROM stacks "
                "WHERE id = " + std::to_string(id) + " UNION ALL SELECT s.id, s.parent_id, s.ips, c.depth + 1 "
                "FROM stacks s JOIN c ON s.id = c.parent) SELECT group_concat(hex(ips), '') FROM "
                "(SELECT ips FROM c ORDER BY depth)");
  };
  EXPECT_EQ(chain(stackId(1)), "010000000200000003000000");
  EXPECT_EQ(chain(stackId(2)), "040000000200000003000000");
  EXPECT_EQ(chain(stackId(3)), "0500000003000000");
  EXPECT_EQ(query("SELECT address FROM ips WHERE id = 1"), 0x401000);
  EXPECT_EQ(query("SELECT end_ns FROM processes WHERE id = 1"), 10 * kMs);
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'duration_ns'"), 10 * kMs);
}

TEST_F(RecorderCore, PeakIsExactAndKeepsTheLiveSetAtThatInstant) {
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 100, kA));   // 100
  im.onRecord(alloc(2 * kMs, 0x2000, 200, kB));   // 300
  im.onRecord(alloc(3 * kMs, 0x3000, 400, kC));   // 700  <- the peak
  im.onRecord(release(4 * kMs, 0x3000));          // 300
  im.onRecord(alloc(5 * kMs, 0x4000, 300, kA));   // 600
  im.onRecord(release(6 * kMs, 0x2000));          // 400
  im.onRecord(alloc(7 * kMs, 0x5000, 10, kB));    // 410
  finish(10 * kMs);

  EXPECT_EQ(query("SELECT peak_heap_bytes FROM processes"), 700);
  EXPECT_EQ(query("SELECT peak_heap_ns FROM processes"), 3 * kMs);
  EXPECT_EQ(query(site(1, "peak_bytes")), 100);  // A: only 0x1000 was live at the peak
  EXPECT_EQ(query(site(1, "peak_count")), 1);
  EXPECT_EQ(query(site(2, "peak_bytes")), 200);
  EXPECT_EQ(query(site(3, "peak_bytes")), 400);
  EXPECT_EQ(query("SELECT sum(peak_bytes) FROM sites"), 700);
  EXPECT_EQ(query(site(1, "leak_bytes")), 400);
  EXPECT_EQ(query(site(2, "leak_bytes")), 10);
  EXPECT_EQ(query(site(3, "leak_bytes")), 0);
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'peak_image'"), 1);
}

TEST_F(RecorderCore, LaterPeakReplacesTheSnapshot) {
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 500, kA));   // 500 peak #1
  im.onRecord(release(2 * kMs, 0x1000));          // 0
  im.onRecord(alloc(3 * kMs, 0x2000, 300, kB));   // 300
  im.onRecord(alloc(4 * kMs, 0x3000, 300, kC));   // 600 peak #2
  im.onRecord(release(5 * kMs, 0x2000));          // 300
  finish(10 * kMs);
  EXPECT_EQ(query("SELECT peak_heap_bytes FROM processes"), 600);
  EXPECT_EQ(query("SELECT peak_heap_ns FROM processes"), 4 * kMs);
  EXPECT_EQ(query(site(1, "peak_bytes")), 0);
  EXPECT_EQ(query(site(2, "peak_bytes")), 300);
  EXPECT_EQ(query(site(3, "peak_bytes")), 300);
}

TEST_F(RecorderCore, TemporariesArePerAllocatingThread) {
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 10, kA, 1));
  im.onRecord(release(1 * kMs + 10, 0x1000, 1));     // temporary
  im.onRecord(alloc(2 * kMs, 0x2000, 20, kA, 1));
  im.onRecord(alloc(2 * kMs + 5, 0x3000, 30, kB, 1));
  im.onRecord(release(2 * kMs + 10, 0x2000, 1));     // not: thread 1 allocated 0x3000 since
  im.onRecord(alloc(3 * kMs, 0x4000, 40, kA, 2));
  im.onRecord(alloc(3 * kMs + 1, 0x5000, 50, kB, 1));  // another thread's allocation
  im.onRecord(release(3 * kMs + 2, 0x4000, 1));     // temporary: thread 2 allocated nothing else
  finish(10 * kMs);
  EXPECT_EQ(query(site(1, "temp_count")), 2);
  EXPECT_EQ(query(site(1, "temp_bytes")), 50);
  EXPECT_EQ(query(site(2, "temp_count")), 0);
  // Short-lived blocks are folded: only long-lived or leaked ones are rows.
  EXPECT_EQ(query("SELECT count(*) FROM allocations"), 2);  // 0x3000 and 0x5000 leaked
}

TEST_F(RecorderCore, ReallocChainsCountAtTheNewSite) {
  RecordingOptions opt;
  opt.fold_threshold_ns = kMs;  // --fold-ms 1: the realloc'ed blocks below get rows
  open(opt);
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 16, kA));
  im.onRecord(release(2 * kMs, 0x1000, 1, Op::Realloc));
  im.onRecord(alloc(2 * kMs + 1, 0x9000, 4, kC, 2));  // another thread in between: no effect
  im.onRecord(alloc(2 * kMs + 2, 0x2000, 32, kB, 1, Op::Realloc));
  im.onRecord(release(4 * kMs, 0x2000, 1, Op::Realloc));
  im.onRecord(alloc(4 * kMs + 1, 0x2000, 64, kB, 1, Op::Realloc));  // in place
  im.onRecord(release(6 * kMs, 0x2000, 1, Op::Realloc));
  im.onRecord(release(6 * kMs + 1, 0x9000, 1));                      // breaks the pair
  im.onRecord(alloc(6 * kMs + 2, 0x3000, 128, kB, 1, Op::Realloc));  // not a realloc of a block
  im.onRecord(alloc(7 * kMs, 0x4000, 8, kC, 1, Op::Realloc));        // realloc(NULL, n)
  finish(10 * kMs);
  EXPECT_EQ(query(site(2, "realloc_count")), 2);
  EXPECT_EQ(query(site(2, "max_realloc_chain")), 2);
  EXPECT_EQ(query(site(2, "alloc_count")), 3);
  EXPECT_EQ(query(site(3, "realloc_count")), 0);
  EXPECT_EQ(query(site(1, "realloc_count")), 0);
  EXPECT_EQ(query(site(1, "temp_count")), 0);  // a realloc's free is no temporary
  // The blocks of 1..2 ms and 2..4 ms were recorded; the in-place realloc's row points at it.
  EXPECT_EQ(query("SELECT realloc_of FROM allocations WHERE address = 8192 AND size = 64"),
            query("SELECT id FROM allocations WHERE address = 8192 AND size = 32"));
  EXPECT_EQ(query("SELECT realloc_of FROM allocations WHERE size = 32"),
            query("SELECT id FROM allocations WHERE size = 16"));
}

TEST_F(RecorderCore, MissedFreeAndUnknownFree) {
  ImageRecorder& im = image();
  stacks(im);
  im.onRecord(alloc(1 * kMs, 0x1000, 10, kA));
  im.onRecord(alloc(2 * kMs, 0x1000, 30, kB));  // same address again: the first was freed unseen
  im.onRecord(release(3 * kMs, 0x7777));        // never allocated
  im.onRecord(release(4 * kMs, 0x1000));
  finish(10 * kMs);
  EXPECT_EQ(query(site(1, "free_count")), 1);
  EXPECT_EQ(query(site(1, "leak_count")), 0);
  EXPECT_EQ(query(site(2, "free_count")), 1);
  EXPECT_EQ(query("SELECT unknown_frees FROM processes"), 1);
  EXPECT_EQ(query("SELECT peak_heap_bytes FROM processes"), 30);
}

TEST_F(RecorderCore, FoldingAndNoFold) {
  {
    ImageRecorder& im = image();
    stacks(im);
    for (uint64_t i = 0; i < 100; ++i) {
      im.onRecord(alloc(i * 10, 0x1000 + i * 16, 8, kA));
      im.onRecord(release(i * 10 + 5, 0x1000 + i * 16));
    }
    finish(10 * kMs);
    EXPECT_EQ(query("SELECT count(*) FROM allocations"), 0);
    EXPECT_EQ(query(site(1, "free_count")), 100);
    // All 100 allocations fall in the first 1 ms bucket: one site_buckets entry, its frees too,
    // each a temporary (freed before the thread allocated again).
    std::vector<Activity> act = activity();
    ASSERT_EQ(act.size(), 1u);
    EXPECT_EQ(act[0].t_ns, 0);
    EXPECT_EQ(act[0].allocs, 100);
    EXPECT_EQ(act[0].alloc_bytes, 800);
    EXPECT_EQ(act[0].frees, 100);
    EXPECT_EQ(act[0].freed_bytes, 800);
    EXPECT_EQ(act[0].temps, 100);
    EXPECT_EQ(text("SELECT value FROM meta WHERE key = 'allocation_rows'"), "leaks");
    EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'fold_threshold_ns'"), INT64_MAX);
  }
  {
    // --fold-ms 2: freed blocks that lived at least 2 ms are rows, shorter ones are not.
    RecordingOptions opt;
    opt.fold_threshold_ns = 2 * kMs;
    open(opt);
    ImageRecorder& im = image();
    stacks(im);
    im.onRecord(alloc(0, 0x1000, 8, kA));
    im.onRecord(alloc(0, 0x2000, 16, kA));
    im.onRecord(alloc(0, 0x3000, 32, kA));
    im.onRecord(release(1 * kMs, 0x1000));
    im.onRecord(release(2 * kMs, 0x2000));
    finish(10 * kMs);
    EXPECT_EQ(query("SELECT count(*) FROM allocations"), 2);
    EXPECT_EQ(query("SELECT size FROM allocations WHERE t_free IS NOT NULL"), 16);
    EXPECT_EQ(query("SELECT size FROM allocations WHERE t_free IS NULL"), 32);
    EXPECT_EQ(text("SELECT value FROM meta WHERE key = 'allocation_rows'"), "long_lived");
    EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'fold_threshold_ns'"), 2 * kMs);
  }
  RecordingOptions opt;
  opt.fold = false;
  open(opt);
  ImageRecorder& im = image();
  stacks(im);
  for (uint64_t i = 0; i < 100; ++i) {
    im.onRecord(alloc(i * 10, 0x1000 + i * 16, 8, kA));
    im.onRecord(release(i * 10 + 5, 0x1000 + i * 16));
  }
  finish(10 * kMs);
  EXPECT_EQ(query("SELECT count(*) FROM allocations WHERE t_free - t_alloc = 5"), 100);
  EXPECT_EQ(query("SELECT value FROM meta WHERE key = 'fold_threshold_ns'"), 0);
  EXPECT_EQ(text("SELECT value FROM meta WHERE key = 'allocation_rows'"), "all");
}

// A stack that is exactly the outer part of earlier ones is the row of that shared path; the same
// frames under another hash are the same stack (one site per stack and kind).
TEST_F(RecorderCore, StackTreeSharesPathsAndMergesEqualStacks) {
  ImageRecorder& im = image();
  stacks(im);
  const std::vector<uint64_t> outer = {0x402000, 0x403000};  // kA and kB share it: row 2
  const std::vector<uint64_t> deep = {0x409000, 0x408000, 0x401000, 0x402000, 0x403000};
  im.onRecord(stack(0xd1, outer));
  im.onRecord(stack(0xd2, deep));     // below kA: one row of two frames, parent kA's row
  im.onRecord(stack(0xd3, kFramesA));  // kA again under another hash
  im.onRecord(alloc(1 * kMs, 0x1000, 10, 0xd1));
  im.onRecord(alloc(1 * kMs, 0x2000, 20, 0xd2));
  im.onRecord(alloc(1 * kMs, 0x3000, 30, 0xd3));
  im.onRecord(alloc(1 * kMs, 0x4000, 40, kA));
  finish(2 * kMs);
  EXPECT_EQ(query("SELECT count(*) FROM stacks"), 6);
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE stack_id = 2"), 10);
  EXPECT_EQ(query("SELECT parent_id FROM stacks WHERE id = 6"), 1);
  EXPECT_EQ(query("SELECT length(ips) FROM stacks WHERE id = 6"), 8);
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE stack_id = 6"), 20);
  EXPECT_EQ(query("SELECT leak_bytes FROM sites WHERE stack_id = 1"), 70);  // 0xd3 and kA
  EXPECT_EQ(query("SELECT count(*) FROM sites"), 3);
}

// wire.h "Stack records": a record carries its innermost frames and takes `b` outer frames from
// its thread's previous Stack record (hash `c`); threads interleave without disturbing each other.
TEST_F(RecorderCore, DeltaStackRecordsTakeTheOuterFramesOfTheThreadsLastStack) {
  ImageRecorder& im = image();
  auto delta = [](uint64_t hash, const std::vector<uint64_t>& carried, uint64_t shared, uint64_t base,
                  uint32_t tid) {
    Decoded d = stack(hash, carried);
    d.b = shared;
    d.c = base;
    d.tid = tid;
    return d;
  };
  const std::vector<uint64_t> a = {0x401000, 0x402000, 0x403000};
  const std::vector<uint64_t> c = {0x501000, 0x503000};
  const std::vector<uint64_t> bIn = {0x409000}, dIn = {0x40a000, 0x40b000}, eIn = {0x601000};
  im.onRecord(delta(0xa1, a, 0, 0, 1));
  im.onRecord(delta(0xc1, c, 0, 0, 2));
  im.onRecord(delta(0xb1, bIn, 2, 0xa1, 1));  // thread 1's base is 0xa1, not thread 2's 0xc1
  im.onRecord(delta(0xd1, dIn, 1, 0xb1, 1));
  // Not thread 2's last stack (a record lost with a killed writer): found among the interned.
  im.onRecord(delta(0xe1, eIn, 3, 0xa1, 2));
  std::vector<uint64_t> got;
  ASSERT_TRUE(im.stackFrames(0xb1, &got));
  EXPECT_EQ(got, (std::vector<uint64_t>{0x409000, 0x402000, 0x403000}));
  ASSERT_TRUE(im.stackFrames(0xd1, &got));
  EXPECT_EQ(got, (std::vector<uint64_t>{0x40a000, 0x40b000, 0x403000}));
  ASSERT_TRUE(im.stackFrames(0xe1, &got));
  EXPECT_EQ(got, (std::vector<uint64_t>{0x601000, 0x401000, 0x402000, 0x403000}));
  // The tree holds them as the recorder stores every stack: 0xb1 and 0xd1 allocate exactly.
  im.onRecord(alloc(1 * kMs, 0x1000, 11, 0xb1, 1));
  im.onRecord(alloc(1 * kMs, 0x2000, 22, 0xd1, 1));
  finish(2 * kMs);
  EXPECT_EQ(query("SELECT sum(leak_bytes) FROM sites"), 33);
  EXPECT_EQ(query("SELECT count(*) FROM sites"), 2);
}

TEST_F(RecorderCore, UnknownStackIsItsOwnSite) {
  ImageRecorder& im = image();
  im.onRecord(alloc(1 * kMs, 0x1000, 10, 0x1234));  // no Stack record ever came
  im.onRecord(alloc(1 * kMs, 0x2000, 10, 0));       // "no stack"
  finish(2 * kMs);
  EXPECT_EQ(query("SELECT count(*) FROM sites"), 2);
  EXPECT_EQ(query("SELECT count(*) FROM stacks WHERE length(ips) = 0"), 2);
}

}  // namespace
}  // namespace memledger::recorder
