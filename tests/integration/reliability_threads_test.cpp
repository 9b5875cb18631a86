// Threads under recording (samples/rel_threads.c): many at once, thousands created and exiting,
// and one that calls exit() while the others allocate. Each test asserts the exact leak at the
// sample's one leaking site and that the program's output and exit status are unchanged.
#include <gtest/gtest.h>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::record;
using memledger::test::reportJson;
using memledger::test::run;

const std::string kThreads = relSample("rel_threads");

TEST(ReliabilityThreads, SixtyFourConcurrentThreadsLeakExactly) {
  constexpr int64_t k = 5, size = 4444;
  auto direct = run({kThreads, "many", std::to_string(k), std::to_string(size)});
  ASSERT_EQ(direct.status, 0) << direct.err;
  auto rec = record(kThreads, {"many", std::to_string(k), std::to_string(size)});
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, direct.out);
  EXPECT_EQ(rec.program.out, "many done 64\n");

  json report = reportJson(rec.db);
  // All 64 threads leak through the same call stack: one site, 64 * k blocks.
  EXPECT_EQ(leaksAt(report, "thread_leak"), (Amount{64 * k, 64 * k * size, 1})) << leakDump(report);
  // Every thread_leak block and every churn temporary was seen: 64 * k * (1 + 50) at least.
  EXPECT_GE(report["totals"]["allocations"].get<int64_t>(), 64 * k * 51);

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].endedBy, "exit");
  EXPECT_EQ(ims[0].exitCode, 0);
}

TEST(ReliabilityThreads, TwoThousandShortLivedThreads) {
  constexpr int64_t n = 2000, size = 96;
  auto rec = record(kThreads, {"churn", std::to_string(n), std::to_string(size)});
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "churn done 2000\n");
  EXPECT_EQ(programErr(rec.program.err), "");

  json report = reportJson(rec.db);
  // A thread that exits right after allocating must not take its records with it.
  EXPECT_EQ(leaksAt(report, "short_thread_leak"), (Amount{n, n * size, 1})) << leakDump(report);
  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].exitCode, 0);
}

TEST(ReliabilityThreads, ExitFromOneThreadWhileOthersAllocate) {
  memledger::test::RunOptions options;
  options.timeoutSeconds = 30;  // a recorder waiting on spinning threads forever is the bug here
  auto rec = record(kThreads, {"exit", "42"}, options);
  EXPECT_EQ(rec.program.status, 42) << rec.program.err;
  EXPECT_FALSE(rec.program.signaled);
  EXPECT_EQ(rec.program.out, "exiting\n");
  EXPECT_LT(rec.program.seconds, 20.0);

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "exiter_leak"), (Amount{1, 777, 1})) << leakDump(report);
  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].endedBy, "exit") << describe(ims);
  EXPECT_EQ(ims[0].exitCode, 42) << describe(ims);
  ASSERT_EQ(report["processes"].size(), 1u);
  EXPECT_EQ(report["processes"][0]["exit_code"], 42);
}

}  // namespace
