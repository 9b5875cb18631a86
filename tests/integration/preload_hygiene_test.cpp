// The preload library leaves the traced program as it was: no library it did not ask for is
// mapped into it (the own unwinder reads .eh_frame in place; libunwind only on the first stack
// it cannot follow), its heap holds none of the library's memory (mallinfo2), and libraries
// loaded with RTLD_DEEPBIND are recorded too. Truth is valgrind's count of the same program
// (allocations, frees, bytes and blocks in use at exit, libc's freeres off so that what is live
// at exit stays live, as in a recording); skipped where valgrind is not installed.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

struct HeapCounts {
  int64_t allocs = -1, frees = -1, bytes = -1, inUseBytes = -1, inUseBlocks = -1;
};

std::ostream& operator<<(std::ostream& os, const HeapCounts& c) {
  return os << c.allocs << " allocs, " << c.frees << " frees, " << c.bytes << " bytes, in use "
            << c.inUseBytes << " bytes in " << c.inUseBlocks << " blocks";
}

bool haveValgrind() { return run({"valgrind", "--version"}).status == 0; }

int64_t number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  return std::stoll(digits);
}

// valgrind's summary of the heap (the malloc and new families) of argv.
HeapCounts valgrindCounts(const std::vector<std::string>& argv, const RunOptions& options = {}) {
  std::vector<std::string> cmd = {"valgrind", "--run-libc-freeres=no", "--run-cxx-freeres=no"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  RunResult r = run(cmd, options);
  HeapCounts c;
  std::smatch m;
  if (std::regex_search(r.err, m, std::regex("in use at exit: ([0-9,]+) bytes in ([0-9,]+) blocks"))) {
    c.inUseBytes = number(m[1]);
    c.inUseBlocks = number(m[2]);
  }
  if (std::regex_search(r.err, m,
                        std::regex("total heap usage: ([0-9,]+) allocs, ([0-9,]+) frees, ([0-9,]+) bytes"))) {
    c.allocs = number(m[1]);
    c.frees = number(m[2]);
    c.bytes = number(m[3]);
  }
  if (c.allocs < 0) ADD_FAILURE() << "no valgrind summary for " << joinArgs(argv) << ":\n" << r.err;
  return c;
}

// The same from a recording with a row per block (--no-fold), read with SQLite.
struct Counted {
  HeapCounts counts;
  Recorded rec;
};
Counted memledgerCounts(const std::vector<std::string>& argv, const RunOptions& options = {}) {
  Counted out;
  out.rec.dir = std::make_shared<TempDir>();
  out.rec.db = out.rec.dir->file("x.db");
  std::vector<std::string> cmd = {memledgerBinary(), "record", "--no-fold", "-o", out.rec.db, "--"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  out.rec.program = run(cmd, options);
  const std::string& db = out.rec.db;
  const char* heap = " FROM allocations WHERE kind IN ('malloc', 'new')";
  HeapCounts& c = out.counts;
  c.allocs = sqlInt(db, (std::string("SELECT count(*)") + heap).c_str());
  c.frees = sqlInt(db, (std::string("SELECT count(*)") + heap + " AND t_free IS NOT NULL").c_str());
  c.bytes = sqlInt(db, (std::string("SELECT total(size)") + heap).c_str());
  c.inUseBytes = sqlInt(db, (std::string("SELECT total(size)") + heap + " AND t_free IS NULL").c_str());
  c.inUseBlocks = sqlInt(db, (std::string("SELECT count(*)") + heap + " AND t_free IS NULL").c_str());
  return out;
}

void expectSame(const HeapCounts& mine, const HeapCounts& valgrind) {
  EXPECT_EQ(mine.allocs, valgrind.allocs) << "memledger: " << mine << "\nvalgrind:  " << valgrind;
  EXPECT_EQ(mine.frees, valgrind.frees) << "memledger: " << mine << "\nvalgrind:  " << valgrind;
  EXPECT_EQ(mine.bytes, valgrind.bytes) << "memledger: " << mine << "\nvalgrind:  " << valgrind;
  EXPECT_EQ(mine.inUseBytes, valgrind.inUseBytes) << "memledger: " << mine << "\nvalgrind:  " << valgrind;
  EXPECT_EQ(mine.inUseBlocks, valgrind.inUseBlocks) << "memledger: " << mine << "\nvalgrind:  " << valgrind;
}

// The shared objects mapped, by file name, from a /proc/PID/maps text.
std::set<std::string> mappedLibraries(const std::string& maps) {
  std::set<std::string> libs;
  std::istringstream in(maps);
  for (std::string line; std::getline(in, line);) {
    auto slash = line.rfind('/');
    if (slash == std::string::npos || line.find(".so", slash) == std::string::npos) continue;
    libs.insert(line.substr(slash + 1));
  }
  return libs;
}

// Sum of `field` over the sites of one kind whose stack has `name`.
int64_t kindSum(const json& sites, std::string_view name, const std::string& kind, const char* field) {
  int64_t sum = 0;
  for (const auto& site : sitesWith(sites, name))
    if (site.value("kind", std::string()) == kind) sum += site.value(field, int64_t{0});
  return sum;
}

const std::string kMapsScript = "import sys\nsys.stdout.write(open('/proc/self/maps').read())";

}  // namespace

TEST(PreloadHygiene, DeepboundLibraryIsRecordedLikeValgrindSeesIt) {
  if (!haveValgrind()) GTEST_SKIP() << "valgrind is not installed";
  const std::string program = sample("deepbind");
  Counted mine = memledgerCounts({program});
  ASSERT_EQ(mine.rec.program.status, 0) << mine.rec.program.err;
  EXPECT_EQ(mine.rec.program.out, "deepbind: done\n");
  expectSame(mine.counts, valgrindCounts({program}));

  // The library's own blocks: what deepbound_leak() keeps is the leak, churn leaves nothing
  // (its strdup, freed inside the library, was a 35-byte leak when the free went past the hooks).
  json report = reportJson(mine.rec.db);
  const json& sites = report["leaks"]["sites"];
  EXPECT_EQ(kindSum(sites, "deepbound_leak", "malloc", "bytes"), 1000 + 2000 + 35) << describeSites(sites);
  EXPECT_EQ(kindSum(sites, "deepbound_leak", "malloc", "count"), 3) << describeSites(sites);
  EXPECT_EQ(kindSum(sites, "deepbound_leak", "mmap", "bytes"), 65536) << describeSites(sites);  // its mmap too
  EXPECT_EQ(sumWith(sites, "deepbound_churn", "count"), 0) << describeSites(sites);
}

TEST(PreloadHygiene, DeepboundCxxLibrarysNewAndDeleteAreRecorded) {
  if (!haveValgrind()) GTEST_SKIP() << "valgrind is not installed";
  const std::string program = sample("deepbindxx");
  Counted mine = memledgerCounts({program});
  ASSERT_EQ(mine.rec.program.status, 0) << mine.rec.program.err;
  EXPECT_EQ(mine.rec.program.out, "deepbindxx: done\n");
  expectSame(mine.counts, valgrindCounts({program}));
  json report = reportJson(mine.rec.db);
  const json& sites = report["leaks"]["sites"];
  EXPECT_EQ(kindSum(sites, "deepboundxx_leak", "new", "bytes"), 123 + 256) << describeSites(sites);
  EXPECT_EQ(kindSum(sites, "deepboundxx_leak", "new", "count"), 2) << describeSites(sites);
  EXPECT_EQ(sumWith(sites, "deepboundxx_churn", "count"), 0) << describeSites(sites);
}

TEST(PreloadHygiene, DeepboundLibraryByBareNameIsFoundThroughTheCallersRunpath) {
  if (!haveValgrind()) GTEST_SKIP() << "valgrind is not installed";
  const std::string program = sample("deepbind");
  RunOptions options;
  options.unsetEnv = {"LD_LIBRARY_PATH"};
  // Found through deepbind's RUNPATH ($ORIGIN), which the preload library does not have: it
  // opens the library by the path the caller's search finds, so the loader keeps that path as the
  // name it was asked for instead of "libdeepbound.so" (the only difference, in the loader's own
  // name table).
  Counted mine = memledgerCounts({program, "bare"}, options);
  ASSERT_EQ(mine.rec.program.status, 0) << mine.rec.program.err;
  HeapCounts theirs = valgrindCounts({program, "bare"}, options);
  int64_t longerName = static_cast<int64_t>(sample("libdeepbound.so").size() - std::string("libdeepbound.so").size());
  HeapCounts expected = theirs;
  expected.bytes += longerName;
  expected.inUseBytes += longerName;
  expectSame(mine.counts, expected);
  EXPECT_EQ(kindSum(reportJson(mine.rec.db)["leaks"]["sites"], "deepbound_leak", "malloc", "bytes"), 3035);

  // Where this library's own search finds the same file (LD_LIBRARY_PATH), the bare name is
  // passed on unchanged and everything is equal.
  options.env = {{"LD_LIBRARY_PATH", binaryDir() + "/samples"}};
  Counted same = memledgerCounts({program, "bare"}, options);
  ASSERT_EQ(same.rec.program.status, 0) << same.rec.program.err;
  expectSame(same.counts, valgrindCounts({program, "bare"}, options));
}

TEST(PreloadHygiene, MallinfoShowsOnlyTheProgramsOwnHeap) {
  const std::string program = sample("mallinfo_start");
  RunResult plain = run({program});
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(plain.out.rfind("uordblks ", 0), 0u) << plain.out;
  Recorded rec = record(program);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, plain.out);  // at main, after a malloc/free, with 777 bytes live
  // And the recording saw the program's blocks (a positive control: it was recording): 100 and
  // 777 bytes, and stdout's buffer.
  EXPECT_EQ(reportJson(rec.db)["totals"]["allocations"], 3);
}

TEST(PreloadHygiene, TheLibrarysOwnDlErrorsAreNotTheProgramsDlerror) {
  Recorded rec = record(sample("dlerror_first"));
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "dlerror: (none)\n");
}

TEST(PreloadHygiene, ThreadsLiveAtExitHoldWhatValgrindSees) {
  if (!haveValgrind()) GTEST_SKIP() << "valgrind is not installed";
  const std::string program = sample("tls_threads");
  Counted mine = memledgerCounts({program});
  ASSERT_EQ(mine.rec.program.status, 0) << mine.rec.program.err;
  HeapCounts theirs = valgrindCounts({program});
  // glibc sizes each new thread's DTV by the number of modules with thread-local storage: the
  // preload library's own per-thread state is one more, one 16-byte dtv_t entry per thread
  // (unavoidable while that state is initial-exec TLS). Everything else is the same.
  const int64_t threads = 4, dtvEntry = 16;
  HeapCounts expected = theirs;
  expected.bytes += threads * dtvEntry;
  expected.inUseBytes += threads * dtvEntry;
  expectSame(mine.counts, expected);
  // Each thread's own 256 bytes are live at exit (its block of libtlsmod's TLS, 100 ints, too).
  EXPECT_EQ(sqlInt(mine.rec.db, "SELECT count(*) FROM allocations WHERE size = 256 AND t_free IS NULL"), threads);
}

TEST(PreloadHygiene, NoLibraryTheProgramDidNotAskFor) {
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  RunResult plain = run({python, "-c", kMapsScript});
  ASSERT_EQ(plain.status, 0) << plain.err;
  Recorded rec = record(python, {"-c", kMapsScript});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  std::set<std::string> without = mappedLibraries(plain.out), with = mappedLibraries(rec.program.out);
  std::set<std::string> added;
  for (const auto& lib : with)
    if (!without.count(lib)) added.insert(lib);
  EXPECT_EQ(added, std::set<std::string>{"libmemledger_preload.so"}) << rec.program.out;
  EXPECT_GT(sqlInt(rec.db, "SELECT count(*) FROM allocations"), 0);  // it was recording

  // The same for a program run through a shell pipeline (every process of it is traced).
  Recorded sh = record("/bin/sh", {"-c", "cat /proc/self/maps | cat"});
  ASSERT_EQ(sh.program.status, 0) << sh.program.err;
  for (const char* lib : {"libunwind", "libdw", "libelf", "liblzma", "libz.", "libbz2"})
    EXPECT_EQ(sh.program.out.find(lib), std::string::npos) << lib << " mapped:\n" << sh.program.out;

  // Positive control: with libunwind asked for, it is loaded on the first capture.
  RunOptions forced;
  forced.env = {{"MEMLEDGER_UNWIND", "libunwind"}};
  Recorded un = record(python, {"-c", kMapsScript}, forced);
  ASSERT_EQ(un.program.status, 0) << un.program.err;
  EXPECT_TRUE(mappedLibraries(un.program.out).count("libunwind.so.8.0.1") ||
              un.program.out.find("libunwind.so") != std::string::npos)
      << un.program.out;
}

TEST(PreloadHygiene, PythonLeftoversAtExitEqualValgrinds) {
  if (!haveValgrind()) GTEST_SKIP() << "valgrind is not installed";
  const std::string python = "/usr/bin/python3";
  if (access(python.c_str(), X_OK) != 0) GTEST_SKIP() << "no " << python;
  // Extension modules are dlopen'ed: each once cost the loader one block more under memledger
  // (and six libraries were mapped that the program never asked for).
  std::vector<std::string> argv = {python, "-c", "import json, decimal, ctypes, hashlib, sqlite3"};
  RunOptions options;
  options.env = {{"PYTHONHASHSEED", "0"}};
  Counted mine = memledgerCounts(argv, options);
  ASSERT_EQ(mine.rec.program.status, 0) << mine.rec.program.err;
  HeapCounts theirs = valgrindCounts(argv, options);
  EXPECT_EQ(mine.counts.inUseBlocks, theirs.inUseBlocks) << "memledger: " << mine.counts << "\nvalgrind:  " << theirs;
  EXPECT_EQ(mine.counts.inUseBytes, theirs.inUseBytes) << "memledger: " << mine.counts << "\nvalgrind:  " << theirs;
}
