// `memledger export`, `diff` and `mark` end to end on recordings of samples/ci_leaky.c.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <fstream>
#include <sstream>

#include "harness.h"

namespace t = memledger::test;

namespace {

using t::sqlInt;

t::RunResult cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {t::memledgerBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return t::run(argv);
}

}  // namespace

TEST(CiExportCli, FoldedLeakedMatchesTheReport) {
  auto rec = t::record(t::sample("ci_leaky"), {"leak", "3"});
  auto folded = cli({"export", rec.db, "--format", "folded"});
  ASSERT_EQ(folded.status, 0) << folded.err;
  std::istringstream in(folded.out);
  std::string line;
  int64_t sum = 0, leakLine = 0;
  while (std::getline(in, line)) {
    auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos);
    int64_t v = std::stoll(line.substr(space + 1));
    sum += v;
    if (line.find(";main;ci_leak_block ") != std::string::npos) leakLine = v;
  }
  EXPECT_EQ(leakLine, 3000) << folded.out;
  EXPECT_EQ(sum, sqlInt(rec.db, "SELECT sum(size) FROM allocations WHERE t_free IS NULL"));
}

TEST(CiExportCli, EveryFormatWritesSomethingReadable) {
  auto rec = t::record(t::sample("ci_leaky"), {"leak", "2"});
  t::TempDir dir;
  ASSERT_EQ(cli({"export", rec.db, "--format", "pprof", "-o", dir.file("p.pb.gz")}).status, 0);
  ASSERT_EQ(cli({"export", rec.db, "--format", "chrome-trace", "-o", dir.file("t.json")}).status, 0);
  auto json = cli({"export", rec.db, "--format", "json"});
  ASSERT_EQ(json.status, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["leaks"]["bytes"], sqlInt(rec.db, "SELECT sum(size) FROM allocations WHERE t_free IS NULL"));
  std::ifstream traceIn(dir.file("t.json"));
  auto trace = nlohmann::json::parse(traceIn);
  int counters = 0;
  for (const auto& e : trace["traceEvents"]) counters += e["ph"] == "C" && e["name"] == "heap";
  EXPECT_GT(counters, 0);
  // The pprof file is gzip: python's gzip module inflates it to a non-empty protobuf.
  auto gz = t::run({"/usr/bin/python3", "-c",
                    "import gzip,sys; d=gzip.open(sys.argv[1]).read(); print(len(d) > 0)", dir.file("p.pb.gz")});
  EXPECT_EQ(gz.out, "True\n") << gz.err;
  // --top N: at most N sites per list, the totals still over every site.
  auto full = nlohmann::json::parse(json.out);
  auto topOne = cli({"export", rec.db, "--format", "json", "--top", "1"});
  ASSERT_EQ(topOne.status, 0) << topOne.err;
  auto cut = nlohmann::json::parse(topOne.out);
  ASSERT_GE(full["leaks"]["sites"].size(), 2u) << full["leaks"].dump().substr(0, 300);
  EXPECT_EQ(cut["leaks"]["sites"].size(), 1u);
  EXPECT_EQ(cut["leaks"]["sites"][0], full["leaks"]["sites"][0]);
  EXPECT_EQ(cut["leaks"]["site_count"], full["leaks"]["site_count"]);
  EXPECT_EQ(cut["leaks"]["bytes"], full["leaks"]["bytes"]);
  EXPECT_EQ(cut["totals"], full["totals"]);
  EXPECT_EQ(cli({"export", rec.db, "--format", "folded", "--top", "1"}).status, 2);
  EXPECT_EQ(cli({"export", rec.db, "--format", "svg"}).status, 2);
  EXPECT_EQ(cli({"export", rec.db, "--format", "folded", "--metric", "weight"}).status, 2);
  EXPECT_EQ(cli({"export", dir.file("missing.db"), "--format", "folded"}).status, 2);
}

TEST(CiDiffCli, NamesTheSiteThatGrew) {
  auto a = t::record(t::sample("ci_leaky"), {"leak", "1"});
  auto b = t::record(t::sample("ci_leaky"), {"leak", "4"});
  auto r = cli({"diff", a.db, b.db, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["sites"].empty());
  EXPECT_EQ(j["sites"][0]["stack"][0]["function"], "ci_leak_block");
  EXPECT_EQ(j["sites"][0]["delta"]["leak_bytes"], 3000);
  EXPECT_EQ(j["sites"][0]["status"], "changed");
  auto text = cli({"diff", a.db, b.db});
  EXPECT_NE(text.out.find("ci_leak_block"), std::string::npos) << text.out;
  EXPECT_EQ(cli({"diff", a.db}).status, 2);
}

TEST(CiMarkCli, MarksOnlyUnderRecord) {
  auto outside = cli({"mark", "x"});
  EXPECT_EQ(outside.status, 2);
  EXPECT_EQ(outside.err, "memledger: not running under memledger record\n");
  // "; true" keeps sh from exec'ing the last command: `mark` runs in a child process of its own.
  auto rec = t::record("sh", {"-c", t::memledgerBinary() + " mark phase1; true"});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  auto trace = cli({"export", rec.db, "--format", "chrome-trace"});
  bool marked = false;
  auto parsed = nlohmann::json::parse(trace.out);  // kept alive: the loop walks inside it
  for (const auto& e : parsed["traceEvents"])
    marked |= e["ph"] == "i" && e["name"] == "phase1";
  EXPECT_TRUE(marked) << "markers in the file: " << sqlInt(rec.db, "SELECT count(*) FROM markers")
                      << "\nstderr: " << rec.program.err << "\nexport stderr: " << trace.err;
}
