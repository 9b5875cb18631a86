// Symbolizer against a real -g -O2 library compiled at test time from tests/fixtures/, plus
// libc's malloc from this very process. The fixture is dlopened so its addresses come from a real
// mapping and its load bias from the dynamic loader, exactly as the recorder will see them.
#include "recorder/symbolizer.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using memledger::recorder::SymbolFrame;
using memledger::recorder::Symbolizer;

namespace {

const std::string kFixtureSource = MEMLEDGER_SOURCE_DIR "/tests/fixtures/symbolizer_fixture.cpp";
const std::string kBuildId = "5e1f0a11ed0c0ffee0ddba11c0de0123456789ab";

// Line of the first source line containing "MARK:<name>", 0 when absent.
int markerLine(const std::string& name) {
  std::ifstream in(kFixtureSource);
  std::string text;
  for (int line = 1; std::getline(in, text); ++line)
    if (text.find("MARK:" + name) != std::string::npos) return line;
  return 0;
}

int run(const std::string& command) {
  return std::system(("{ " + command + "; } >/dev/null 2>&1").c_str());
}

// Module-relative address (runtime - load bias) of a loaded object's code address.
uint64_t relativeTo(void* handle, uintptr_t runtime) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr) return 0;
  return runtime - map->l_addr;
}

class SymbolizerTest : public ::testing::Test {
 protected:
  // Builds the fixture once: the library with DWARF, a fully stripped copy (only .dynsym left),
  // and a copy whose DWARF sits in a separate file found through .gnu_debuglink.
  static void SetUpTestSuite() {
    if (run("command -v g++ && command -v objcopy && command -v strip") != 0) {
      skipReason_ = "g++/objcopy/strip not installed";
      return;
    }
    char tmpl[] = "/tmp/memledger-symbolizer-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      skipReason_ = "cannot create a temporary directory";
      return;
    }
    dir_ = tmpl;
    library_ = dir_ + "/libfixture.so";
    stripped_ = dir_ + "/libfixture_stripped.so";
    fs::create_directories(dir_ + "/linked");
    debugLinked_ = dir_ + "/linked/libfixture.so";
    const std::string debugFile = dir_ + "/linked/libfixture.debug";
    if (run("g++ -g -O2 -fPIC -shared -Wl,--build-id=0x" + kBuildId + " -o " + library_ + " " +
            kFixtureSource) != 0 ||
        run("strip --strip-all -o " + stripped_ + " " + library_) != 0 ||
        run("objcopy --only-keep-debug " + library_ + " " + debugFile) != 0 ||
        run("objcopy --strip-debug --add-gnu-debuglink=" + debugFile + " " + library_ + " " +
            debugLinked_) != 0) {
      failure_ = "compiling or stripping the fixture failed";
      return;
    }
    handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      failure_ = std::string("dlopen: ") + dlerror();
      return;
    }
    auto entry = reinterpret_cast<uintptr_t (*)(int)>(dlsym(handle_, "fixture_return_address_in_inline"));
    if (entry == nullptr) {
      failure_ = "fixture entry point not exported";
      return;
    }
    // What a stack walk reports is the return address; the recorder passes ip - 1 so the lookup
    // lands on the call instruction, not on the line after it.
    inlineCallSite_ = relativeTo(handle_, entry(4)) - 1;
    entryAddress_ = relativeTo(handle_, reinterpret_cast<uintptr_t>(entry));
  }

  static void TearDownTestSuite() {
    if (handle_ != nullptr) dlclose(handle_);
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void SetUp() override {
    if (!skipReason_.empty()) GTEST_SKIP() << skipReason_;
    ASSERT_TRUE(failure_.empty()) << failure_;
  }

  static void expectInlineChain(const std::vector<SymbolFrame>& frames) {
    ASSERT_EQ(frames.size(), 2u);
    EXPECT_EQ(frames[0].function, "fixture::inner(int)");
    EXPECT_EQ(frames[0].file, kFixtureSource);
    EXPECT_EQ(frames[0].line, markerLine("inner_call"));
    EXPECT_EQ(frames[1].function, "fixture::outer(int)");
    EXPECT_EQ(frames[1].file, kFixtureSource);
    EXPECT_EQ(frames[1].line, markerLine("outer_call"));
  }

  static inline std::string skipReason_, failure_, dir_, library_, stripped_, debugLinked_;
  static inline void* handle_ = nullptr;
  static inline uint64_t inlineCallSite_ = 0, entryAddress_ = 0;
};

TEST_F(SymbolizerTest, InlineChainInnermostFirstWithCallSites) {
  ASSERT_GT(markerLine("inner_call"), 0);
  ASSERT_GT(markerLine("outer_call"), 0);
  Symbolizer symbolizer;
  expectInlineChain(symbolizer.symbolize(library_, inlineCallSite_));
  // The second answer comes from the cache and must be the same.
  expectInlineChain(symbolizer.symbolize(library_, inlineCallSite_));
}

TEST_F(SymbolizerTest, CFunctionWithoutLinkageNameKeepsPlainName) {
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(library_, entryAddress_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_return_address_in_inline");
  EXPECT_EQ(frames[0].file, kFixtureSource);
  EXPECT_GT(frames[0].line, markerLine("outer_call"));
}

TEST_F(SymbolizerTest, StrippedLibraryFallsBackToDynamicSymbols) {
  ASSERT_NE(run("readelf -S " + stripped_ + " | grep -q debug_info"), 0) << "strip left DWARF";
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(stripped_, inlineCallSite_);
  // Without DWARF the inlined function is invisible; the exported function containing it is not.
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture::outer(int)");
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].line, 0);
  EXPECT_EQ(symbolizer.symbolize(stripped_, entryAddress_)[0].function,
            "fixture_return_address_in_inline");
}

TEST_F(SymbolizerTest, SeparateDebugFileFoundThroughDebuglink) {
  ASSERT_NE(run("readelf -S " + debugLinked_ + " | grep -q debug_info"), 0);
  Symbolizer symbolizer;
  expectInlineChain(symbolizer.symbolize(debugLinked_, inlineCallSite_));
}

// dlopens a fixture build and returns its inline call site (module-relative, ip - 1); 0 on error.
uint64_t inlineCallSiteOf(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return 0;
  auto entry = reinterpret_cast<uintptr_t (*)(int)>(dlsym(handle, "fixture_return_address_in_inline"));
  const uint64_t callSite = entry != nullptr ? relativeTo(handle, entry(2)) - 1 : 0;
  dlclose(handle);
  return callSite;
}

// clang emits no .debug_aranges: the compile unit must be found from the CU DIEs' own ranges.
TEST_F(SymbolizerTest, ClangLibraryWithoutArangesKeepsInlineChain) {
  if (run("command -v clang++") != 0) GTEST_SKIP() << "clang++ not installed";
  const std::string library = dir_ + "/libfixture_clang.so";
  ASSERT_EQ(run("clang++ -g -O2 -fPIC -shared -o " + library + " " + kFixtureSource), 0);
  ASSERT_NE(run("readelf -S " + library + " | grep -q debug_aranges"), 0) << "clang emitted aranges";
  const uint64_t callSite = inlineCallSiteOf(library);
  ASSERT_NE(callSite, 0u);
  Symbolizer symbolizer;
  expectInlineChain(symbolizer.symbolize(library, callSite));
}

// Debian's debug packages are dwz-compressed: DIEs shared between files (here the inlined
// function's name) move to a common file named by .gnu_debugaltlink.
TEST_F(SymbolizerTest, DwzSharedDebugInfoKeepsInlineNames) {
  if (run("command -v dwz") != 0) GTEST_SKIP() << "dwz not installed";
  const std::string first = dir_ + "/libdwz1.so", second = dir_ + "/libdwz2.so";
  for (const auto& [library, id] : {std::pair{first, "01"}, std::pair{second, "02"}})
    ASSERT_EQ(run("g++ -g -O2 -fPIC -shared -Wl,--build-id=0x" + kBuildId.substr(2) + id + " -o " +
                  library + " " + kFixtureSource), 0);
  const std::string common = dir_ + "/common.debug";
  ASSERT_EQ(run("dwz -m " + common + " -M " + common + " " + first + " " + second), 0);
  ASSERT_EQ(run("readelf -S " + first + " | grep -q gnu_debugaltlink"), 0) << "dwz shared nothing";
  const uint64_t callSite = inlineCallSiteOf(first);
  ASSERT_NE(callSite, 0u);
  Symbolizer symbolizer;
  expectInlineChain(symbolizer.symbolize(first, callSite));
}

// A process maps hundreds of libraries; open libdw sessions (one descriptor each, or more) are
// capped and the least recently used one is closed, then reopened when needed again.
TEST_F(SymbolizerTest, ManyModulesStayWithinDescriptorBudget) {
  const std::string copies = dir_ + "/many";
  fs::create_directories(copies);
  constexpr int kCopies = 300;
  std::vector<std::string> paths;
  for (int i = 0; i < kCopies; ++i) {
    paths.push_back(copies + "/libcopy" + std::to_string(i) + ".so");
    fs::copy_file(library_, paths.back());
  }
  Symbolizer symbolizer;
  for (const auto& path : paths) expectInlineChain(symbolizer.symbolize(path, inlineCallSite_));
  int openCopies = 0;
  for (const auto& fd : fs::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    if (fs::read_symlink(fd.path(), error).string().starts_with(copies)) ++openCopies;
  }
  EXPECT_GT(openCopies, 0);
  EXPECT_LE(openCopies, 200) << "sessions are not being closed";
  // The first copies were closed long ago: a new address there reopens them.
  auto frames = symbolizer.symbolize(paths[0], entryAddress_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "fixture_return_address_in_inline");
  EXPECT_EQ(symbolizer.buildId(paths[1]), kBuildId);
}

TEST_F(SymbolizerTest, BuildIdIsTheLinkersNote) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.buildId(library_), kBuildId);
  EXPECT_EQ(symbolizer.buildId(stripped_), kBuildId);
  EXPECT_EQ(symbolizer.buildId("/nonexistent/libnothing.so"), "");
}

TEST_F(SymbolizerTest, AddressOutsideAnyFunctionGivesOneEmptyFrame) {
  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(library_, 0);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
}

TEST(SymbolizerLibc, MallocResolvesToAMallocFunction) {
  void* malloc_address = dlsym(RTLD_DEFAULT, "malloc");
  ASSERT_NE(malloc_address, nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(malloc_address, &info), 0);
  ASSERT_NE(info.dli_fname, nullptr);
  void* libc = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  ASSERT_NE(libc, nullptr);
  const uint64_t address = relativeTo(libc, reinterpret_cast<uintptr_t>(malloc_address));
  dlclose(libc);

  Symbolizer symbolizer;
  auto frames = symbolizer.symbolize(info.dli_fname, address);
  ASSERT_FALSE(frames.empty());
  // Whether libc6-dbg is installed (DWARF: __libc_malloc) or not (symbol table: malloc).
  EXPECT_NE(frames.back().function.find("malloc"), std::string::npos) << frames.back().function;
  EXPECT_NE(symbolizer.buildId(info.dli_fname), "");
}

// libc's path and module-relative addresses inside some of its functions (the entry and a few
// bytes in), as the recorder would ask for them.
std::pair<std::string, std::vector<uint64_t>> libcAddresses() {
  void* mallocAddress = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info info{};
  if (mallocAddress == nullptr || dladdr(mallocAddress, &info) == 0 || info.dli_fname == nullptr) return {};
  void* libc = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  if (libc == nullptr) return {};
  std::vector<uint64_t> addresses;
  for (const char* name : {"malloc", "free", "calloc", "realloc", "qsort", "strtod", "printf", "fopen",
                           "getaddrinfo", "regcomp", "strdup", "opendir", "setlocale", "posix_memalign"}) {
    void* function = dlsym(libc, name);
    if (function == nullptr) continue;
    const uint64_t at = relativeTo(libc, reinterpret_cast<uintptr_t>(function));
    addresses.push_back(at);
    addresses.push_back(at + 9);
  }
  dlclose(libc);
  return {info.dli_fname, addresses};
}

bool sameFrames(const std::vector<SymbolFrame>& a, const std::vector<SymbolFrame>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const SymbolFrame& x, const SymbolFrame& y) {
    return x.function == y.function && x.file == y.file && x.line == y.line;
  });
}

// The recorder's warm-up prefetches on one thread while the end symbolizes on another
// (recorder/symbol_warmer.h): the answers are those of a Symbolizer used from one thread,
// whichever thread got to a module or an address first.
TEST_F(SymbolizerTest, PrefetchOnAnotherThreadGivesTheSameAnswers) {
  auto [libc, libcAt] = libcAddresses();
  ASSERT_FALSE(libcAt.empty());
  std::vector<std::pair<std::string, uint64_t>> lookups;
  for (uint64_t a : libcAt) lookups.emplace_back(libc, a);
  for (const std::string& path : {library_, stripped_, debugLinked_})
    for (uint64_t a : {inlineCallSite_, entryAddress_, uint64_t{0}}) lookups.emplace_back(path, a);
  lookups.emplace_back("/nonexistent/libnothing.so", 0x10);

  Symbolizer cold;
  std::vector<std::vector<SymbolFrame>> expected;
  for (const auto& [path, address] : lookups) expected.push_back(cold.symbolize(path, address));

  for (int round = 0; round < 3; ++round) {
    Symbolizer shared;
    std::atomic<int> prefetched{0};
    std::thread warm([&] {
      for (const auto& [path, address] : lookups) prefetched += shared.prefetch(path, address) ? 1 : 0;
    });
    if (round == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it lead
    for (size_t i = lookups.size(); i-- > 0;)  // the other way round: the threads meet midway
      EXPECT_TRUE(sameFrames(shared.symbolize(lookups[i].first, lookups[i].second), expected[i]))
          << lookups[i].first << "+" << lookups[i].second;
    warm.join();
    for (size_t i = 0; i < lookups.size(); ++i)
      EXPECT_TRUE(sameFrames(shared.symbolize(lookups[i].first, lookups[i].second), expected[i]));
    EXPECT_EQ(shared.buildId(library_), kBuildId);
  }
  // Alone, a prefetch always answers, and symbolize() then finds the answer.
  Symbolizer alone;
  for (const auto& [path, address] : lookups) EXPECT_TRUE(alone.prefetch(path, address));
  for (size_t i = 0; i < lookups.size(); ++i)
    EXPECT_TRUE(sameFrames(alone.symbolize(lookups[i].first, lookups[i].second), expected[i]));
}

// A prefetching thread starved of CPU (SCHED_IDLE on a CPU a busy thread keeps) while it holds
// libc's session (opening it, decompressing its debug info) must not hold symbolize() up: the
// module is taken over with a fresh session, and both threads' answers agree.
TEST(SymbolizerThreads, StarvedPrefetchDoesNotHoldUpSymbolize) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  auto pinTo = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  };
  auto [libc, libcAt] = libcAddresses();
  ASSERT_FALSE(libcAt.empty());
  const std::vector<SymbolFrame> expected = Symbolizer().symbolize(libc, libcAt[0]);
  cpu_set_t before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof before, &before), 0);

  // The starved thread may need long to finish its lookup once the test is done (other processes
  // keep the CPUs busy under ctest -j): it owns what it uses and is waited for only briefly.
  struct Warm {
    Symbolizer symbolizer;
    std::atomic<bool> started{false}, finished{false};
  };
  auto shared = std::make_shared<Warm>();
  std::atomic<bool> done{false}, spinning{false};
  std::thread spinner([&] {
    pinTo(cpus[0]);
    spinning = true;
    while (!done.load()) {
    }
  });
  while (!spinning.load()) std::this_thread::yield();
  std::thread warm([shared, cpu = cpus[0], libc = libc, address = libcAt[0], pinTo] {
    pinTo(cpu);
    sched_param param{};
    pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
    shared->started = true;
    shared->symbolizer.prefetch(libc, address);  // false when symbolize() got there first
    shared->finished = true;
  });
  pinTo(cpus[1]);
  while (!shared->started.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // it checks the module out meanwhile
  const auto start = std::chrono::steady_clock::now();
  const std::vector<SymbolFrame> got = shared->symbolizer.symbolize(libc, libcAt[0]);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done = true;
  spinner.join();
  pthread_setaffinity_np(pthread_self(), sizeof before, &before);
  EXPECT_TRUE(sameFrames(got, expected));
  // A cold libc lookup takes ~0.1 s; waiting on the starved thread would take tens of seconds.
  EXPECT_LT(seconds, 1.5);
  // Neither the cached answer nor another address waits for the thread still holding its session.
  EXPECT_TRUE(sameFrames(shared->symbolizer.symbolize(libc, libcAt[0]), expected));
  EXPECT_TRUE(sameFrames(shared->symbolizer.symbolize(libc, libcAt[1]), Symbolizer().symbolize(libc, libcAt[1])));
  for (int i = 0; i < 200 && !shared->finished.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (shared->finished.load()) warm.join();
  else warm.detach();
}

TEST(SymbolizerErrors, MissingOrNonElfFileGivesOneEmptyFrame) {
  Symbolizer symbolizer;
  for (int attempt = 0; attempt < 2; ++attempt) {  // the second answer is the cached failure
    auto frames = symbolizer.symbolize("/nonexistent/libnothing.so", 0x1234);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, "");
    EXPECT_EQ(frames[0].file, "");
    EXPECT_EQ(frames[0].line, 0);
  }
  auto frames = symbolizer.symbolize(kFixtureSource, 0x10);  // a text file, not ELF
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "");
  EXPECT_EQ(symbolizer.symbolize("", 0x10).size(), 1u);
}

}  // namespace
