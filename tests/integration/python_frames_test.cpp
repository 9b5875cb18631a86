// Python frames (docs/python.md): real scripts from samples/python recorded under real CPython
// builds, their leak and peak sites checked for the exact function, file and line, and exact bytes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <set>

#include "harness.h"

using namespace memledger::test;

namespace {

std::string script(const std::string& name) { return sourceDir() + "/samples/python/" + name; }

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string pyenv(const char* version) { return "/root/.pyenv/versions/" + std::string(version) + "/bin/python3"; }

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The Python frames of a site's stack in one of our samples: "function:line", innermost first.
std::vector<std::string> pyFrames(const json& site, const std::string& file) {
  std::vector<std::string> out;
  for (const auto& f : site.value("stack", json::array())) {
    if (!f.contains("file") || !f["file"].is_string()) continue;
    if (!endsWith(f["file"].get<std::string>(), "/samples/python/" + file)) continue;
    out.push_back(f.value("function", std::string("?")) + ":" + std::to_string(f.value("line", int64_t{0})));
  }
  return out;
}

// The site whose sample frames are exactly `frames`; null json when none.
json siteWithFrames(const json& sites, const std::string& file, const std::vector<std::string>& frames) {
  for (const auto& s : sites)
    if (pyFrames(s, file) == frames) return s;
  return json();
}

std::string describePy(const json& sites, const std::string& file) {
  std::string out;
  for (const auto& s : sites) {
    auto fr = pyFrames(s, file);
    if (fr.empty()) continue;
    out += std::to_string(s.value("bytes", int64_t{0})) + " B:";
    for (const auto& f : fr) out += " " + f;
    out += "\n";
  }
  return out;
}

// leaky.py: 20,000 bytearray(4096) (4097 bytes each) at py_leaker (leaky.py:7), called at line 9.
void checkLeaky(const std::string& python) {
  Recorded rec = record(python, {script("leaky.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "50"});
  const std::vector<std::string> frames = {"py_leaker:7", "<module>:9"};
  json leak = siteWithFrames(report["leaks"]["sites"], "leaky.py", frames);
  ASSERT_FALSE(leak.is_null()) << describePy(report["leaks"]["sites"], "leaky.py");
  EXPECT_EQ(leak["count"], 20000);
  EXPECT_EQ(leak["bytes"], 20000 * 4097);
  // Counted when the interpreter started finalizing; finalization freed the list.
  ASSERT_TRUE(report["leaks"].contains("python")) << report["leaks"].dump().substr(0, 300);
  EXPECT_EQ(report["leaks"]["python"]["processes"], 1);
  EXPECT_LT(report["leaks"]["python"]["left_by_finalization"]["bytes"].get<int64_t>(), 20000 * 4097);
  json peak = siteWithFrames(report["peak"]["sites"], "leaky.py", frames);
  ASSERT_FALSE(peak.is_null()) << describePy(report["peak"]["sites"], "leaky.py");
  EXPECT_EQ(peak["bytes"], 20000 * 4097);
  // The native frames inside the bytearray call stay in place, innermost.
  EXPECT_TRUE(stackHas(peak["stack"], "PyByteArray_Resize")) << peak["stack"].dump().substr(0, 600);
}

}  // namespace

TEST(PythonFrames, DebianPython311NamesTheLeakingLine) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  checkLeaky("/usr/bin/python3");
}

TEST(PythonFrames, PyenvPython311NamesTheLeakingLine) {
  if (!executable(pyenv("3.11.7"))) GTEST_SKIP() << "no pyenv 3.11.7 on this machine";
  checkLeaky(pyenv("3.11.7"));
}

TEST(PythonFrames, Python310NamesTheLeakingLine) {
  if (!executable(pyenv("3.10.13"))) GTEST_SKIP() << "no pyenv 3.10.13 on this machine";
  checkLeaky(pyenv("3.10.13"));
}

TEST(PythonFrames, Python312NamesTheLeakingLine) {
  if (!executable(pyenv("3.12.1"))) GTEST_SKIP() << "no pyenv 3.12.1 on this machine";
  checkLeaky(pyenv("3.12.1"));
}

TEST(PythonFrames, Python313NamesTheLeakingLine) {
  if (!executable(pyenv("3.13.0"))) GTEST_SKIP() << "no pyenv 3.13.0 on this machine";
  checkLeaky(pyenv("3.13.0"));
}

TEST(PythonFrames, NoPythonKeepsNativeFramesOnly) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec;
  rec.dir = std::make_shared<TempDir>();
  rec.db = rec.dir->file("x.db");
  rec.program = run({memledgerBinary(), "record", "--no-python", "-o", rec.db, "--", "/usr/bin/python3", script("leaky.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "50"});
  for (const auto& s : report["leaks"]["sites"]) EXPECT_TRUE(pyFrames(s, "leaky.py").empty()) << s.dump().substr(0, 400);
  // The leak still counts at finalization: 20,000 blocks of 4097 bytes at one native site.
  bool found = false;
  for (const auto& s : report["leaks"]["sites"]) found = found || (s["count"] == 20000 && s["bytes"] == 20000 * 4097);
  EXPECT_TRUE(found) << describeSites(report["leaks"]["sites"]);
}

TEST(PythonFrames, ThreadsEachAtTheirLine) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("threads.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "50"});
  json site = siteWithFrames(report["leaks"]["sites"], "threads.py", {"worker:9"});
  ASSERT_FALSE(site.is_null()) << describePy(report["leaks"]["sites"], "threads.py");
  EXPECT_EQ(site["count"], 800);
  EXPECT_EQ(site["bytes"], 200 * (10001 + 10002 + 10003 + 10004));
  EXPECT_TRUE(stackHas(site["stack"], "Thread.run")) << site["stack"].dump().substr(0, 800);
}

TEST(PythonFrames, GeneratorExceptionAndCoroutineLines) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("shapes.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "200"});
  const json& sites = report["leaks"]["sites"];
  struct Expect {
    std::vector<std::string> frames;
    int64_t count, size;
  } expects[] = {
      {{"produce:9", "consume:12", "<module>:35"}, 50, 5002},
      {{"thrower:17", "thrower:19", "thrower:19", "thrower:19", "thrower:19", "catcher:24", "<module>:36"}, 30, 5003},
      {{"catcher:26", "<module>:36"}, 30, 5004},
      {{"coro_alloc:30", "<module>:37"}, 40, 5005},
  };
  for (const Expect& e : expects) {
    json s = siteWithFrames(sites, "shapes.py", e.frames);
    ASSERT_FALSE(s.is_null()) << e.frames[0] << "\n" << describePy(sites, "shapes.py");
    EXPECT_EQ(s["count"], e.count) << e.frames[0];
    EXPECT_EQ(s["bytes"], e.count * e.size) << e.frames[0];
  }
}

TEST(PythonFrames, MultiprocessingForkChildAndParentLines) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("forked.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "200", "--by-process"});
  const json& sites = report["leaks"]["sites"];
  json child = siteWithFrames(sites, "forked.py", {"child_work:8", "<module>:17"});
  json parent = siteWithFrames(sites, "forked.py", {"parent_work:12", "<module>:19"});
  ASSERT_FALSE(child.is_null()) << describePy(sites, "forked.py");
  ASSERT_FALSE(parent.is_null()) << describePy(sites, "forked.py");
  EXPECT_EQ(child["bytes"], 100 * 6002);
  EXPECT_EQ(parent["bytes"], 100 * 6003);
  EXPECT_NE(child["pid"], parent["pid"]);
}

TEST(PythonFrames, UnknownVersionSaysSoOnceAndShowsNativeFrames) {
  const std::string old = pyenv("3.9.18");
  if (!executable(old)) GTEST_SKIP() << "no pyenv 3.9.18 on this machine";
  Recorded rec = record(old, {"-c", "x = [bytearray(3000) for _ in range(10)]"});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const std::string note = "Python 3.9: its frame layout is not known to memledger";
  size_t at = rec.program.err.find(note);
  ASSERT_NE(at, std::string::npos) << rec.program.err;
  EXPECT_EQ(rec.program.err.find(note, at + 1), std::string::npos) << rec.program.err;
  json report = reportJson(rec.db);
  EXPECT_GT(report["totals"]["allocations"].get<int64_t>(), 0);
}

TEST(PythonFrames, NumpyPeakNamesThePythonLinesWithNumpyFramesInside) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  if (run({"/usr/bin/python3", "-c", "import numpy"}).status != 0) GTEST_SKIP() << "no python3-numpy";
  Recorded rec = record("/usr/bin/python3", {script("numpy_peak.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "10"});
  const json& sites = report["peak"]["sites"];
  json ones = siteWithFrames(sites, "numpy_peak.py", {"build:5", "<module>:9"});
  json twice = siteWithFrames(sites, "numpy_peak.py", {"build:6", "<module>:9"});
  ASSERT_FALSE(ones.is_null()) << describePy(sites, "numpy_peak.py");
  ASSERT_FALSE(twice.is_null()) << describePy(sites, "numpy_peak.py");
  for (const json* s : {&ones, &twice}) {
    EXPECT_EQ((*s)["bytes"], 80000000);
    // numpy's own native frames come first (innermost), shown by module and offset when stripped.
    const json& inner = (*s)["stack"][0];
    ASSERT_TRUE(inner["module"].is_string());
    EXPECT_NE(inner["module"].get<std::string>().find("_multiarray_umath"), std::string::npos) << inner.dump();
  }
}

// The PyTorch CPU MLP of samples/python/torch_peak.py (Debian's python3-torch): its training loop
// holds three 64 MiB tensors at the heap peak, well above what `import torch` left. Peak site #1
// (and #2, #3) is one of them, one block of exactly 64 MiB, named by the script's forward line
// (23: the ReLU's output) or backward line (24: the gradients), with libtorch's frames inside.
TEST(PythonFrames, TorchMlpPeakNamesTheForwardOrBackwardLine) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  RunResult probe = run({"/usr/bin/python3", "-c", "import torch"});
  if (probe.status != 0) GTEST_SKIP() << "/usr/bin/python3 cannot import torch (Debian's python3-torch is not installed)";
  Recorded rec = record("/usr/bin/python3", {script("torch_peak.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "5"});
  const json& sites = report["peak"]["sites"];
  ASSERT_GE(sites.size(), 3u) << describeSites(sites);
  constexpr int64_t k64MiB = int64_t{64} << 20;
  EXPECT_GE(report["peak"]["bytes"].get<int64_t>(), 3 * k64MiB);
  std::set<int64_t> lines;
  for (size_t i = 0; i < 3; ++i) {
    const json& s = sites[i];
    EXPECT_EQ(s["bytes"], k64MiB) << i << "\n" << describeSites(sites);
    EXPECT_EQ(s["count"], 1) << i;
    // The script's frame, and libtorch's native frames inside it (innermost first).
    int scriptAt = -1, torchAt = -1;
    const json& st = s["stack"];
    for (size_t f = 0; f < st.size(); ++f) {
      if (scriptAt < 0 && st[f]["file"].is_string() && endsWith(st[f]["file"].get<std::string>(), "/samples/python/torch_peak.py")) {
        scriptAt = static_cast<int>(f);
        lines.insert(st[f]["line"].get<int64_t>());
      }
      if (torchAt < 0 && st[f]["module"].is_string() && st[f]["module"].get<std::string>().find("libtorch_cpu") != std::string::npos)
        torchAt = static_cast<int>(f);
    }
    ASSERT_GE(scriptAt, 0) << i << "\n" << st.dump().substr(0, 1500);
    EXPECT_GE(torchAt, 0) << i;
    EXPECT_LT(torchAt, scriptAt) << i;
  }
  for (int64_t line : lines) EXPECT_TRUE(line == 23 || line == 24) << line;
  EXPECT_EQ(lines.size(), 2u) << "the forward line and the backward line both hold a 64 MiB tensor at the peak";
}

// A return address in the evaluation loop's cold part (GCC's _PyEval_EvalFrameDefault.cold, no
// dynamic symbol covers it; python_frames.cpp, findColdParts) is an evaluation frame like the
// others: the stack keeps the native frames on both sides of the Python ones. Without that the
// merge fell back to the Python frames alone (no _PyErr_Format inside, no Py_RunMain outside).
TEST(PythonFrames, ErrorPathInTheEvaluationLoopsColdPartKeepsEveryFrame) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("error_path.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "50"});
  const json& sites = report["leaks"]["sites"];
  json s = siteWithFrames(sites, "error_path.py", {"call_with_star:16", "<module>:20"});
  ASSERT_FALSE(s.is_null()) << describePy(sites, "error_path.py");
  EXPECT_EQ(s["count"], 200);
  EXPECT_EQ(s["bytes"], 200 * 713);  // sys.getsizeof of each message under Debian's 3.11
  // In order: the message's allocation inside _PyErr_Format, the Python frames in place of the
  // evaluation frame that called it from the cold part, then the interpreter's main outside.
  auto indexOf = [&](std::string_view name) {
    const json& st = s["stack"];
    for (size_t i = 0; i < st.size(); ++i)
      if (st[i].contains("function") && st[i]["function"].is_string() && st[i]["function"] == name)
        return static_cast<int>(i);
    return -1;
  };
  const std::string stack = s["stack"].dump().substr(0, 1500);
  int format = indexOf("_PyErr_Format"), py = indexOf("call_with_star"), module = indexOf("<module>");
  int main = indexOf("Py_RunMain");
  ASSERT_GE(format, 0) << stack;
  EXPECT_EQ(py, format + 1) << stack;
  EXPECT_EQ(module, py + 1) << stack;
  EXPECT_GT(main, module) << stack;
  EXPECT_TRUE(stackHas(s["stack"], "PyUnicode_FromFormatV")) << stack;
}

// `python3 -m module` started by a shell, and a `#!` script: each a Python image of its own.
TEST(PythonFrames, ModuleRunByAShellAndShebangScript) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::vector<std::string> frames = {"py_leaker:7", "<module>:9"};
  {
    Recorded rec = record("/bin/sh", {"-c", "cd '" + sourceDir() + "/samples/python' && /usr/bin/python3 -m leaky"});
    ASSERT_EQ(rec.program.status, 0) << rec.program.err;
    json report = reportJson(rec.db, {"--top", "20"});
    json s = siteWithFrames(report["leaks"]["sites"], "leaky.py", frames);
    ASSERT_FALSE(s.is_null()) << describePy(report["leaks"]["sites"], "leaky.py");
    EXPECT_EQ(s["bytes"], 20000 * 4097);
  }
  {
    TempDir dir;
    const std::string path = dir.file("leaky_shebang");
    {
      std::ofstream out(path);
      out << "#!/usr/bin/python3\n" << fileBytes(script("leaky.py"));
    }
    ASSERT_EQ(chmod(path.c_str(), 0755), 0);
    Recorded rec = record(path);
    ASSERT_EQ(rec.program.status, 0) << rec.program.err;
    json report = reportJson(rec.db, {"--top", "20"});
    // One line more at the top: the same code, lines 8 and 10 of this file.
    bool found = false;
    for (const auto& s : report["leaks"]["sites"]) {
      std::vector<std::string> fr;
      for (const auto& f : s["stack"])
        if (f["file"].is_string() && f["file"].get<std::string>() == path)
          fr.push_back(f["function"].get<std::string>() + ":" + std::to_string(f["line"].get<int64_t>()));
      if (fr == std::vector<std::string>{"py_leaker:8", "<module>:10"} && s["bytes"] == 20000 * 4097) found = true;
    }
    EXPECT_TRUE(found) << describeSites(report["leaks"]["sites"]);
  }
}

// Suggestions speak Python to a Python site (analyzer/suggestions.cpp, pythonSiteFrame): the leak
// and the peak of leaky.py are py_leaker's list of bytearrays, so the advice names py_leaker's
// line and says how to let go of Python objects, not how to free C memory. The same script
// recorded with --no-python has no Python frame, and keeps the native advice.
namespace {
json suggestionAt(const json& report, const std::string& kind, const std::string& prefix) {
  for (const auto& s : report.value("suggestions", json::array()))
    if (s.value("kind", std::string()) == kind && s.value("message", std::string()).rfind(prefix, 0) == 0) return s;
  return json();
}
}  // namespace

TEST(PythonFrames, SuggestionsSpeakPythonToAPythonSite) {
  if (!executable("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded rec = record("/usr/bin/python3", {script("leaky.py")});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db);
  const std::string all = report.value("suggestions", json::array()).dump().substr(0, 1500);
  json leak = suggestionAt(report, "fix_leak", "`py_leaker` (leaky.py:7) made 20,000 blocks (78.1 MiB)");
  ASSERT_FALSE(leak.is_null()) << all;
  const std::string lm = leak["message"].get<std::string>();
  EXPECT_NE(lm.find("still referenced when the program's code finished"), std::string::npos) << lm;
  EXPECT_NE(lm.find("`del` it"), std::string::npos) << lm;
  EXPECT_NE(lm.find("functools.lru_cache(maxsize=N)"), std::string::npos) << lm;
  EXPECT_EQ(lm.find("std::unique_ptr"), std::string::npos) << lm;
  EXPECT_EQ(leak["evidence"]["leak_count"], 20000);
  EXPECT_EQ(leak["evidence"]["leak_bytes"], 20000 * 4097);
  json peak = suggestionAt(report, "free_earlier", "`py_leaker` (leaky.py:7) held 78.1 MiB at the heap peak");
  ASSERT_FALSE(peak.is_null()) << all;
  const std::string pm = peak["message"].get<std::string>();
  EXPECT_NE(pm.find("drop the references to it (`del`"), std::string::npos) << pm;
  EXPECT_NE(pm.find("a generator instead of a list"), std::string::npos) << pm;
  EXPECT_EQ(pm.find("free it as soon"), std::string::npos) << pm;
  EXPECT_EQ(peak["evidence"]["site_peak_bytes"], 20000 * 4097);
  // 20,000 bytearrays of 4 KiB alive at once: one buffer would save their headers, about 1%.
  EXPECT_TRUE(suggestionAt(report, "object_pool", "").is_null()) << all;

  Recorded native;
  native.dir = std::make_shared<TempDir>();
  native.db = native.dir->file("x.db");
  native.program = run({memledgerBinary(), "record", "--no-python", "-o", native.db, "--", "/usr/bin/python3", script("leaky.py")});
  ASSERT_EQ(native.program.status, 0) << native.program.err;
  json nreport = reportJson(native.db);
  // Debian's python3.11 has no symbol for _PyObject_Malloc: the site is known by its numbers.
  json nleak;
  for (const auto& s : nreport.value("suggestions", json::array()))
    if (s.value("kind", std::string()) == "fix_leak" && s["evidence"].value("leak_count", int64_t{0}) == 20000 &&
        s["evidence"].value("leak_bytes", int64_t{0}) == 20000 * 4097)
      nleak = s;
  ASSERT_FALSE(nleak.is_null()) << nreport.value("suggestions", json::array()).dump().substr(0, 1500);
  EXPECT_EQ(nleak["message"].get<std::string>().find("leaky.py"), std::string::npos) << nleak["message"];
  EXPECT_NE(nleak["message"].get<std::string>().find("std::unique_ptr"), std::string::npos) << nleak["message"];
}
