// Python sites (analyzer/python_sites.h): which frame names a site, and which stacks of a CPython
// process are the interpreter's own. Stacks are written as the recorder symbolizes Debian's
// python3.11 (static functions without a symbol: module and offset only).
#include <gtest/gtest.h>

#include "analyzer/python_sites.h"
#include "analyzer/suppressions.h"

using namespace memledger::analyzer;

namespace {

const char* kExe = "/usr/bin/python3.11";

Frame native(const char* function, const char* module = kExe, int64_t offset = 0x1000) {
  Frame f;
  if (function) f.function = function;
  f.module = module;
  f.offset = offset;
  return f;
}

Frame python(const char* function, const char* file, int64_t line) {
  Frame f;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

const Stack kStartupTail = {native("Py_InitializeFromConfig"), native(nullptr), native("Py_BytesMain"),
                            native("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6"), native("_start")};

Stack with(Stack inner, const Stack& outer) {
  for (const Frame& f : outer) inner.push_back(f);
  return inner;
}

}  // namespace

TEST(PythonSites, InterpreterModules) {
  EXPECT_TRUE(isInterpreterModule("/usr/bin/python3.11"));
  EXPECT_TRUE(isInterpreterModule("/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0"));
  EXPECT_TRUE(isInterpreterModule("python3"));
  EXPECT_FALSE(isInterpreterModule("/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.so"));
  EXPECT_FALSE(isInterpreterModule("/opt/lib/python-helper.so"));
}

TEST(PythonSites, APythonSiteIsNamedByItsPythonFrameFrozenOnesToo) {
  Stack s = {native(nullptr), native("PyByteArray_Resize"), python("py_leaker", "/w/leaky.py", 7),
             python("<module>", "/w/leaky.py", 9)};
  ASSERT_NE(pythonSiteFrame(s), nullptr);
  EXPECT_EQ(*pythonSiteFrame(s)->function, "py_leaker");
  Stack frozen = {native(nullptr), python("<module>", "<frozen os>", 96)};
  ASSERT_NE(pythonSiteFrame(frozen), nullptr);
  EXPECT_EQ(*pythonSiteFrame(frozen)->line, 96);
  // An extension's native code allocated: it names the site, not the Python line calling it.
  Stack numpy = {native(nullptr, "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.so"),
                 native("PyArray_NewFromDescr", "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.so"),
                 python("build", "/w/numpy_peak.py", 5)};
  EXPECT_EQ(pythonSiteFrame(numpy), nullptr);
  EXPECT_EQ(*siteFrame(numpy)->function, "PyArray_NewFromDescr");
  EXPECT_EQ(siteText(s), "py_leaker (leaky.py:7)");
}

TEST(PythonSites, TheInterpreterAllocatorsOwnMmapIsAllocatorInternal) {
  Stack arena = {native(nullptr, kExe, 0x62d099), native(nullptr), native("PyType_GenericAlloc"),
                 python("py_leaker", "/w/leaky.py", 7)};
  auto c = pythonRuntimeClass(arena, "mmap");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->origin, kOriginAllocator);
  EXPECT_FALSE(pythonRuntimeClass(arena, "malloc"));  // the script's bytearray buffers
  // An extension's own mmap (the mmap module, numpy) is not the interpreter's allocator.
  Stack ext = {native(nullptr, "/usr/lib/python3.11/lib-dynload/mmap.cpython-311-x86_64-linux-gnu.so"),
               native("_PyObject_MakeTpCall"), python("f", "/w/m.py", 3)};
  EXPECT_FALSE(pythonRuntimeClass(ext, "mmap"));
}

TEST(PythonSites, StartUpAndCodeWithoutPythonRunningAreRuntime) {
  auto startup = pythonRuntimeClass(with({native(nullptr), native("PyDict_SetDefault")}, kStartupTail), "malloc");
  ASSERT_TRUE(startup);
  EXPECT_EQ(startup->origin, kOriginRuntime);
  EXPECT_NE(startup->reason.find("start-up"), std::string::npos);
  // site's imports run Python code under Py_InitializeFromConfig: still the interpreter's start-up.
  EXPECT_TRUE(pythonRuntimeClass(with({native(nullptr), python("<module>", "<frozen os>", 96)}, kStartupTail), "malloc"));
  // Finalization: the interpreter's C code alone, no Python frame, no evaluation loop.
  Stack fini = {native(nullptr), native("PyDict_Copy"), native("Py_FinalizeEx"), native("Py_RunMain"),
                native("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6")};
  auto f = pythonRuntimeClass(fini, "malloc");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->origin, kOriginRuntime);
}

TEST(PythonSites, TheProgramsCodeIsNeverTheRuntimes) {
  // An atexit handler runs under Py_FinalizeEx, with its Python frames: the program's.
  Stack atexit = {native(nullptr), python("save", "/w/app.py", 12), native("Py_FinalizeEx"), native("Py_RunMain")};
  EXPECT_FALSE(pythonRuntimeClass(atexit, "malloc"));
  // Recorded with --no-python: the program's code shows as the evaluation loop only.
  Stack noPython = {native(nullptr), native("PyByteArray_Resize"), native("_PyEval_EvalFrameDefault"),
                    native("PyEval_EvalCode"), native("Py_RunMain")};
  EXPECT_FALSE(pythonRuntimeClass(noPython, "malloc"));
  // An extension's native code on the stack.
  Stack ext = {native("malloc_wrapper", "/opt/lib/libfoo.so"), native(nullptr), native("Py_RunMain")};
  EXPECT_FALSE(pythonRuntimeClass(ext, "malloc"));
  EXPECT_FALSE(pythonRuntimeClass({}, "malloc"));
}

// check's built-in list applies the same rules (rule entries, reported by what they cover), and
// --no-default-suppressions (no addDefaults) drops them.
TEST(PythonSites, CheckBuiltInsApplyTheRules) {
  SuppressionList defaults;
  defaults.addDefaults();
  Suppression* s = defaults.match(with({native(nullptr)}, kStartupTail), "malloc");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->rule);
  EXPECT_NE(s->pattern.find("start-up"), std::string::npos);
  Suppression* a = defaults.match({native(nullptr), python("py_leaker", "/w/leaky.py", 7)}, "mmap");
  ASSERT_NE(a, nullptr);
  EXPECT_NE(a->pattern.find("obmalloc"), std::string::npos);
  EXPECT_EQ(defaults.match({native(nullptr), python("py_leaker", "/w/leaky.py", 7)}, "malloc"), nullptr);
  SuppressionList none;
  EXPECT_EQ(none.match(with({native(nullptr)}, kStartupTail), "malloc"), nullptr);
  // A user's rule names a Python function or a .py file like a native one.
  SuppressionList user;
  user.addText("leak:py_leaker\n", "u.supp");
  EXPECT_NE(user.match({native(nullptr), python("py_leaker", "/w/leaky.py", 7)}), nullptr);
  SuppressionList byFile;
  byFile.addText("leak:leaky.py$\n", "f.supp");
  EXPECT_NE(byFile.match({native(nullptr), python("py_leaker", "/w/leaky.py", 7)}), nullptr);
}

// A .pth file's imports run under site at start-up; a deep one loses Py_InitializeFromConfig to
// the 128-frame cut, not site's frames.
TEST(PythonSites, SiteCodeIsStartUpEvenWhenTheStackIsCut) {
  Stack s = {native(nullptr), python("_compile_bytecode", "<frozen importlib._bootstrap_external>", 729),
             python("<module>", "/x/pathlib.py", 1), python("addpackage", "<frozen site>", 186)};
  auto c = pythonRuntimeClass(s, "malloc");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->origin, kOriginRuntime);
  Stack old = {native(nullptr), python("addsitedir", "/usr/lib/python3.10/site.py", 208)};
  EXPECT_TRUE(pythonRuntimeClass(old, "malloc"));
}

// What an import makes is module state, kept until finalization: the import system's frames.
TEST(PythonSites, ImportTimeModuleStateIsRuntime) {
  Stack imported = {native(nullptr), native("PyDict_SetDefault"), python("<module>", "/usr/lib/python3/dist-packages/numpy/core/numeric.py", 10),
                    python("_find_and_load", "<frozen importlib._bootstrap>", 1178),
                    python("<module>", "/w/numpy_peak.py", 2)};
  auto c = pythonRuntimeClass(imported, "malloc");
  ASSERT_TRUE(c);
  EXPECT_NE(c->reason.find("imported"), std::string::npos);
  // --no-python: the C entry of the import statement.
  EXPECT_TRUE(pythonRuntimeClass({native(nullptr), native("PyImport_ImportModuleLevelObject"),
                                  native("_PyEval_EvalFrameDefault")},
                                 "malloc"));
  // After the import, the module's functions called by the program are the program's.
  Stack later = {native(nullptr), python("build", "/w/numpy_peak.py", 5), python("<module>", "/w/numpy_peak.py", 9)};
  EXPECT_FALSE(pythonRuntimeClass(later, "malloc"));
}

// One line reached from several callers reads the same in a one-line list: the first caller
// that differs tells them apart; a text no other site has is left alone.
TEST(SiteTexts, SameLineToldApartByTheFirstDifferentCaller) {
  Stack one = {python("ramp", "/w/three_phases.c", 24), python("phase_one", "/w/three_phases.c", 30),
               python("main", "/w/three_phases.c", 50)};
  Stack two = {python("ramp", "/w/three_phases.c", 24), python("phase_two", "/w/three_phases.c", 40),
               python("main", "/w/three_phases.c", 51)};
  Stack again = {python("ramp", "/w/three_phases.c", 24), python("phase_two", "/w/three_phases.c", 40),
                 python("main", "/w/three_phases.c", 52)};
  Stack other = {python("fill", "/w/three_phases.c", 10), python("main", "/w/three_phases.c", 53)};
  EXPECT_EQ(distinctSiteTexts({&one, &two, &other}),
            (std::vector<std::string>{"ramp (three_phases.c:24) <- phase_one (three_phases.c:30)",
                                      "ramp (three_phases.c:24) <- phase_two (three_phases.c:40)",
                                      "fill (three_phases.c:10)"}));
  // Told apart further out when the first callers agree.
  EXPECT_EQ(distinctSiteTexts({&two, &again})[1], "ramp (three_phases.c:24) <- main (three_phases.c:52)");
  EXPECT_TRUE(distinctSiteTexts({}).empty());
}

// A one-line list adds up sites whose frames read the same (one line called through several
// return addresses), keeps kinds apart, and orders by the list's metric.
TEST(SiteTexts, SitesThatReadTheSameAreOneLine) {
  auto site = [](int64_t id, const Stack& stack, const char* kind, int64_t count, int64_t bytes) {
    SiteAmount s;
    s.stack_id = id;
    s.stack = stack;
    s.kind = kind;
    s.count = count;
    s.bytes = bytes;
    return s;
  };
  Stack ramp = {python("ramp", "/w/three_phases.c", 24), python("main", "/w/three_phases.c", 44)};
  Stack fill = {python("fill", "/w/three_phases.c", 10), python("main", "/w/three_phases.c", 45)};
  std::vector<SiteAmount> list = {site(1, ramp, "malloc", 1, 300), site(2, fill, "malloc", 5, 200),
                                  site(3, ramp, "malloc", 1, 100), site(4, ramp, "new", 1, 50), site(5, ramp, "malloc", 1, 10)};
  std::vector<SiteAmount> byBytes = sitesBySameFrames(list, 5, false);
  ASSERT_EQ(byBytes.size(), 3u);
  EXPECT_EQ(std::make_tuple(byBytes[0].stack_id, byBytes[0].count, byBytes[0].bytes), std::make_tuple(int64_t{1}, int64_t{3}, int64_t{410}));
  EXPECT_EQ(byBytes[1].stack_id, 2);
  EXPECT_EQ(std::make_tuple(byBytes[2].kind, byBytes[2].bytes), std::make_tuple(std::string("new"), int64_t{50}));
  std::vector<SiteAmount> byCount = sitesBySameFrames(list, 1, true);
  ASSERT_EQ(byCount.size(), 1u);
  EXPECT_EQ(byCount[0].stack_id, 2);
}
