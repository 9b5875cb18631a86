// Python frames in every output (docs/python.md): folded, pprof, chrome-trace, check's text,
// JUnit and SARIF, suppressions by Python function and by file, and `memledger diff` of two runs
// name a Python site by its function, .py file and line, and count it by the Python leak rule
// (live when the interpreter started finalizing). Real scripts from samples/python under
// Debian's /usr/bin/python3; leaky.py keeps 20,000 bytearray(4096) (4097 bytes each) at
// py_leaker (leaky.py:7), called at line 9.
#include <gtest/gtest.h>

#include <unistd.h>

#include "harness.h"
#include "analyzer/export_formats.h"
#include "profile.pb.h"

using namespace memledger::test;

namespace {

constexpr int64_t kLeakyBytes = 20000 * 4097;

std::string script(const std::string& name) { return sourceDir() + "/samples/python/" + name; }

bool haveDebianPython() { return access("/usr/bin/python3", X_OK) == 0; }

RunResult cli(const std::vector<std::string>& args, const RunOptions& options = {}) {
  std::vector<std::string> argv = {memledgerBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

const Recorded& leaky() { return recordOnce("/usr/bin/python3", {script("leaky.py")}); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

// Folded stacks: outermost first, Python frames as "function (file.py:line)"; the leaked metric
// is the Python rule's (78 MiB at finalization, not the 1.4 MiB left at exit).
TEST(PythonReports, FoldedNamesPythonFramesWithFileAndLine) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  const Recorded& rec = leaky();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  RunResult out = cli({"export", rec.db, "--format", "folded", "--metric", "leaked"});
  ASSERT_EQ(out.status, 0) << out.err;
  // The bytearrays' buffers: one stack, by the Python rule's count; the list holding them (its
  // item array, 168.9 KiB) and an obmalloc arena are other stacks at the same line.
  int buffers = 0;
  for (const std::string& l : lines(out.out)) {
    // A native frame without a symbol reads as its module and offset, never "??".
    EXPECT_EQ(l.find("??"), std::string::npos) << l;
    if (l.find("<module> (leaky.py:9);py_leaker (leaky.py:7);") == std::string::npos) continue;
    if (l.find(";PyByteArray_Resize;[python3.11+0x") == std::string::npos) continue;
    ++buffers;
    EXPECT_EQ(std::stoll(l.substr(l.rfind(' ') + 1)), kLeakyBytes) << l;
  }
  EXPECT_EQ(buffers, 1) << out.out.substr(0, 3000);
}

// pprof: the Python frames are Functions named by their qualified name in their .py file, with
// the line in each Location's Line; inuse is the Python rule's leak; no Function is "??".
TEST(PythonReports, PprofCarriesPythonFunctionFileAndLine) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  const Recorded& rec = leaky();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  TempDir dir;
  RunResult out = cli({"export", rec.db, "--format", "pprof", "-o", dir.file("p.pb.gz")});
  ASSERT_EQ(out.status, 0) << out.err;
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(memledger::analyzer::gunzipBytes(fileBytes(dir.file("p.pb.gz")))));
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  std::map<uint64_t, const perftools::profiles::Function*> fns;
  for (const auto& f : p.function()) {
    fns[f.id()] = &f;
    EXPECT_NE(str(f.name()), "??") << str(f.filename());
  }
  std::map<uint64_t, const perftools::profiles::Location*> locs;
  for (const auto& l : p.location()) locs[l.id()] = &l;
  bool found = false;
  for (const auto& s : p.sample()) {
    if (s.value(3) != kLeakyBytes) continue;  // inuse_space
    std::vector<std::string> py;  // "name file:line" of the Python lines, innermost first
    int bare = 0;                 // native frames without a symbol: "python3.11+0x4fb51c" in its file
    for (uint64_t id : s.location_id())
      for (const auto& line : locs.at(id)->line()) {
        const auto* f = fns.at(line.function_id());
        std::string file = str(f->filename());
        if (str(f->name()).starts_with("python3.11+0x")) {
          ++bare;
          EXPECT_TRUE(file.ends_with("/python3.11")) << str(f->name()) << " in " << file;
        }
        if (file.size() > 3 && file.compare(file.size() - 3, 3, ".py") == 0)
          py.push_back(str(f->name()) + " " + file + ":" + std::to_string(line.line()));
      }
    EXPECT_EQ(s.value(2), 20000);  // inuse_objects
    ASSERT_EQ(py.size(), 2u) << s.DebugString().substr(0, 400);
    EXPECT_EQ(py[0], "py_leaker " + script("leaky.py") + ":7");
    EXPECT_EQ(py[1], "<module> " + script("leaky.py") + ":9");
    // Debian's python3.11 has no symbol for its static functions (PyByteArray_Resize's callee).
    EXPECT_GE(bare, 1) << s.DebugString().substr(0, 400);
    found = true;
  }
  EXPECT_TRUE(found) << "no sample with inuse_space " << kLeakyBytes;
}

// chrome-trace: the heap peak instant and the phase name the sites as the report does.
TEST(PythonReports, ChromeTraceNamesThePythonSiteAtThePeak) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  const Recorded& rec = leaky();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  RunResult out = cli({"export", rec.db, "--format", "chrome-trace"});
  ASSERT_EQ(out.status, 0) << out.err;
  json trace = json::parse(out.out);
  bool peak = false, phase = false;
  for (const auto& e : trace["traceEvents"]) {
    const json& args = e.value("args", json::object());
    if (e["name"] == "heap peak" && args.contains("sites_at_report_peak")) {
      const json& top = args["sites_at_report_peak"][0];
      EXPECT_EQ(top["site"], "py_leaker (leaky.py:7)") << args.dump();
      EXPECT_EQ(top["bytes"], kLeakyBytes);
      peak = true;
    }
    if (e.value("cat", "") == "phase" && !args["top_sites"].empty()) {
      EXPECT_EQ(args["top_sites"][0]["site"], "py_leaker (leaky.py:7)") << args.dump();
      phase = true;
    }
  }
  EXPECT_TRUE(peak);
  EXPECT_TRUE(phase);
}

// check: counts the Python rule's leaks (the bytearrays live at finalization), names the site by
// its Python frames in the text, JUnit and SARIF (the .py file and line as its location), and
// leaves out the interpreter's own start-up blocks and arenas (built-in rules).
TEST(PythonReports, CheckNamesThePythonLeakInTextJunitAndSarif) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  const Recorded& rec = leaky();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  TempDir dir;
  RunResult out = cli({"check", rec.db, "--top", "100000", "--junit", dir.file("j.xml"), "--sarif", dir.file("s.sarif")});
  EXPECT_EQ(out.status, 1) << out.out << out.err;
  EXPECT_NE(out.out.find("#4 py_leaker (" + script("leaky.py") + ":7)"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("site 1: " + std::to_string(kLeakyBytes) + " B (78.1 MiB) in 20000 blocks"), std::string::npos)
      << out.out;
  EXPECT_NE(out.out.find("(Python: live when the interpreter started finalizing, in 1 process)"), std::string::npos)
      << out.out;
  EXPECT_NE(out.out.find("(rule) CPython's own start-up"), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("(rule) CPython's own mmap"), std::string::npos) << out.out;
  // Only the script's own sites remain: every one has a frame in leaky.py.
  size_t sites = 0;
  for (const std::string& l : lines(out.out)) sites += l.starts_with("  site ");
  EXPECT_LE(sites, 3u) << out.out;

  std::string junit = fileBytes(dir.file("j.xml"));
  EXPECT_NE(junit.find("py_leaker (" + script("leaky.py") + ":7)"), std::string::npos) << junit.substr(0, 3000);

  json sarif = json::parse(fileBytes(dir.file("s.sarif")));
  const json& results = sarif["runs"][0]["results"];
  bool found = false;
  for (const auto& r : results) {
    std::string text = r["message"]["text"];
    if (!text.starts_with(std::to_string(kLeakyBytes) + " bytes in 20000 blocks")) continue;
    found = true;
    EXPECT_NE(text.find("from py_leaker (" + script("leaky.py") + ":7)"), std::string::npos) << text;
    const json& loc = r["locations"][0]["physicalLocation"];
    std::string uri = loc["artifactLocation"]["uri"];
    EXPECT_TRUE(uri.ends_with("samples/python/leaky.py")) << loc.dump();
    EXPECT_EQ(loc["region"]["startLine"], 7) << loc.dump();
    // Every frame has a name: a native one without a symbol by module and offset.
    for (const auto& f : r["stacks"][0]["frames"])
      EXPECT_NE(f["location"]["logicalLocations"][0]["fullyQualifiedName"], "??") << f.dump();
  }
  EXPECT_TRUE(found) << results.dump().substr(0, 2000);
}

// Suppressions by Python function and by .py file make the check pass; without them it fails.
TEST(PythonReports, SuppressionByPythonFunctionOrFileMakesCheckPass) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  const Recorded& rec = leaky();
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  TempDir dir;
  EXPECT_EQ(cli({"check", rec.db}).status, 1);
  for (const std::string pattern : {"py_leaker", "leaky.py"}) {
    const std::string supp = dir.file(pattern + ".supp");
    std::ofstream(supp) << "# the script's list of bytearrays, kept on purpose\nleak:" << pattern << "\n";
    RunResult out = cli({"check", rec.db, "--suppressions", supp});
    EXPECT_EQ(out.status, 0) << pattern << "\n" << out.out << out.err;
    EXPECT_NE(out.out.find("leak:" + pattern + " (" + supp + ":2): 20"), std::string::npos) << out.out;
  }
  // A pattern that names no frame of the script's suppresses nothing of it.
  const std::string other = dir.file("other.supp");
  std::ofstream(other) << "leak:not_a_function_here\n";
  EXPECT_EQ(cli({"check", rec.db, "--suppressions", other}).status, 1);
}

// memledger diff of two runs of a script whose leak grows with its argument names the Python
// line whose leak grew, with the exact counts (the Python rule's, at finalization).
TEST(PythonReports, DiffOfTwoRunsNamesThePythonLineThatGrew) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  Recorded a = record("/usr/bin/python3", {script("grow.py"), "1000"});
  Recorded b = record("/usr/bin/python3", {script("grow.py"), "3000"});
  ASSERT_EQ(a.program.status, 0) << a.program.err;
  ASSERT_EQ(b.program.status, 0) << b.program.err;
  RunResult out = cli({"diff", a.db, b.db, "--json"});
  ASSERT_EQ(out.status, 0) << out.err;
  json d = json::parse(out.out);
  json grown;
  for (const auto& s : d["sites"])
    if (s["a"]["leak_count"] == 1000 && s["b"]["leak_count"] == 3000) grown = s;
  ASSERT_FALSE(grown.is_null()) << d["sites"].dump().substr(0, 3000);
  EXPECT_EQ(grown["status"], "changed");
  EXPECT_EQ(grown["delta"]["leak_bytes"], 2000 * 3001);
  bool line = false;
  for (const auto& f : grown["stack"])
    line = line || (f["function"] == "keep" && f["line"] == 9 && f["file"].is_string() &&
                    f["file"].get<std::string>().ends_with("samples/python/grow.py"));
  EXPECT_TRUE(line) << grown["stack"].dump().substr(0, 1500);
  RunResult text = cli({"diff", a.db, b.db});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("leaked blocks: 1000 -> 3000 (+2000)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("keep (" + script("grow.py") + ":9)"), std::string::npos) << text.out;
}

// A code object whose line table is far longer than one record holds (wire.h PyCodeTable): the
// line of an allocation past the first 60,000 bytes of the table is still known.
TEST(PythonReports, LongLineTableKeepsLinesPastTheFirstRecord) {
  if (!haveDebianPython()) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir;
  const std::string path = dir.file("long_function.py");
  const int body = 30000;  // lines of `x += 1`: a line table of some 200 KB
  {
    std::ofstream out(path);
    out << "KEPT = []\n\ndef big():\n    x = 0\n";
    for (int i = 0; i < body; ++i) out << "    x += 1\n";
    out << "    for _ in range(30):\n        KEPT.append(bytearray(4321))\n\nbig()\n";
  }
  const int64_t line = 4 + body + 2, call = line + 2;
  RunResult size = run({"/usr/bin/python3", "-c",
                        "import sys; src = open(sys.argv[1]).read(); g = {}; exec(compile(src, 'f', 'exec'), g); "
                        "print(len(g['big'].__code__.co_linetable))",
                        path});
  ASSERT_EQ(size.status, 0) << size.err;
  ASSERT_GT(std::stoll(size.out), 120000) << "the line table is not long enough to test anything";
  Recorded rec = record("/usr/bin/python3", {path});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db, {"--top", "100000"});
  bool found = false;
  for (const auto& s : report["leaks"]["sites"]) {
    std::vector<std::string> py;
    for (const auto& f : s["stack"])
      if (f["file"].is_string() && f["file"] == path)
        py.push_back(f.value("function", "?") + ":" + std::to_string(f.value("line", int64_t{0})));
    if (py == std::vector<std::string>{"big:" + std::to_string(line), "<module>:" + std::to_string(call)}) {
      found = true;
      EXPECT_EQ(s["count"], 30);
      EXPECT_EQ(s["bytes"], 30 * 4322);
    }
  }
  EXPECT_TRUE(found) << describeSites(report["leaks"]["sites"]);
}
