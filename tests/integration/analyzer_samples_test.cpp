// The analyzer's questions on samples with known answers: the exact peak and phases
// (three_phases), temporaries (temp_storm), realloc growth (realloc_growth), fragmentation
// (fragmenting) and the README demo (demo_leaky_peaky).
#include <gtest/gtest.h>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

constexpr int64_t kMiB = 1024 * 1024;
// Whatever the runtime holds besides the sample's own blocks stays below this.
constexpr int64_t kBaselineSlack = 64 * 1024;

int64_t sumBytes(const json& sites) {
  int64_t sum = 0;
  for (const auto& s : sites) sum += s["bytes"].get<int64_t>();
  return sum;
}

std::vector<json> suggestionsNaming(const json& report, const std::string& function) {
  std::vector<json> found;
  for (const auto& s : report["suggestions"])
    if (s["message"].get<std::string>().find(function) != std::string::npos) found.push_back(s);
  return found;
}

}  // namespace

TEST(ThreePhases, PeakIsExactlyThreeHundredMiBAtTheRampSite) {
  const Recorded& rec = recordSampleUnchanged("three_phases");
  ASSERT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  const json& peak = report["peak"];
  // 300 blocks of 1 MiB from ramp are live at the peak, nothing else of the sample's.
  EXPECT_TRUE(hasOneSite(peak["sites"], "ramp", 300, 300 * kMiB, "malloc"));
  // The sample allocates nothing else before the peak (a C program's runtime allocates nothing
  // before main, and nothing is printed before the last phase): the peak is exact.
  EXPECT_EQ(peak["bytes"].get<int64_t>(), 300 * kMiB);
  // The live set at the peak adds up to the peak itself.
  EXPECT_EQ(sumBytes(peak["sites"]), peak["bytes"].get<int64_t>()) << describeSites(peak["sites"]);
  ASSERT_EQ(report["processes"].size(), 1u);
  EXPECT_EQ(report["processes"][0]["peak_heap_bytes"], peak["bytes"]);
}

TEST(ThreePhases, TimelineSplitsIntoThreePhasesWithThePeakInTheSecond) {
  const json& report = reportOnce(recordSampleUnchanged("three_phases"));
  const json& phases = report["phases"];
  ASSERT_EQ(phases.size(), 3u) << phases.dump(1);
  const int64_t expected[3] = {100 * kMiB, 300 * kMiB, 50 * kMiB};
  for (size_t i = 0; i < 3; i++) {
    // Between phases the heap is empty, so each phase's peak is exactly its ramp.
    EXPECT_EQ(phases[i]["peak_bytes"].get<int64_t>(), expected[i]) << "phase " << i + 1;
    EXPECT_LE(phases[i]["start_ns"].get<int64_t>(), phases[i]["end_ns"].get<int64_t>());
    if (i) {
      EXPECT_LE(phases[i - 1]["end_ns"].get<int64_t>(), phases[i]["start_ns"].get<int64_t>());
    }
  }
  EXPECT_EQ(phases[1]["peak_bytes"], report["peak"]["bytes"]);
  int64_t t = report["peak"]["time_ns"].get<int64_t>();
  EXPECT_GE(t, phases[1]["start_ns"].get<int64_t>());
  EXPECT_LE(t, phases[1]["end_ns"].get<int64_t>());
  // Everything was freed: no leak at the ramp.
  EXPECT_TRUE(hasNoSite(report["leaks"]["sites"], "ramp"));
}

// Each phase's top site is the ramp with exactly its own blocks. By default the freed blocks
// have no allocation row: the numbers come from the per-bucket site activity.
TEST(ThreePhases, EachPhaseTopSiteIsTheRampWithExactlyItsBlocks) {
  const Recorded& rec = recordSampleUnchanged("three_phases");
  const json& phases = reportOnce(rec)["phases"];
  ASSERT_EQ(phases.size(), 3u) << phases.dump(1);
  const int64_t blocks[3] = {100, 300, 50};
  for (size_t i = 0; i < 3; i++) {
    const json& top = phases[i]["top_sites"];
    ASSERT_FALSE(top.empty()) << "phase " << i + 1;
    EXPECT_EQ(top[0]["count"].get<int64_t>(), blocks[i]) << "phase " << i + 1 << ":\n" << describeSites(top);
    EXPECT_EQ(top[0]["bytes"].get<int64_t>(), blocks[i] * kMiB) << "phase " << i + 1;
    EXPECT_TRUE(hasOneSite(top, "ramp", blocks[i], blocks[i] * kMiB, "malloc")) << "phase " << i + 1;
  }
  EXPECT_EQ(sqlInt(rec.db, "SELECT count(*) FROM allocations WHERE t_free IS NOT NULL"), 0);
  EXPECT_GT(sqlInt(rec.db, "SELECT count(*) FROM site_buckets"), 0);
  EXPECT_EQ(sqlInt(rec.db, "SELECT count(*) FROM meta WHERE key = 'allocation_rows' AND value = 'leaks'"), 1);
}

// --no-fold and --fold-ms keep allocation rows for freed blocks; the phases say the same.
TEST(ThreePhases, NoFoldAndFoldMsKeepRowsWithTheSamePhases) {
  const json& byDefault = reportOnce(recordSampleUnchanged("three_phases"))["phases"];
  TempDir dir;
  struct Mode {
    std::vector<std::string> options;
    const char* policy;
  };
  for (const Mode& m : {Mode{{"--no-fold"}, "all"}, Mode{{"--fold-ms", "2"}, "long_lived"}}) {
    std::string db = dir.file(std::string(m.policy) + ".db");
    std::vector<std::string> argv = {memledgerBinary(), "record", "-o", db};
    argv.insert(argv.end(), m.options.begin(), m.options.end());
    argv.insert(argv.end(), {"--", sample("three_phases")});
    RunResult r = run(argv);
    ASSERT_EQ(r.status, 0) << r.err;
    // Every 1 MiB block lived >= 5 ms (the pause before its release): a row in both modes.
    EXPECT_EQ(sqlInt(db, "SELECT count(*) FROM allocations WHERE size = 1048576 AND t_free IS NOT NULL"), 450)
        << m.policy;
    EXPECT_EQ(sqlInt(db, ("SELECT count(*) FROM meta WHERE key = 'allocation_rows' AND value = '" +
                          std::string(m.policy) + "'").c_str()), 1);
    const json phases = reportJson(db)["phases"];
    ASSERT_EQ(phases.size(), byDefault.size()) << m.policy;
    for (size_t i = 0; i < phases.size(); i++) {
      ASSERT_FALSE(phases[i]["top_sites"].empty());
      EXPECT_EQ(phases[i]["top_sites"][0]["count"], byDefault[i]["top_sites"][0]["count"]) << m.policy;
      EXPECT_EQ(phases[i]["top_sites"][0]["bytes"], byDefault[i]["top_sites"][0]["bytes"]) << m.policy;
    }
  }
}

TEST(TempStorm, EveryPairIsATemporaryAndThePoolIsSuggested) {
  const Recorded& rec = recordSampleUnchanged("temp_storm");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  EXPECT_GE(report["totals"]["allocations"].get<int64_t>(), 1000000);
  EXPECT_GE(report["totals"]["frees"].get<int64_t>(), 1000000);
  EXPECT_GE(report["totals"]["temporary"]["count"].get<int64_t>(), 1000000);
  EXPECT_GE(report["totals"]["temporary"]["bytes"].get<int64_t>(), 48000000);
  // Each block is freed before anything else is allocated: all 1,000,000 at storm's site.
  ASSERT_TRUE(report.contains("temporaries")) << "report has no per-site temporaries";
  EXPECT_TRUE(hasOneSite(report["temporaries"], "storm", 1000000, 48000000, "malloc"));
  EXPECT_TRUE(hasNoSite(report["leaks"]["sites"], "storm"));

  auto named = suggestionsNaming(report, "storm");
  ASSERT_FALSE(named.empty()) << report["suggestions"].dump(1);
  bool withStack = false;
  for (const auto& s : named) withStack = withStack || stackHas(s["stack"], "storm");
  EXPECT_TRUE(withStack) << json(named).dump(1);
}

// The recorder notes what draining cost its own thread (bench/ divides events by it: the rate
// it keeps up with on a core of its own). 2M events cannot be drained in no time, and one
// thread's CPU time cannot exceed the wall time it ran for.
TEST(TempStorm, RecorderCpuTimeIsRecordedAndWithinTheRun) {
  const json& report = reportOnce(recordSampleUnchanged("temp_storm"));
  const json& info = report["recording"];
  ASSERT_TRUE(info.contains("recorder_cpu_ns")) << info.dump(1);
  const int64_t cpu = info["recorder_cpu_ns"].get<int64_t>();
  EXPECT_GT(cpu, 0);
  // duration_ns ends when the recording was finished, after the draining thread's last work;
  // 10 ms: rusage's tick rounding.
  EXPECT_LE(cpu, info["duration_ns"].get<int64_t>() + 10'000'000) << info.dump(1);
}

TEST(ReallocGrowth, GrowingByReallocSuggestsReservingCapacity) {
  const Recorded& rec = recordSampleUnchanged("realloc_growth");
  EXPECT_EQ(rec.program.status, 0);
  EXPECT_EQ(rec.program.out, "realloc_growth: grew to 160000 bytes\n");
  const json& report = reportOnce(rec);
  EXPECT_TRUE(hasNoSite(report["leaks"]["sites"], "grow_buffer"));
  EXPECT_GE(report["totals"]["allocations"].get<int64_t>(), 10000);
  // One chain of 9,999 reallocs after the first realloc(NULL, 16) (10,000 if that one counts).
  auto named = suggestionsNaming(report, "grow_buffer");
  std::vector<json> reserve;
  for (const auto& s : named)
    if (s["kind"] == "reserve_capacity") reserve.push_back(s);
  ASSERT_EQ(reserve.size(), 1u) << report["suggestions"].dump(1);
  EXPECT_TRUE(stackHas(reserve[0]["stack"], "grow_buffer")) << reserve[0].dump(1);
  const json& evidence = reserve[0]["evidence"];
  ASSERT_TRUE(evidence.contains("max_realloc_chain")) << evidence.dump();
  EXPECT_GE(evidence["max_realloc_chain"].get<int64_t>(), 9999) << evidence.dump();
  EXPECT_LE(evidence["max_realloc_chain"].get<int64_t>(), 10000) << evidence.dump();
}

TEST(Fragmenting, HolesLeftByFreedSmallBlocksShowAsFragmentation) {
  const Recorded& rec = recordSampleUnchanged("fragmenting");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  // Live at the end (and at the peak): 100,000 x 1000 + 100,000 x 3000 + the two pointer tables.
  const json& sites = report["leaks"]["sites"];
  EXPECT_TRUE(hasOneSite(sites, "allocate_small", 100000, 100000000, "malloc"));
  EXPECT_TRUE(hasOneSite(sites, "allocate_large", 100000, 300000000, "malloc"));
  const int64_t live = 100000000 + 300000000 + 200000 * 8 + 100000 * 8;
  int64_t peak = report["peak"]["bytes"].get<int64_t>();
  EXPECT_GE(peak, live);
  EXPECT_LT(peak, live + kBaselineSlack);
  const json& frag = report["fragmentation"];
  ASSERT_TRUE(frag["peak_ratio"].is_number()) << frag.dump().substr(0, 400);
  double ratio = frag["peak_ratio"].get<double>();
  EXPECT_GE(ratio, 0.1);
  EXPECT_LE(ratio, 0.6);
  EXPECT_FALSE(frag["series"].empty());
}

TEST(DemoLeakyPeaky, LeaksPeakAndMarkedPhases) {
  const Recorded& rec = recordSampleUnchanged("demo_leaky_peaky");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  EXPECT_TRUE(hasOneSite(report["leaks"]["sites"], "load_config", 3, 3 * 256, "malloc"));
  EXPECT_TRUE(hasOneSite(report["leaks"]["sites"], "fill_cache", 20, 20 * 1024, "malloc"));
  EXPECT_TRUE(hasOneSite(report["peak"]["sites"], "build_index", 64, 64 * kMiB, "malloc"));
  // At the peak: the index and the config loaded before it; stdout's buffer comes later.
  EXPECT_EQ(report["peak"]["bytes"].get<int64_t>(), 64 * kMiB + 3 * 256);
  const json& phases = report["phases"];
  ASSERT_EQ(phases.size(), 3u) << phases.dump(1);
  EXPECT_EQ(phases[0]["name"], "load");
  EXPECT_EQ(phases[1]["name"], "index");
  EXPECT_EQ(phases[2]["name"], "serve");
  EXPECT_EQ(phases[1]["peak_bytes"], report["peak"]["bytes"]);
}

// A marked phase's peak is what was live between its marker and the next one: the index built
// right after the "index" marker belongs to "index", not to "load", however close in time.
TEST(DemoLeakyPeaky, PhasePeaksStopAtTheirMarkers) {
  const json& report = reportOnce(recordSampleUnchanged("demo_leaky_peaky"));
  const json& phases = report["phases"];
  ASSERT_EQ(phases.size(), 3u) << phases.dump(1);
  // Before the "index" marker only the config (3 x 256) was ever live.
  EXPECT_EQ(phases[0]["peak_bytes"].get<int64_t>(), 3 * 256) << phases[0].dump();
  EXPECT_EQ(phases[1]["peak_bytes"].get<int64_t>(), 64 * kMiB + 3 * 256);
  // What each phase allocated: the config in "load", the whole index in "index".
  EXPECT_EQ(phases[0]["allocated_bytes"].get<int64_t>(), 3 * 256) << phases[0].dump();
  EXPECT_EQ(phases[1]["allocated_bytes"].get<int64_t>(), 64 * kMiB) << phases[1].dump();
  // While serving: the config, the cache and stdout's buffer (printf's first call).
  EXPECT_GE(phases[2]["peak_bytes"].get<int64_t>(), 3 * 256 + 20 * 1024);
  EXPECT_LT(phases[2]["peak_bytes"].get<int64_t>(), 3 * 256 + 20 * 1024 + kBaselineSlack);
}
