// JUnit XML and SARIF written from check results: parsed back and their fields asserted.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "analyzer/junit.h"
#include "analyzer/sarif.h"
#include "ci_fixture.h"

namespace an = memledger::analyzer;
using memledger::testing::buildCiRecording;
using memledger::testing::CiRecordingOptions;
using memledger::testing::tempPath;

namespace {

// Runs Debian's python3 on a script; returns its stdout ("" and a failure when it fails).
std::string python(const std::string& script) {
  std::string path = tempPath("ci_script.py");
  std::ofstream(path) << script;
  FILE* p = popen(("/usr/bin/python3 " + path + " 2>&1").c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out;
  return out;
}

an::CheckResult failingCheck(const std::string& name) {
  an::Recording rec = an::Recording::open(buildCiRecording(name));
  an::SuppressionList supp;
  supp.addDefaults();
  an::Limits limits;
  limits.max_leaks = 0;
  return an::check(rec, limits, supp);
}

}  // namespace

TEST(CiJUnit, EscapesEverythingXmlForbids) {
  EXPECT_EQ(an::escapeXml("a<b>&\"c'\x01\td"), "a&lt;b&gt;&amp;&quot;c&apos;?\td");
}

TEST(CiJUnit, OneCasePerProcessParsesAsXml) {
  an::CheckResult r = failingCheck("junit.db");
  auto cases = an::junitCasesPerProcess(r);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_TRUE(cases[0].failed);
  std::string xml = an::junitXml("memledger check", cases);
  std::string path = tempPath("junit.xml");
  std::ofstream(path) << xml;
  std::string out = python(
      "import xml.etree.ElementTree as ET\n"
      "root = ET.parse('" + path + "').getroot()\n"
      "print(root.tag, root.get('tests'), root.get('failures'))\n"
      "for tc in root.iter('testcase'):\n"
      "    f = tc.find('failure')\n"
      "    print('case', repr(tc.get('name')), f is not None)\n"
      "    print('message', f.get('message'))\n"
      "    print('has_stack', 'leak_here (/src/prog.c:10)' in f.text)\n");
  EXPECT_EQ(out,
            "testsuites 1 1\n"
            "case './prog <arg> & \"quoted\"' True\n"
            "message max-leaks: 2 leaked blocks > limit 0\n"
            "has_stack True\n");
}

TEST(CiJUnit, PassingProcessHasNoFailure) {
  an::Recording rec = an::Recording::open(buildCiRecording("junit-pass.db"));
  an::SuppressionList supp;
  supp.addDefaults();
  an::Limits limits;
  limits.max_leaked_bytes = 1 << 20;
  auto cases = an::junitCasesPerProcess(an::check(rec, limits, supp));
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_FALSE(cases[0].failed);
  std::string xml = an::junitXml("s", cases);
  EXPECT_EQ(xml.find("<failure"), std::string::npos);
  EXPECT_NE(xml.find("failures=\"0\""), std::string::npos);
}

TEST(CiSarif, OneResultPerViolatingSiteAtTheInnermostSourceFrame) {
  an::CheckResult r = failingCheck("sarif.db");
  nlohmann::json log = an::sarifLog({{"./prog", &r}}, "/src", "0.1.0");
  EXPECT_EQ(log["version"], "2.1.0");
  EXPECT_EQ(log["$schema"], "https://json.schemastore.org/sarif-2.1.0.json");
  ASSERT_EQ(log["runs"].size(), 1u);
  const auto& run = log["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["name"], "memledger");
  bool hasRule = false;
  for (const auto& rule : run["tool"]["driver"]["rules"]) hasRule |= rule["id"] == "max-leaks";
  EXPECT_TRUE(hasRule);
  ASSERT_EQ(run["results"].size(), 1u);  // one violation (max-leaks) with one site
  const auto& res = run["results"][0];
  EXPECT_EQ(res["ruleId"], "max-leaks");
  EXPECT_EQ(res["level"], "error");
  const auto& phys = res["locations"][0]["physicalLocation"];
  EXPECT_EQ(phys["artifactLocation"]["uri"], "prog.c");  // relative to --sarif-root /src
  EXPECT_EQ(phys["artifactLocation"]["uriBaseId"], "SRCROOT");
  EXPECT_EQ(phys["region"]["startLine"], 10);
  EXPECT_EQ(run["originalUriBaseIds"]["SRCROOT"]["uri"], "file:///src/");
  EXPECT_EQ(res["stacks"][0]["frames"].size(), 2u);
  EXPECT_NE(res["message"]["text"].get<std::string>().find("4096 bytes in 2 blocks"), std::string::npos);

  // Without a root, absolute paths become file:// URIs (percent-encoded).
  nlohmann::json abs = an::sarifLog({{"./prog", &r}}, "", "0.1.0");
  EXPECT_EQ(abs["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "file:///src/prog.c");
  EXPECT_EQ(an::pathToUri("/a b/c#d.c"), "/a%20b/c%23d.c");
}

TEST(CiSarif, ProgramFailureIsAResultWithoutLocation) {
  CiRecordingOptions o;
  o.exitCode = 1;
  an::Recording rec = an::Recording::open(buildCiRecording("sarif-exit.db", o));
  an::SuppressionList supp;
  supp.addText("leak:leak_here\n", "x");
  supp.addDefaults();
  an::CheckResult r = an::check(rec, an::Limits{}, supp);
  nlohmann::json log = an::sarifLog({{"./prog", &r}}, "", "0.1.0");
  ASSERT_EQ(log["runs"][0]["results"].size(), 1u);
  EXPECT_EQ(log["runs"][0]["results"][0]["ruleId"], "program-failed");
  EXPECT_FALSE(log["runs"][0]["results"][0].contains("locations"));
}
