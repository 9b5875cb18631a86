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

void expectValid(const std::string& sampleName) {
  const std::string schema = sourceDir() + "/schemas/report.schema.json";
  if (!std::filesystem::exists(schema)) GTEST_SKIP() << "no " << schema;
  if (run({"/usr/bin/python3", "-c", "import jsonschema"}).status != 0) GTEST_SKIP() << "no python3-jsonschema";
  const Recorded& rec = recordOnce(sample(sampleName));
  RunResult rep = run({memledgerBinary(), "report", rec.db, "--json"});
  ASSERT_EQ(rep.status, 0) << rep.err;
  RunOptions options;
  options.stdinData = rep.out;
  RunResult check = run({"/usr/bin/python3", "-c", kValidate, schema}, options);
  EXPECT_EQ(check.status, 0) << sampleName << "'s report does not match the schema:\n" << check.out << check.err;
}

}  // namespace

TEST(ReportSchema, LeaksOfEveryKind) { expectValid("cxx_new"); }
TEST(ReportSchema, MmapLeak) { expectValid("mmap_leak"); }
TEST(ReportSchema, ProcessTree) { expectValid("fork_tree"); }
TEST(ReportSchema, CrashedProcess) { expectValid("segv_leak"); }
TEST(ReportSchema, MarkedPhasesAndPeak) { expectValid("demo_leaky_peaky"); }
TEST(ReportSchema, SuggestionsAndTemporaries) { expectValid("realloc_growth"); }
