// Leaks of the malloc family, threads, aligned allocators and operator new, recorded from the
// samples with known ground truth (see each sample's header comment) and checked site by site.
// Totals also hold the C/C++ runtime's own one-time allocations, so they are checked as lower
// bounds; every site the samples own is checked exactly.
#include <gtest/gtest.h>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

int64_t leakBytes(const json& report) { return report["leaks"]["bytes"].get<int64_t>(); }
int64_t leakCount(const json& report) { return report["leaks"]["count"].get<int64_t>(); }

}  // namespace

TEST(LeakChains, RecordedProgramBehavesAsRunDirectly) {
  const Recorded& rec = recordSampleUnchanged("leak_chains");
  EXPECT_EQ(rec.program.status, 0);
  EXPECT_EQ(rec.program.out, "leak_chains: kept 6 blocks\n");
}

TEST(LeakChains, EachSiteLeaksExactlyWhatItKept) {
  const json& report = reportOnce(recordSampleUnchanged("leak_chains"));
  const json& sites = report["leaks"]["sites"];
  EXPECT_TRUE(hasOneSite(sites, "leak_malloc", 3, 3000, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "leak_calloc", 2, 2000, "malloc"));
  // The chain 100 -> 200 -> 300 ends as one block at the realloc line; the malloc that started
  // it and the intermediate sizes are not leaks.
  EXPECT_TRUE(hasOneSite(sites, "leak_realloc", 1, 300, "malloc"));
  EXPECT_TRUE(hasNoSite(sites, "no_leak"));
  EXPECT_TRUE(leaksAccountedFor(report, "leak_chains", {"leak_malloc", "leak_calloc", "leak_realloc"}));
  EXPECT_GE(leakCount(report), 6);
  EXPECT_GE(leakBytes(report), 5300);
}

TEST(LeakChains, StacksPointAtTheAllocatingLine) {
  const json& report = reportOnce(recordSampleUnchanged("leak_chains"));
  const json& sites = report["leaks"]["sites"];
  const std::string src = sourceDir() + "/samples/leak_chains.c";
  EXPECT_TRUE(innermostAt(sites, "leak_malloc", "samples/leak_chains.c", lineOf(src, "char* p = malloc(1000);")));
  EXPECT_TRUE(innermostAt(sites, "leak_calloc", "samples/leak_chains.c", lineOf(src, "keep(calloc(10, 100));")));
  EXPECT_TRUE(innermostAt(sites, "leak_realloc", "samples/leak_chains.c", lineOf(src, "p = realloc(p, size)")));
  // The caller is the next frame: stacks are innermost first.
  for (const char* fn : {"leak_malloc", "leak_calloc", "leak_realloc"}) {
    auto found = sitesWith(sites, fn);
    ASSERT_EQ(found.size(), 1u) << fn;
    ASSERT_GE(found[0]["stack"].size(), 2u) << fn;
    EXPECT_TRUE(frameIs(found[0]["stack"][1], "main")) << fn << ": " << found[0]["stack"].dump();
  }
}

TEST(LeakChains, SitesBelongToTheRecordedProcess) {
  const json& report = reportOnce(recordSampleUnchanged("leak_chains"));
  ASSERT_EQ(report["processes"].size(), 1u) << report["processes"].dump();
  const json& proc = report["processes"][0];
  EXPECT_EQ(proc["exit_code"], 0);
  EXPECT_NE(proc["command"].get<std::string>().find("leak_chains"), std::string::npos);
  for (const char* fn : {"leak_malloc", "leak_calloc", "leak_realloc"})
    for (const auto& site : sitesWith(report["leaks"]["sites"], fn)) EXPECT_EQ(site["pid"], proc["pid"]) << fn;
  // 3 malloc + 2 calloc + malloc and 2 reallocs + no_leak's malloc, calloc and realloc.
  EXPECT_GE(report["totals"]["allocations"].get<int64_t>(), 11);
  EXPECT_GE(report["totals"]["frees"].get<int64_t>(), 2);
}

TEST(ThreadsLeak, FourThreadsLeakAtOneSiteAndChurnLeaksNothing) {
  const Recorded& rec = recordSampleUnchanged("threads_leak");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  const json& sites = report["leaks"]["sites"];
  EXPECT_TRUE(hasOneSite(sites, "thread_leak", 40, 40 * 512, "malloc"));
  EXPECT_TRUE(hasNoSite(sites, "thread_churn"));
  EXPECT_TRUE(leaksAccountedFor(report, "threads_leak", {"thread_leak"}));
  EXPECT_GE(leakBytes(report), 40 * 512);
  // 4 x (10 leaked + 10,000 churned); each churned block is freed before its thread allocates
  // again, so all 40,000 are temporaries.
  EXPECT_GE(report["totals"]["allocations"].get<int64_t>(), 40040);
  EXPECT_GE(report["totals"]["frees"].get<int64_t>(), 40000);
  EXPECT_GE(report["totals"]["temporary"]["count"].get<int64_t>(), 40000);
  EXPECT_TRUE(hasOneSite(report["temporaries"], "thread_churn", 40000, 40000 * 64, "malloc"));
}

TEST(AlignedFamily, EveryAlignedAllocatorAndStrdupIsOneSite) {
  const Recorded& rec = recordSampleUnchanged("aligned_family");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  const json& sites = report["leaks"]["sites"];
  EXPECT_TRUE(hasOneSite(sites, "leak_posix_memalign", 1, 1111, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "leak_aligned_alloc", 1, 2304, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "leak_memalign", 1, 3333, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "leak_valloc", 1, 4444, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "leak_pvalloc", 1, 8192, "malloc"));
  // strdup allocates inside libc: its own frame may come first, leak_strdup is its caller.
  EXPECT_TRUE(hasOneSite(sites, "leak_strdup", 1, 667, "malloc", /*innermost=*/false));
  EXPECT_GE(leakBytes(report), 1111 + 2304 + 3333 + 4444 + 8192 + 667);
  EXPECT_TRUE(leaksAccountedFor(report, "aligned_family",
                                {"leak_posix_memalign", "leak_aligned_alloc", "leak_memalign", "leak_valloc",
                                 "leak_pvalloc", "leak_strdup"}));
}

TEST(CxxNew, NewAndNewArrayAndAlignedNewAreSitesOfKindNew) {
  const Recorded& rec = recordSampleUnchanged("cxx_new");
  EXPECT_EQ(rec.program.status, 0);
  EXPECT_EQ(rec.program.out, "cxx_new: aligned=1\n");
  const json& report = reportOnce(rec);
  const json& sites = report["leaks"]["sites"];
  EXPECT_TRUE(hasOneSite(sites, "leak_objects", 5, 5 * 88, "new"));
  EXPECT_TRUE(hasOneSite(sites, "leak_arrays", 2, 2 * 777, "new"));
  EXPECT_TRUE(hasOneSite(sites, "leak_aligned", 1, 192, "new"));
  EXPECT_TRUE(hasNoSite(sites, "churn_objects"));
  EXPECT_TRUE(leaksAccountedFor(report, "cxx_new", {"leak_objects", "leak_arrays", "leak_aligned"}));
  EXPECT_GE(leakBytes(report), 440 + 1554 + 192);
}

// libstdc++ allocates its exception emergency pool (~71 KiB, GCC 12) in a static constructor
// that runs before main and possibly before the preload library's own constructor. It is never
// freed: a recorder that misses allocations made before its initialisation misses this leak.
TEST(CxxNew, SeesTheRuntimesAllocationMadeBeforeMain) {
  const json& report = reportOnce(recordSampleUnchanged("cxx_new"));
  int pools = 0;
  for (const auto& site : report["leaks"]["sites"]) {
    bool fromLibstdcxx = false;
    for (const auto& frame : site["stack"])
      if (frame.value("module", json()).is_string() &&
          frame["module"].get<std::string>().find("libstdc++") != std::string::npos)
        fromLibstdcxx = true;
    if (fromLibstdcxx && !stackHas(site["stack"], "main") && site["count"] == 1 &&
        site["bytes"].get<int64_t>() >= 64 * 1024 && site["bytes"].get<int64_t>() <= 128 * 1024)
      ++pools;
  }
  EXPECT_EQ(pools, 1) << describeSites(report["leaks"]["sites"]);
}
