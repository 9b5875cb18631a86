#include <gtest/gtest.h>

#include "analyzer/check.h"
#include "ci_fixture.h"

namespace an = memledger::analyzer;
using memledger::testing::buildCiRecording;
using memledger::testing::CiRecordingOptions;

TEST(CiCheck, ParseSizeAcceptsSuffixes) {
  EXPECT_EQ(an::parseSize("4096"), 4096);
  EXPECT_EQ(an::parseSize("4KiB"), 4096);
  EXPECT_EQ(an::parseSize("4k"), 4096);
  EXPECT_EQ(an::parseSize("4kB"), 4000);
  EXPECT_EQ(an::parseSize("10MB"), 10000000);
  EXPECT_EQ(an::parseSize("10MiB"), 10485760);
  EXPECT_EQ(an::parseSize("1GiB"), 1073741824);
  EXPECT_EQ(an::parseSize("1.5KiB"), 1536);
  EXPECT_EQ(an::parseSize("0"), 0);
  EXPECT_EQ(an::parseSize("12B"), 12);
  EXPECT_EQ(an::parseSize(""), std::nullopt);
  EXPECT_EQ(an::parseSize("-5"), std::nullopt);
  EXPECT_EQ(an::parseSize("10XB"), std::nullopt);
  EXPECT_EQ(an::parseSize("MB"), std::nullopt);
  EXPECT_EQ(an::parseSize("1.3"), std::nullopt);
  EXPECT_EQ(an::parseSize("99999999999TiB"), std::nullopt);
}

TEST(CiCheck, LeakLimitsPassAndFailWithDefaultSuppressions) {
  an::Recording rec = an::Recording::open(buildCiRecording("check-basic.db"));
  an::SuppressionList supp;
  supp.addDefaults();
  an::Limits limits;
  limits.max_leaked_bytes = 4096;
  an::CheckResult ok = an::check(rec, limits, supp);
  EXPECT_TRUE(ok.passed());
  // The stdio buffer (1024 B) is suppressed by the built-in list; only leak_here counts.
  EXPECT_EQ(ok.leak_bytes, 4096);
  EXPECT_EQ(ok.leak_count, 2);
  EXPECT_EQ(ok.suppressed_bytes, 1024);
  EXPECT_EQ(ok.suppressed_count, 1);
  ASSERT_EQ(ok.leak_sites.size(), 1u);
  EXPECT_EQ(ok.leak_sites[0].stack.at(0).function, "leak_here");
  int64_t matched = 0;
  for (const auto& s : ok.suppressions)
    if (s.pattern == "_IO_file_doallocate") matched = s.matched_bytes;
  EXPECT_EQ(matched, 1024);

  an::SuppressionList supp2;
  supp2.addDefaults();
  limits.max_leaked_bytes = 4095;
  limits.max_leaks = 1;
  an::CheckResult bad = an::check(rec, limits, supp2);
  EXPECT_FALSE(bad.passed());
  ASSERT_EQ(bad.violations.size(), 2u);
  EXPECT_EQ(bad.violations[0].rule, "max-leaked-bytes");
  EXPECT_EQ(bad.violations[0].message, "4096 leaked bytes > limit 4095");
  EXPECT_EQ(bad.violations[1].rule, "max-leaks");
  EXPECT_EQ(bad.violations[1].message, "2 leaked blocks > limit 1");
  ASSERT_EQ(bad.violations[0].sites.size(), 1u);
  std::string text = an::formatCheck(bad, "'prog'");
  EXPECT_NE(text.find("FAIL"), std::string::npos);
  EXPECT_NE(text.find("#0 leak_here (/src/prog.c:10) [prog]"), std::string::npos) << text;
  EXPECT_NE(text.find("#1 main (/src/prog.c:20)"), std::string::npos) << text;
  EXPECT_NE(text.find("leak:_IO_file_doallocate (built-in:2): 1 leaks, 1024 bytes in 1 sites"), std::string::npos)
      << text;
}

TEST(CiCheck, WithoutDefaultsTheStdioBufferCounts) {
  an::Recording rec = an::Recording::open(buildCiRecording("check-nodefaults.db"));
  an::SuppressionList none;
  an::Limits limits;
  limits.max_leaked_bytes = 4096;
  an::CheckResult r = an::check(rec, limits, none);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.leak_bytes, 5120);
  EXPECT_EQ(r.leak_sites.size(), 2u);
}

TEST(CiCheck, UserSuppressionSilencesALeakAndCountsIt) {
  an::Recording rec = an::Recording::open(buildCiRecording("check-suppressed.db"));
  an::SuppressionList supp;
  supp.addText("leak:^leak_here$\n", "ci.supp");
  supp.addDefaults();
  an::Limits limits;
  limits.max_leaks = 0;
  an::CheckResult r = an::check(rec, limits, supp);
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.leak_count, 0);
  EXPECT_EQ(r.suppressed_bytes, 5120);
  ASSERT_FALSE(r.suppressions.empty());
  EXPECT_EQ(r.suppressions[0].origin, "ci.supp:1");
  EXPECT_EQ(r.suppressions[0].matched_leaks, 2);
  EXPECT_EQ(r.suppressions[0].matched_bytes, 4096);
  EXPECT_NE(an::formatCheck(r, "x").find("leak:^leak_here$ (ci.supp:1): 2 leaks, 4096 bytes in 1 sites"),
            std::string::npos);
}

TEST(CiCheck, PeakLimitPerKindNamesThePeakSites) {
  an::Recording rec = an::Recording::open(buildCiRecording("check-peak.db"));
  an::SuppressionList supp;
  an::Limits limits;
  limits.max_peak = 10000;
  EXPECT_TRUE(an::check(rec, limits, supp).passed());
  limits.max_peak = 9999;
  an::CheckResult heap = an::check(rec, limits, supp);
  ASSERT_EQ(heap.violations.size(), 1u);
  EXPECT_EQ(heap.violations[0].rule, "max-peak");
  EXPECT_EQ(heap.violations[0].message, "10000 heap peak bytes > limit 9999");
  ASSERT_EQ(heap.violations[0].sites.size(), 2u);
  EXPECT_EQ(heap.violations[0].sites[0].stack.at(0).function, "build_table");  // 6000 B before 4000 B
  EXPECT_EQ(heap.violations[0].image_id, 1);

  limits.peak_kind = an::PeakKind::Mmap;
  limits.max_peak = 64 * 1024;
  EXPECT_TRUE(an::check(rec, limits, supp).passed());
  limits.max_peak = 64 * 1024 - 1;
  an::CheckResult mm = an::check(rec, limits, supp);
  ASSERT_EQ(mm.violations.size(), 1u);
  ASSERT_EQ(mm.violations[0].sites.size(), 1u);
  EXPECT_EQ(mm.violations[0].sites[0].stack.at(0).function, "map_arena");

  limits.peak_kind = an::PeakKind::Rss;
  limits.max_peak = 299999;
  EXPECT_EQ(an::check(rec, limits, supp).violations.at(0).message, "300000 rss peak bytes > limit 299999");
}

TEST(CiCheck, ProgramFailureFailsTheCheck) {
  CiRecordingOptions o;
  o.exitCode = 3;
  an::Recording rec = an::Recording::open(buildCiRecording("check-exit3.db", o));
  an::SuppressionList supp;
  an::Limits limits;  // no limits at all
  an::CheckResult r = an::check(rec, limits, supp);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].rule, "program-failed");
  EXPECT_NE(r.violations[0].message.find("exited with status 3"), std::string::npos);

  CiRecordingOptions s;
  s.endedBy = "signal";
  an::Recording crashed = an::Recording::open(buildCiRecording("check-signal.db", s));
  EXPECT_FALSE(an::check(crashed, limits, supp).passed());
}

TEST(CiCheck, BaselineGrowthAndNewLeakSites) {
  an::Recording base = an::Recording::open(buildCiRecording("check-base.db"));
  CiRecordingOptions o;
  o.extraLeakSite = true;
  o.leakLine = 12;  // the same leak, moved by an edit: still a known site
  an::Recording now = an::Recording::open(buildCiRecording("check-new.db", o));
  an::SuppressionList supp;
  an::Limits limits;
  limits.max_new_leak_sites = 0;
  EXPECT_THROW(an::check(now, limits, supp), std::invalid_argument);
  an::CheckResult r = an::check(now, limits, supp, &base);
  ASSERT_EQ(r.new_leak_sites.size(), 1u);
  EXPECT_EQ(r.new_leak_sites[0].stack.at(0).function, "new_leak");
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].message, "1 new leak sites > limit 0");
  limits.max_new_leak_sites = 1;
  EXPECT_TRUE(an::check(now, limits, supp, &base).passed());

  // Same peak (10000) in both: 0% growth passes a 0% limit.
  an::Limits growth;
  growth.max_peak_growth_pct = 0;
  an::CheckResult g = an::check(now, growth, supp, &base);
  EXPECT_TRUE(g.passed());
  EXPECT_EQ(g.baseline_peak_bytes, 10000);
}
