// The report tells the truth on real programs: one site per piece of code across a fork/exec
// loop, filters that select nothing are errors, no advice to grow geometrically what already
// does, no advice to fix glibc's stdio buffer, a JSON report cut like the text one. Samples:
// fork_loop, realloc_doubling, realloc_growth, demo_leaky_peaky (ground truth in their headers).
#include <gtest/gtest.h>

#include <set>

#include "harness.h"

using namespace memledger::test;

namespace {

json viewJson(const std::string& view, const std::string& db, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {memledgerBinary(), view, db, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = run(argv);
  if (r.status != 0) throw std::runtime_error(joinArgs(argv) + " exited " + std::to_string(r.status) + ": " + r.err);
  return json::parse(r.out);
}

// glibc's stdio buffer: its frame is named _IO_file_doallocate or __GI__IO_file_doallocate.
bool isStdioBuffer(const json& stack) {
  for (const auto& f : stack)
    if (f["function"].is_string() && f["function"].get<std::string>().find("_IO_file_doallocate") != std::string::npos)
      return true;
  return false;
}

std::vector<json> suggestionsOf(const json& report, const std::string& kind) {
  std::vector<json> out;
  for (const auto& s : report["suggestions"])
    if (s["kind"] == kind) out.push_back(s);
  return out;
}

}  // namespace

TEST(ReportTruth, TheSameLeakInEveryChildIsOneSiteWithItsProcesses) {
  const Recorded& rec = recordOnce(sample("fork_loop"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const json report = reportJson(rec.db);
  // The parent and 4 children (2 forks, 2 that exec the program again at another base: a second
  // image of their pid), 3 x 500 bytes each.
  ASSERT_EQ(report["processes"].size(), 7u) << report["processes"].dump();
  auto sites = sitesWith(report["leaks"]["sites"], "child_work");
  ASSERT_EQ(sites.size(), 1u) << describeSites(report["leaks"]["sites"]);
  const json& site = sites[0];
  EXPECT_EQ(site["count"], 4 * 3);
  EXPECT_EQ(site["bytes"], 4 * 3 * 500);
  EXPECT_EQ(site["process_count"], 4);
  std::set<int64_t> pids;
  for (const auto& p : site["processes"]) {
    EXPECT_EQ(p["count"], 3);
    EXPECT_EQ(p["bytes"], 1500);
    pids.insert(p["pid"].get<int64_t>());
  }
  EXPECT_EQ(pids.size(), 4u);
  // The four are the parent's children, the parent itself leaked nothing there.
  std::set<int64_t> all, children;
  for (const auto& p : report["processes"]) all.insert(p["pid"].get<int64_t>());
  for (const auto& p : report["processes"])
    if (all.count(p["ppid"].get<int64_t>())) children.insert(p["pid"].get<int64_t>());
  EXPECT_EQ(children, pids);
  // The fix_leak advice is given once, for all four.
  int fixes = 0;
  for (const auto& s : suggestionsOf(report, "fix_leak")) fixes += stackHas(s["stack"], "child_work");
  EXPECT_EQ(fixes, 1);

  // --by-process: the old rows, one per child.
  for (const std::string view : {"report", "leaks"}) {
    json per = view == "report" ? reportJson(rec.db, {"--by-process"}) : viewJson("leaks", rec.db, {"--by-process"});
    auto rows = sitesWith(per["leaks"]["sites"], "child_work");
    ASSERT_EQ(rows.size(), 4u) << view;
    for (const auto& r : rows) {
      EXPECT_EQ(r["bytes"], 1500);
      EXPECT_EQ(r["process_count"], 1);
    }
    EXPECT_EQ(per["filter"]["by_process"], true);
  }
  // --pid: one child, its own 1500 bytes.
  json one = viewJson("leaks", rec.db, {"--pid", std::to_string(*pids.begin())});
  auto mine = sitesWith(one["leaks"]["sites"], "child_work");
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0]["bytes"], 1500);
  EXPECT_EQ(mine[0]["pid"], *pids.begin());
  // Text says how many processes share the site.
  RunResult text = run({memledgerBinary(), "leaks", rec.db});
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("4 processes: pid"), std::string::npos) << text.out;
}

TEST(ReportTruth, FiltersThatSelectNothingTheRecordingHasAreExitTwoWithOneLine) {
  const Recorded& rec = recordOnce(sample("fork_loop"));
  ASSERT_EQ(rec.program.status, 0);
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--kind", "foo"}, "memledger: unknown kind 'foo' (known: malloc, new, mmap, custom, device, pinned, managed, pool, vmm, torch_block, pyobject)\n"},
      {{"--kind", "MALLOC"}, "memledger: unknown kind 'MALLOC' (known: malloc, new, mmap, custom, device, pinned, managed, pool, vmm, torch_block, pyobject)\n"},
      {{"--pid", "1"}, "memledger: no process with pid 1 in '" + rec.db + "'\n"},
      {{"--time", "500:900"}, "is outside the recording '" + rec.db + "' (0 to "},
  };
  for (const std::string view : {"report", "leaks", "peak", "phases", "fragmentation", "suggest"})
    for (const auto& c : cases)
      for (bool asJson : {false, true}) {
        std::vector<std::string> argv = {memledgerBinary(), view, rec.db};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        if (asJson) argv.push_back("--json");
        RunResult r = run(argv);
        EXPECT_EQ(r.status, 2) << joinArgs(argv) << "\n" << r.out;
        EXPECT_EQ(r.out, "") << joinArgs(argv);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << joinArgs(argv) << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << joinArgs(argv) << ": " << r.err;
      }
  // What the recording has still works, and the report names the numbers a filter leaves alone.
  RunResult ok = run({memledgerBinary(), "report", rec.db, "--kind", "malloc", "--time", "0:100"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("filter: kind malloc, allocated 0 ns to 100.00 s"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("unfiltered: the heap and mmap peaks"), std::string::npos) << ok.out;
  json j = reportJson(rec.db, {"--kind", "malloc"});
  EXPECT_EQ(j["filter"]["kind"], "malloc");
  EXPECT_EQ(j["filter"]["unfiltered"].size(), 1u);
  // A view names only what it shows: every leak number is filtered, the peak's bytes are not.
  EXPECT_TRUE(viewJson("leaks", rec.db, {"--kind", "malloc", "--time", "0:100"})["filter"]["unfiltered"].empty());
  json peak = viewJson("peak", rec.db, {"--kind", "malloc"});
  ASSERT_EQ(peak["filter"]["unfiltered"].size(), 1u);
  EXPECT_NE(peak["filter"]["unfiltered"][0].get<std::string>().find("not by kind"), std::string::npos);
}

TEST(ReportTruth, GeometricGrowthGetsNoReserveCapacityButConstantStepsStillDo) {
  const Recorded& doubling = recordOnce(sample("realloc_doubling"));
  ASSERT_EQ(doubling.program.status, 0) << doubling.program.err;
  json d = reportJson(doubling.db);
  bool sawPattern = false;
  for (const auto& p : d["patterns"])
    if (p["kind"] == "realloc_growth" && stackHas(p["site"]["stack"], "grow_doubling")) {
      sawPattern = true;
      EXPECT_EQ(p["evidence"]["max_realloc_chain"], 16) << p.dump();
      EXPECT_NEAR(p["evidence"]["growth_factor"].get<double>(), 2.0, 1e-9) << p.dump();
    }
  EXPECT_TRUE(sawPattern) << d["patterns"].dump();
  EXPECT_TRUE(suggestionsOf(d, "reserve_capacity").empty()) << d["suggestions"].dump(2);

  const Recorded& linear = recordOnce(sample("realloc_growth"));
  ASSERT_EQ(linear.program.status, 0);
  json l = reportJson(linear.db);
  auto reserve = suggestionsOf(l, "reserve_capacity");
  ASSERT_EQ(reserve.size(), 1u) << l["suggestions"].dump(2);
  EXPECT_TRUE(stackHas(reserve[0]["stack"], "grow_buffer"));
  EXPECT_EQ(reserve[0]["confidence"], "high");
  EXPECT_NE(reserve[0]["message"].get<std::string>().find("growing by 16 bytes a step"), std::string::npos);
}

TEST(ReportTruth, TheDemoDoesNotTellTheUserToFixGlibcsStdioBuffer) {
  const Recorded& rec = recordOnce(sample("demo_leaky_peaky"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "1000"});
  bool sawStdio = false;
  for (const auto& s : report["leaks"]["sites"])
    if (isStdioBuffer(s["stack"])) {
      sawStdio = true;
      EXPECT_EQ(s["origin"], "runtime") << s.dump();
    } else if (stackHas(s["stack"], "load_config") || stackHas(s["stack"], "fill_cache")) {
      EXPECT_EQ(s["origin"], "program");
    }
  EXPECT_TRUE(sawStdio) << "the demo prints, so stdio's buffer should be live at exit";
  std::set<std::string> seen;
  for (const auto& s : report["suggestions"]) {
    EXPECT_FALSE(isStdioBuffer(s["stack"])) << s.dump();
    EXPECT_TRUE(s["confidence"] == "high" || s["confidence"] == "medium" || s["confidence"] == "low") << s.dump();
    EXPECT_FALSE(s["confidence_reason"].get<std::string>().empty());
    EXPECT_TRUE(seen.insert(s["kind"].get<std::string>() + s["message"].get<std::string>()).second) << s.dump();
  }
  // fill_cache's 20 KiB is told to be fixed (load_config's 768 bytes are under the rule's floor).
  auto fixes = suggestionsOf(report, "fix_leak");
  ASSERT_FALSE(fixes.empty()) << report["suggestions"].dump(2);
  for (const auto& f : fixes)
    EXPECT_TRUE(stackHas(f["stack"], "fill_cache") || stackHas(f["stack"], "load_config")) << f.dump();
  RunResult text = run({memledgerBinary(), "report", rec.db});
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("[runtime] stdio"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("_IO_file_doallocate` ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("confidence "), std::string::npos);
}

TEST(ReportTruth, JsonReportsTakeTopLikeText) {
  const Recorded& rec = recordOnce(sample("demo_leaky_peaky"));
  json all = reportJson(rec.db, {"--top", "1000"});
  size_t leakSites = all["leaks"]["sites"].size();
  ASSERT_GE(leakSites, 2u);
  json cut = reportJson(rec.db, {"--top", "1"});
  EXPECT_EQ(cut["leaks"]["sites"].size(), 1u);
  EXPECT_EQ(cut["leaks"]["site_count"], leakSites);
  EXPECT_EQ(cut["leaks"]["bytes"], all["leaks"]["bytes"]);  // totals stay over every site
  EXPECT_LE(cut["suggestions"].size(), 1u);
  // The default is 20 per list (README, --help), for a program with more leak sites than that.
  RunResult py = run({"/bin/sh", "-c", "command -v python3"});
  if (py.status != 0) GTEST_SKIP() << "no python3 for a program with many leak sites";
  Recorded big = record("python3", {"-c", "import json, decimal"});
  ASSERT_EQ(big.program.status, 0) << big.program.err;
  json dflt = reportJson(big.db);
  ASSERT_GT(dflt["leaks"]["site_count"].get<size_t>(), 20u);
  EXPECT_EQ(dflt["leaks"]["sites"].size(), 20u);
  RunResult help = run({memledgerBinary(), "report", "--help"});
  EXPECT_NE(help.out.find("20 in JSON"), std::string::npos) << help.out;
}
