// Foreign allocators and allocator extension APIs (samples/rel_allocapi.c): glibc's
// malloc_usable_size/malloc_trim/mallinfo2, the same program linked against jemalloc and tcmalloc,
// and a program that already runs with an LD_PRELOAD library of its own (samples/librel_shim.c).
#include <gtest/gtest.h>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::record;
using memledger::test::reportJson;
using memledger::test::run;
using memledger::test::sourceDir;

const std::string kAllocApi = relSample("rel_allocapi");

// The program's output without its LD_PRELOAD line (which memledger changes by design).
std::string withoutPreloadLine(const std::string& out) {
  std::string kept, line;
  std::istringstream in(out);
  while (std::getline(in, line))
    if (line.rfind("LD_PRELOAD=", 0) != 0) kept += line + "\n";
  return kept;
}

std::string preloadLine(const std::string& out) {
  auto at = out.find("LD_PRELOAD=");
  if (at == std::string::npos) return "";
  auto end = out.find('\n', at);
  return out.substr(at + 11, end - at - 11);
}

// Records `program` and checks its three exact leaks and its unchanged output.
void expectExactAllocApi(const std::string& program, const memledger::test::RunOptions& options = {}) {
  auto direct = run({program}, options);
  ASSERT_EQ(direct.status, 0) << direct.out << direct.err;
  auto rec = record(program, {}, options);
  EXPECT_EQ(rec.program.status, 0) << rec.program.out << rec.program.err;
  EXPECT_EQ(withoutPreloadLine(rec.program.out), withoutPreloadLine(direct.out));
  EXPECT_NE(rec.program.out.find("allocapi ok\n"), std::string::npos) << rec.program.out;

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "usable_leak"), (Amount{2, 2 * 1111, 1})) << leakDump(report);
  EXPECT_EQ(leaksAt(report, "calloc_leak"), (Amount{1, 2222, 1})) << leakDump(report);
  // The realloc chain and the aligned blocks were all freed.
  EXPECT_EQ(leaksAt(report, "temporaries"), (Amount{})) << leakDump(report);
}

TEST(ReliabilityAllocators, GlibcExtensionApis) { expectExactAllocApi(kAllocApi); }

// Builds samples/rel_allocapi.c linked against `lib` into `dir`; "" when the library is missing.
std::string buildAgainst(const memledger::test::TempDir& dir, const std::string& lib) {
  if (!std::filesystem::exists("/usr/lib/x86_64-linux-gnu/lib" + lib + ".so")) return "";
  std::string out = dir.file("rel_allocapi_" + lib);
  auto cc = run({"cc", "-O0", "-g", "-fno-omit-frame-pointer", "-o", out, sourceDir() + "/samples/rel_allocapi.c",
                 "-l" + lib});
  if (cc.status != 0) throw std::runtime_error("cc failed: " + cc.err);
  return out;
}

TEST(ReliabilityAllocators, LinkedAgainstJemalloc) {
  memledger::test::TempDir dir;
  std::string program = buildAgainst(dir, "jemalloc");
  if (program.empty()) GTEST_SKIP() << "libjemalloc-dev is not installed (scripts/deps.sh installs it)";
  expectExactAllocApi(program);
}

TEST(ReliabilityAllocators, LinkedAgainstTcmalloc) {
  memledger::test::TempDir dir;
  std::string program = buildAgainst(dir, "tcmalloc");
  if (program.empty()) GTEST_SKIP() << "libgoogle-perftools-dev is not installed (scripts/deps.sh installs it)";
  expectExactAllocApi(program);
}

TEST(ReliabilityAllocators, ProgramWithItsOwnPreloadLibrary) {
  std::string shim = relSample("librel_shim.so");
  memledger::test::RunOptions options;
  options.env = {{"LD_PRELOAD", shim}};
  expectExactAllocApi(kAllocApi, options);

  auto rec = record(kAllocApi, {}, options);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  // Their library still works...
  EXPECT_NE(rec.program.out.find("shim answer 42\n"), std::string::npos) << rec.program.out;
  // ...ours comes first, theirs is still there.
  std::string preload = preloadLine(rec.program.out);
  auto sep = preload.find_first_of(": ");
  std::string first = preload.substr(0, sep);
  EXPECT_TRUE(first.size() >= 23 && first.compare(first.size() - 23, 23, "libmemledger_preload.so") == 0)
      << "LD_PRELOAD=" << preload;
  EXPECT_NE(preload.find(shim), std::string::npos) << "LD_PRELOAD=" << preload;
  // The shim allocated in its constructor, possibly before memledger's own constructor ran.
  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "shim_leak"), (Amount{1, 4242, 1})) << leakDump(report);
}

}  // namespace
