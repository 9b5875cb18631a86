// Which Python leaks are the program's (docs/python.md): the interpreter's own start-up blocks
// and its allocator's mmaps are labelled, not given advice; a --time filter counts a Python
// process's leaks by the same rule (live at finalization), by allocation time; a Python child
// started by subprocess keeps its own lines. Real scripts from samples/python.
#include <gtest/gtest.h>

#include <unistd.h>

#include "harness.h"

using namespace memledger::test;

namespace {

std::string script(const std::string& name) { return sourceDir() + "/samples/python/" + name; }

bool haveDebianPython() { return access("/usr/bin/python3", X_OK) == 0; }

std::string pyenv(const char* version) { return "/root/.pyenv/versions/" + std::string(version) + "/bin/python3"; }

// "function:line" of a site's frames in the sample `file`, innermost first.
std::vector<std::string> framesIn(const json& site, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& f : site.value("stack", json::array()))
    if (f["file"].is_string() && f["file"].get<std::string>().ends_with("/samples/python/" + file))
      out.push_back(f.value("function", std::string("?")) + ":" + std::to_string(f.value("line", int64_t{0})));
  return out;
}

json siteAt(const json& sites, const std::string& file, const std::vector<std::string>& frames) {
  for (const auto& s : sites)
    if (framesIn(s, file) == frames) return s;
  return json();
}

bool hasFrame(const json& stack, const std::string& function) {
  for (const auto& f : stack)
    if (f["function"].is_string() && f["function"] == function) return true;
  return false;
}

}  // namespace

// leaky.py's report: the interpreter's start-up blocks (under Py_InitializeFromConfig) are
// labelled runtime and its arenas allocator-internal, with their reasons; no suggestion tells the
// user to free them, and the one leak suggestion names the script's line in Python's terms.
void checkInterpreterSites(const std::string& python) {
  Recorded rec = record(python, {script("leaky.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "100000"});
  int64_t startup = 0, arenas = 0, program = 0;
  for (const auto& s : report["leaks"]["sites"]) {
    const std::string origin = s.value("origin", "");
    if (hasFrame(s["stack"], "Py_InitializeFromConfig")) {
      EXPECT_NE(origin, "program") << s.dump().substr(0, 800);
      startup += origin == "runtime";
      EXPECT_FALSE(s.value("origin_reason", "").empty());  // start-up's, or a built-in pattern's
    }
    if (s["kind"] == "mmap") {
      EXPECT_EQ(origin, "allocator-internal") << s.dump().substr(0, 800);
      arenas += origin == "allocator-internal";
    }
    if (origin == "program") {
      ++program;
      // What is left is the script's: each site has a frame of leaky.py.
      EXPECT_FALSE(framesIn(s, "leaky.py").empty()) << s.dump().substr(0, 1200);
    }
  }
  EXPECT_GT(startup, 10);
  EXPECT_GE(arenas, 1);
  EXPECT_GE(program, 1);
  int fixLeak = 0;
  for (const auto& sg : report["suggestions"]) {
    if (sg["kind"] != "fix_leak") continue;
    ++fixLeak;
    const std::string m = sg["message"];
    EXPECT_TRUE(m.starts_with("`py_leaker` (leaky.py:7) made 20,000 blocks")) << m;
    EXPECT_EQ(m.find("std::unique_ptr"), std::string::npos) << m;
  }
  EXPECT_EQ(fixLeak, 1) << report["suggestions"].dump().substr(0, 3000);
}

TEST(PythonLeakRules, InterpreterOwnSitesAreLabelledNotAdvisedDebian) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  checkInterpreterSites("/usr/bin/python3");
}

// pyenv's build has symbols for its static functions: the same labels, by pattern or by rule.
TEST(PythonLeakRules, InterpreterOwnSitesAreLabelledNotAdvisedPyenv) {
  if (access(pyenv("3.11.7").c_str(), X_OK) != 0) GTEST_SKIP() << "no pyenv 3.11.7 on this machine";
  checkInterpreterSites(pyenv("3.11.7"));
}

// --time: a Python process's leaks are still what was live at finalization, kept when allocated
// in the range (to the 1 ms timeline bucket). phased.py keeps 300 blocks at first() before its
// marker and 200 at second() after it; both are freed by finalization, so the rule for blocks
// live at exit would find neither.
TEST(PythonLeakRules, TimeFilterCountsPythonLeaksByAllocationTime) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("phased.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json full = reportJson(rec.db, {"--top", "100000"});
  int64_t markNs = -1;
  for (const auto& p : full["phases"])
    if (p["name"] == "second") markNs = p["start_ns"];
  ASSERT_GT(markNs, 0) << full["phases"].dump();
  const std::string mark = std::to_string(markNs) + "ns";
  const std::vector<std::string> first = {"first:11", "<module>:17"}, second = {"second:15", "<module>:22"};
  json all = full["leaks"]["sites"];
  ASSERT_FALSE(siteAt(all, "phased.py", first).is_null()) << describeSites(all);
  ASSERT_FALSE(siteAt(all, "phased.py", second).is_null()) << describeSites(all);
  EXPECT_FALSE(full["leaks"]["python"].contains("allocation_bucket_ns"));

  json before = reportJson(rec.db, {"--top", "100000", "--time", ":" + mark});
  json b = siteAt(before["leaks"]["sites"], "phased.py", first);
  ASSERT_FALSE(b.is_null()) << describeSites(before["leaks"]["sites"]);
  EXPECT_EQ(b["count"], 300);
  EXPECT_EQ(b["bytes"], 300 * 7001);
  EXPECT_TRUE(siteAt(before["leaks"]["sites"], "phased.py", second).is_null());
  EXPECT_EQ(before["leaks"]["python"]["counted_at"], "interpreter finalization");
  EXPECT_EQ(before["leaks"]["python"]["allocation_bucket_ns"], 1000000);

  json after = reportJson(rec.db, {"--top", "100000", "--time", mark + ":"});
  json a = siteAt(after["leaks"]["sites"], "phased.py", second);
  ASSERT_FALSE(a.is_null()) << describeSites(after["leaks"]["sites"]);
  EXPECT_EQ(a["count"], 200);
  EXPECT_EQ(a["bytes"], 200 * 7101);
  EXPECT_TRUE(siteAt(after["leaks"]["sites"], "phased.py", first).is_null());
  // After the marker the program only kept what second() made: its bytearrays, and the list's
  // item array it grew.
  for (const auto& s : after["leaks"]["sites"])
    if (s.value("origin", "") == "program") {
      std::vector<std::string> py = framesIn(s, "phased.py");
      EXPECT_TRUE(!py.empty() && py.front() == "second:15") << s.dump().substr(0, 1500);
    }

  // The text says which rule the filtered count used.
  RunResult text = run({memledgerBinary(), "report", rec.db, "--time", mark + ":"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("(Python: live when the interpreter started finalizing and allocated in the range (to "
                          "its 1.00 ms timeline bucket), in 1 process;"),
            std::string::npos)
      << text.out.substr(0, 1500);
}

// subprocess.run([sys.executable, grow.py, "400"]) inside the recorded tree: the child is a
// Python process of its own, with its leak at its own line, counted at its own finalization.
TEST(PythonLeakRules, SubprocessChildKeepsItsOwnLines) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("spawner.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "100000", "--by-process"});
  const json& sites = report["leaks"]["sites"];
  json child = siteAt(sites, "grow.py", {"keep:9", "<module>:11"});
  json parent = siteAt(sites, "spawner.py", {"parent_keep:11", "<module>:15"});
  ASSERT_FALSE(child.is_null()) << describeSites(sites);
  ASSERT_FALSE(parent.is_null()) << describeSites(sites);
  EXPECT_EQ(child["count"], 400);
  EXPECT_EQ(child["bytes"], 400 * 3001);
  EXPECT_EQ(parent["count"], 200);
  EXPECT_EQ(parent["bytes"], 200 * 3501);
  EXPECT_NE(child["pid"], parent["pid"]);
  EXPECT_EQ(report["leaks"]["python"]["processes"], 2);
}

// `#!/usr/bin/env python3`: env finds python3 on PATH and execs it (through pyenv's shim, a bash
// script that execs the real interpreter, where PATH has it first); the script's lines are one
// more than grow.py's (the #! line), its leak is counted at its own finalization.
void checkEnvShebang(const std::vector<std::pair<std::string, std::string>>& env) {
  TempDir dir;
  const std::string path = dir.file("grow_env");
  {
    std::ofstream out(path);
    out << "#!/usr/bin/env python3\n" << fileBytes(script("grow.py"));
  }
  ASSERT_EQ(chmod(path.c_str(), 0755), 0);
  RunOptions options;
  options.env = env;
  Recorded rec = record(path, {"700"}, options);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "100000"});
  bool found = false;
  for (const auto& s : report["leaks"]["sites"]) {
    std::vector<std::string> fr;
    for (const auto& f : s["stack"])
      if (f["file"].is_string() && f["file"] == path)
        fr.push_back(f["function"].get<std::string>() + ":" + std::to_string(f["line"].get<int64_t>()));
    if (fr == std::vector<std::string>{"keep:10", "<module>:12"} && s["count"] == 700) {
      found = true;
      EXPECT_EQ(s["bytes"], 700 * 3001);
      EXPECT_EQ(s["origin"], "program");
    }
  }
  EXPECT_TRUE(found) << describeSites(report["leaks"]["sites"]);
}

TEST(PythonLeakRules, EnvShebangScriptDebianPython) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  checkEnvShebang({{"PATH", "/usr/bin:/bin"}});
}

TEST(PythonLeakRules, EnvShebangScriptThroughPyenvShim) {
  if (access("/root/.pyenv/shims/python3", X_OK) != 0) GTEST_SKIP() << "no pyenv shim on this machine";
  RunResult v = run({"/root/.pyenv/shims/python3", "-c", "import sys; print((3, 10) <= sys.version_info[:2] <= (3, 13))"});
  if (v.out != "True\n") GTEST_SKIP() << "pyenv's python3 is not 3.10 to 3.13: " << v.out << v.err;
  const char* path = getenv("PATH");
  checkEnvShebang({{"PATH", "/root/.pyenv/shims:" + std::string(path ? path : "/usr/bin:/bin")}});
}

// An extension's buffers kept by a Python global (numpy arrays in a list): numpy's stripped C code
// allocated them, finalization freed them (python_owned), so the advice is Python's and names the
// program's line that made them, through numpy's own Python code (ones, numeric.py).
TEST(PythonLeakRules, ExtensionBuffersKeptByPythonGetPythonAdvice) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  if (run({"/usr/bin/python3", "-c", "import numpy"}).status != 0) GTEST_SKIP() << "no python3-numpy";
  Recorded rec = record("/usr/bin/python3", {script("numpy_kept.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "50"});
  int64_t count = 0, bytes = 0;
  for (const auto& s : report["leaks"]["sites"]) {
    if (framesIn(s, "numpy_kept.py") != std::vector<std::string>{"keep:9", "<module>:11"}) continue;
    if (s["bytes"].get<int64_t>() < 800000) continue;  // the arrays, not the list holding them
    EXPECT_EQ(s["origin"], "program");
    EXPECT_EQ(s.value("python_owned", false), true) << s.dump().substr(0, 300);
    EXPECT_NE(s["stack"][0]["module"].get<std::string>().find("_multiarray_umath"), std::string::npos);
    count += s["count"].get<int64_t>();
    bytes += s["bytes"].get<int64_t>();
  }
  EXPECT_EQ(count, 20) << describeSites(report["leaks"]["sites"]);
  EXPECT_EQ(bytes, 20 * 800000);
  bool advised = false;
  for (const auto& sg : report["suggestions"]) {
    const std::string m = sg["message"];
    if (sg["kind"] != "fix_leak" || !m.starts_with("`keep` (numpy_kept.py:9) in _multiarray_umath")) continue;
    advised = true;
    EXPECT_NE(m.find("still referenced when the program's code finished"), std::string::npos) << m;
    EXPECT_EQ(m.find("std::unique_ptr"), std::string::npos) << m;
    EXPECT_EQ(sg["evidence"]["finalization_freed"], sg["evidence"]["leak_count"]);
  }
  EXPECT_TRUE(advised) << report["suggestions"].dump().substr(0, 2000);
}
