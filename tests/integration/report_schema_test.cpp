// `memledger report --json` output is valid against schemas/report.schema.json (the documented
// contract), checked with python3-jsonschema on reports of samples that exercise every section:
// leaks of several kinds, a process tree, marked phases, fragmentation samples, suggestions.
#include <gtest/gtest.h>

#include <filesystem>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

constexpr const char* kValidate =
    "import json, sys, jsonschema\n"
    "schema = json.load(open(sys.argv[1]))\n"
    "jsonschema.validators.validator_for(schema).check_schema(schema)\n"
    "errors = sorted(jsonschema.validators.validator_for(schema)(schema).iter_errors(json.load(sys.stdin)),\n"
    "                key=lambda e: list(e.absolute_path))\n"
    "for e in errors[:5]: print('/'.join(map(str, e.absolute_path)) + ': ' + e.message[:300])\n"
    "sys.exit(1 if errors else 0)\n";

void expectValidRecording(const Recorded& rec, const std::string& sampleName, const std::vector<std::string>& extra = {}) {
  const std::string schema = sourceDir() + "/schemas/report.schema.json";
  std::vector<std::string> argv = {memledgerBinary(), "report", rec.db, "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult rep = run(argv);
  ASSERT_EQ(rep.status, 0) << rep.err;
  RunOptions options;
  options.stdinData = rep.out;
  RunResult check = run({"/usr/bin/python3", "-c", kValidate, schema}, options);
  EXPECT_EQ(check.status, 0) << sampleName << "'s report does not match the schema:\n" << check.out << check.err;
}

void expectValid(const std::string& sampleName, const std::vector<std::string>& extra = {}) {
  const std::string schema = sourceDir() + "/schemas/report.schema.json";
  if (!std::filesystem::exists(schema)) GTEST_SKIP() << "no " << schema;
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0) GTEST_SKIP() << "no python3-jsonschema";
  expectValidRecording(recordOnce(sample(sampleName)), sampleName, extra);
}

}  // namespace

TEST(ReportSchema, LeaksOfEveryKind) { expectValid("cxx_new"); }
TEST(ReportSchema, MmapLeak) { expectValid("mmap_leak"); }
TEST(ReportSchema, ProcessTree) { expectValid("fork_tree"); }
TEST(ReportSchema, CrashedProcess) { expectValid("segv_leak"); }
TEST(ReportSchema, MarkedPhasesAndPeak) { expectValid("demo_leaky_peaky"); }
TEST(ReportSchema, SuggestionsAndTemporaries) { expectValid("realloc_growth"); }
TEST(ReportSchema, SitesMergedAcrossProcesses) { expectValid("fork_loop"); }
TEST(ReportSchema, FilteredPerProcess) { expectValid("fork_loop", {"--by-process", "--kind", "malloc", "--time", "0:10"}); }

// A Python process: Python frames, leaks counted at finalization (leaks.python), frame offsets.
TEST(ReportSchema, PythonScript) {
  const std::string schema = sourceDir() + "/schemas/report.schema.json";
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0) GTEST_SKIP() << "no python3-jsonschema";
  expectValidRecording(record("/usr/bin/python3", {sourceDir() + "/samples/python/leaky.py"}), "leaky.py");
}

// record --python-allocators: the pool "pymalloc" in peak.pools, leaks.pool_blocks.
TEST(ReportSchema, PythonAllocators) {
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0) GTEST_SKIP() << "no python3-jsonschema";
  Recorded rec;
  rec.dir = std::make_shared<TempDir>();
  rec.db = rec.dir->file("x.db");
  rec.program = run({memledgerBinary(), "record", "-o", rec.db, "--python-allocators", "--", "/usr/bin/python3",
                     sourceDir() + "/samples/python/small_objects.py"});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  expectValidRecording(rec, "small_objects.py");
}
