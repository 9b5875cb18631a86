// The JSON report validates against schemas/report.schema.json with a real validator
// (Debian's python3-jsonschema), and the validator is shown to reject a broken document.
#include <cstdlib>
#include <filesystem>

#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;
using memledger::testing::tempPath;

namespace {

constexpr int64_t MiB = 1 << 20;

bool haveValidator() {
  return std::system("/usr/bin/python3 -c 'import jsonschema' >/dev/null 2>&1") == 0;
}

// Validates each document in one python run (the jsonschema import dominates the cost). Per
// document: 0 valid, 1 invalid (errors printed); -1 when the validator itself failed.
std::vector<int> validateAll(const std::vector<std::pair<std::string, nlohmann::json>>& docs) {
  std::string script = tempPath("validate.py");
  {
    std::ofstream out(script);
    out << "import json, sys, jsonschema\n"
           "schema = json.load(open(sys.argv[1]))\n"
           "jsonschema.Draft202012Validator.check_schema(schema)\n"
           "v = jsonschema.Draft202012Validator(schema)\n"
           "for f in sys.argv[2:]:\n"
           "    errors = list(v.iter_errors(json.load(open(f))))\n"
           "    for e in errors[:10]: print('  ', f, 'at', list(e.absolute_path), ':', e.message[:300], file=sys.stderr)\n"
           "    print(1 if errors else 0)\n";
  }
  std::string cmd = "/usr/bin/python3 " + script + " " + MEMLEDGER_SOURCE_DIR + "/schemas/report.schema.json";
  for (const auto& [name, doc] : docs) {
    std::string file = tempPath(name + ".json");
    std::ofstream out(file);
    out << doc.dump(2);
    cmd += " " + file;
  }
  std::vector<int> results;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return std::vector<int>(docs.size(), -1);
  int v;
  while (std::fscanf(p, "%d", &v) == 1) results.push_back(v);
  pclose(p);
  results.resize(docs.size(), -1);
  return results;
}

int validate(const nlohmann::json& doc, const std::string& name) { return validateAll({{name, doc}})[0]; }

// Every section populated: leaks, a peak with sites, phases, fragmentation, patterns, suggestions,
// two processes (one killed by a signal), an unsymbolized frame.
std::string richRecording() {
  RecordingBuilder b("rich.db");
  b.meta("command", "./rich --flag");
  b.meta("peak_image", "1");
  b.process({.id = 1, .pid = 500, .command = "./rich --flag", .peak_rss = 400 * MiB, .peak_heap_bytes = 300 * MiB,
             .peak_heap_ns = 30000000, .peak_mmap_bytes = 8 * MiB, .peak_mmap_ns = 5000000});
  b.process({.id = 2, .pid = 501, .ppid = 500, .ended_by = "signal", .peak_heap_bytes = MiB});
  b.exec("UPDATE processes SET exit_code = NULL, signal = 9, forked = 1, end_ns = NULL WHERE id = 2");
  int64_t big = b.stack(1, {{"build_index", "/src/index.cpp", 40}, {"main", "/src/main.cpp", 10}});
  int64_t grow = b.stack(1, {{"grow_buffer", "/src/growth.c", 12}, {nullptr, nullptr, 0}});
  int64_t raw = b.rawStack(2);
  b.site({.stack = big, .kind = "new", .alloc_count = 3, .alloc_bytes = 300 * MiB, .free_count = 2,
          .freed_bytes = 290 * MiB, .leak_count = 1, .leak_bytes = 10 * MiB, .peak_count = 3,
          .peak_bytes = 280 * MiB, .min_size = 10 * MiB, .max_size = 200 * MiB});
  b.site({.stack = grow, .alloc_count = 4097, .alloc_bytes = 1 << 26, .free_count = 4097, .freed_bytes = 1 << 26,
          .temp_count = 20000, .temp_bytes = 1 << 20, .realloc_count = 4096, .min_size = 16,
          .max_size = 16 + 16 * 4096, .max_realloc_chain = 4096});
  b.site({.stack = raw, .image = 2, .alloc_count = 2000, .alloc_bytes = 2000 * 32, .leak_count = 2000,
          .leak_bytes = 2000 * 32, .max_live_count = 2000, .max_live_bytes = 2000 * 32, .min_size = 32,
          .max_size = 32});
  for (int i = 0; i < 40; ++i) {
    int64_t heap = i < 10 ? i * 10 * MiB : i < 15 ? (15 - i) * 10 * MiB : i < 30 ? (i - 15) * 20 * MiB : (40 - i) * 30 * MiB;
    b.timeline({.t_ns = i * 1000000LL, .heap_bytes = heap, .rss_bytes = heap + 100 * MiB,
                .anon_bytes = heap * 3 / 2 + MiB, .allocs = 5, .frees = 5, .alloc_bytes = 10 * MiB});
  }
  b.alloc(1, big, 0x10000, 10 * MiB, 2000000);
  b.alloc(1, big, 0x20000000, 200 * MiB, 20000000, 35000000);
  b.marker(1, 0, "warmup");
  return b.finish();
}

}  // namespace

TEST(AnalyzerJson, FullReportValidatesAgainstTheSchema) {
  if (!haveValidator()) GTEST_SKIP() << "/usr/bin/python3 has no jsonschema module";
  auto rec = Recording::open(richRecording());
  nlohmann::json j = toJson(report(rec));
  // Every section really has content, so the schema is exercised on real values.
  EXPECT_FALSE(j["leaks"]["sites"].empty());
  EXPECT_FALSE(j["peak"]["sites"].empty());
  EXPECT_FALSE(j["phases"].empty());
  EXPECT_FALSE(j["fragmentation"]["series"].empty());
  EXPECT_FALSE(j["patterns"].empty());
  EXPECT_GE(j["suggestions"].size(), 4u);
  EXPECT_EQ(j["processes"].size(), 2u);
  EXPECT_TRUE(j["processes"][1]["end_ns"].is_null());
  // Process 2's RSS was never sampled (peak_rss 0 in the recording): null, not 0 bytes.
  EXPECT_EQ(j["processes"][0]["peak_rss"], 400 * MiB);
  EXPECT_TRUE(j["processes"][1]["peak_rss"].is_null());
  EXPECT_EQ(j["totals"]["temporary"]["count"], 20000);
  EXPECT_EQ(j["peak"]["by_kind"]["heap"]["bytes"], 300 * MiB);
  EXPECT_EQ(validate(j, "full"), 0) << j.dump(2).substr(0, 2000);
}

TEST(AnalyzerJson, ViewDocumentsValidate) {
  if (!haveValidator()) GTEST_SKIP() << "/usr/bin/python3 has no jsonschema module";
  auto rec = Recording::open(richRecording());
  nlohmann::json base = {{"recording", toJson(rec.info())}};
  nlohmann::json l = base, p = base, ph = base, f = base, s = base;
  l["view"] = "leaks";
  l["leaks"] = toJson(leaks(rec, {.top = 1}));
  p["view"] = "peak";
  p["peak"] = toJson(peak(rec));
  ph["view"] = "phases";
  ph["phases"] = toJson(phases(rec));
  f["view"] = "fragmentation";
  f["fragmentation"] = toJson(fragmentation(rec));
  s["view"] = "suggest";
  s["suggestions"] = toJson(suggestions(rec));
  // A view without its section is not valid.
  nlohmann::json bad = base;
  bad["view"] = "leaks";
  auto r = validateAll({{"view-leaks", l}, {"view-peak", p}, {"view-phases", ph}, {"view-frag", f},
                        {"view-suggest", s}, {"view-bad", bad}});
  EXPECT_EQ(r, (std::vector<int>{0, 0, 0, 0, 0, 1}));
}

TEST(AnalyzerJson, SchemaRejectsBrokenReports) {
  if (!haveValidator()) GTEST_SKIP() << "/usr/bin/python3 has no jsonschema module";
  auto rec = Recording::open(richRecording());
  nlohmann::json good = toJson(report(rec));

  nlohmann::json noModule = good;
  noModule["leaks"]["sites"][0]["stack"][0].erase("module");
  nlohmann::json noLeaks = good;
  noLeaks.erase("leaks");
  nlohmann::json negative = good;
  negative["totals"]["allocations"] = -1;
  nlohmann::json noEvidence = good;
  noEvidence["suggestions"][0]["evidence"] = nlohmann::json::object();
  auto r = validateAll({{"good", good}, {"no-module", noModule}, {"no-leaks", noLeaks}, {"negative", negative},
                        {"no-evidence", noEvidence}});
  EXPECT_EQ(r, (std::vector<int>{0, 1, 1, 1, 1}));
}

TEST(AnalyzerJson, StacksAreInnermostFirstWithNullsForUnknowns) {
  auto rec = Recording::open(richRecording());
  nlohmann::json j = toJson(report(rec));
  // The leak of build_index (10 MiB) is the largest.
  const auto& site = j["leaks"]["sites"][0];
  EXPECT_EQ(site["bytes"], 10 * MiB);
  EXPECT_EQ(site["kind"], "new");
  EXPECT_EQ(site["pid"], 500);
  EXPECT_EQ(site["stack"][0]["function"], "build_index");
  EXPECT_EQ(site["stack"][1]["function"], "main");
  const auto& childLeak = j["leaks"]["sites"][1];
  EXPECT_EQ(childLeak["pid"], 501);
  EXPECT_TRUE(childLeak["stack"][0]["function"].is_null());
  EXPECT_TRUE(childLeak["stack"][0]["line"].is_null());
  EXPECT_EQ(j["recording"]["command"], "./rich --flag");
  EXPECT_TRUE(j["recording"]["complete"].get<bool>());
}
