// End to end through the real transport: a program runs under libmemledger_preload.so, registers
// on a real control socket, and its ring is drained by RingReader while it runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <map>
#include <unordered_map>

#include "ring_test_support.h"

using namespace memledger::ringtest;

namespace {

RunResult runChild(const std::string& scenario, RunOptions opt = {}) {
  opt.env.push_back("MEMLEDGER_RINGTEST_CHILD=" + scenario);
  return runTraced({selfExe()}, opt);
}

bool havePreload() {
  struct stat st;
  return stat(preloadPath().c_str(), &st) == 0;
}

const Rec* findAlloc(const Image& img, uint64_t size, AllocKind kind, size_t* at = nullptr) {
  for (size_t i = 0; i < img.recs.size(); ++i) {
    const Rec& r = img.recs[i];
    if (r.type == RecordType::Alloc && r.b == size && r.kind == kind) {
      if (at) *at = i;
      return &r;
    }
  }
  return nullptr;
}

const Rec* findAfter(const Image& img, size_t from, RecordType type, uint64_t a) {
  for (size_t i = from; i < img.recs.size(); ++i) {
    if (img.recs[i].type == type && img.recs[i].a == a) return &img.recs[i];
  }
  return nullptr;
}

// The Stack record for `hash` must come before index `before`, carry frames, and its innermost
// frame must lie in the traced executable (the hook's own frames are dropped).
void expectStackBefore(const Image& img, uint64_t hash, size_t before) {
  ASSERT_NE(hash, 0u);
  const Rec* stack = nullptr;
  for (size_t i = 0; i < before; ++i) {
    if (img.recs[i].type == RecordType::Stack && img.recs[i].a == hash) stack = &img.recs[i];
  }
  ASSERT_NE(stack, nullptr) << "no Stack record before the allocation";
  ASSERT_FALSE(stack->frames.empty());
  EXPECT_EQ(stack->aux + stack->b, stack->frames.size());  // carried + shared with the previous one
  EXPECT_EQ(img.unresolvedStacks, 0u);
  EXPECT_EQ(memledger::wire::hashFrames(stack->frames.data(), static_cast<int>(stack->frames.size())), hash);
  const Rec* mod = nullptr;
  for (const Rec& r : img.recs) {
    if (r.type == RecordType::Module && stack->frames[0] >= r.b && stack->frames[0] < r.c) mod = &r;
  }
  ASSERT_NE(mod, nullptr) << "innermost frame in no reported module";
  EXPECT_EQ(mod->text, img.exe) << "innermost frame should be the caller of malloc";
}

class RingTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!havePreload()) GTEST_SKIP() << "libmemledger_preload.so not built at " << preloadPath();
  }
};

TEST_F(RingTransport, RecordsEveryKindOfAllocationWithStacks) {
  RunResult r = runChild("alloc");
  ASSERT_TRUE(WIFEXITED(r.status)) << r.status;
  EXPECT_EQ(WEXITSTATUS(r.status), 7);
  ASSERT_EQ(r.images.size(), 1u);
  const Image& img = r.images[0];
  EXPECT_EQ(img.hello.forked, 0u);
  EXPECT_EQ(img.exe, selfExe());
  EXPECT_EQ(img.command, selfExe());
  EXPECT_FALSE(img.detached);
  EXPECT_EQ(img.slotsConsumed, img.slotsDelivered) << "slots were skipped: a record was not published";

  size_t at = 0;
  const Rec* big = findAlloc(img, 123456, AllocKind::Malloc, &at);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->op(), Op::Malloc);
  expectStackBefore(img, big->c, at);
  const Rec* fr = findAfter(img, at + 1, RecordType::Free, big->a);
  ASSERT_NE(fr, nullptr) << "free of the 123456-byte block";
  EXPECT_EQ(fr->op(), Op::Free);

  // libstdc++ allocates its exception emergency pool before any constructor of ours runs
  // (DESIGN "Known traps"): it must be in the ring, with a stack that starts in libstdc++.
  const Rec* stdcxx = nullptr;
  for (const Rec& rec : img.recs) {
    if (rec.type == RecordType::Module && rec.text.find("libstdc++") != std::string::npos) stdcxx = &rec;
  }
  ASSERT_NE(stdcxx, nullptr);
  bool earlyPool = false;
  for (size_t i = 0; i < img.recs.size() && !earlyPool; ++i) {
    const Rec& rec = img.recs[i];
    if (rec.type != RecordType::Alloc || rec.b < 64 * 1024) continue;
    for (size_t j = 0; j < i; ++j) {
      const Rec& s = img.recs[j];
      if (s.type == RecordType::Stack && s.a == rec.c && s.frames[0] >= stdcxx->b && s.frames[0] < stdcxx->c)
        earlyPool = true;
    }
  }
  EXPECT_TRUE(earlyPool) << "libstdc++'s emergency pool allocation was not recorded";

  size_t deepAt = 0;
  const Rec* deep = findAlloc(img, 98765, AllocKind::Malloc, &deepAt);
  ASSERT_NE(deep, nullptr);
  expectStackBefore(img, deep->c, deepAt);
  for (size_t i = 0; i < deepAt; ++i) {
    if (img.recs[i].type == RecordType::Stack && img.recs[i].a == deep->c) {
      EXPECT_GE(img.recs[i].frames.size(), 42u);
    }
  }

  const Rec* cal = findAlloc(img, 15000, AllocKind::Malloc);
  ASSERT_NE(cal, nullptr);
  EXPECT_EQ(cal->op(), Op::Calloc);

  size_t r1at = 0, r2at = 0;
  const Rec* r1 = findAlloc(img, 1000, AllocKind::Malloc, &r1at);
  const Rec* r2 = findAlloc(img, 100000, AllocKind::Malloc, &r2at);
  ASSERT_NE(r1, nullptr);
  ASSERT_NE(r2, nullptr);
  EXPECT_EQ(r2->op(), Op::Realloc);
  const Rec* reFree = findAfter(img, r1at + 1, RecordType::Free, r1->a);
  ASSERT_NE(reFree, nullptr);
  EXPECT_EQ(reFree->op(), Op::Realloc);
  EXPECT_LT(reFree - img.recs.data(), static_cast<ptrdiff_t>(r2at)) << "the old block is released first";

  size_t nat = 0;
  const Rec* arr = findAlloc(img, 77777, AllocKind::New, &nat);
  ASSERT_NE(arr, nullptr);
  EXPECT_EQ(arr->op(), Op::NewArray);
  const Rec* del = findAfter(img, nat + 1, RecordType::Free, arr->a);
  ASSERT_NE(del, nullptr);
  EXPECT_EQ(del->kind, AllocKind::New);
  EXPECT_EQ(del->op(), Op::DeleteArray);

  const Rec* al = findAlloc(img, 44444, AllocKind::New);
  ASSERT_NE(al, nullptr);
  EXPECT_EQ(al->a % 256, 0u);
  const Rec* pm = findAlloc(img, 55555, AllocKind::Malloc);
  ASSERT_NE(pm, nullptr);
  EXPECT_EQ(pm->op(), Op::PosixMemalign);
  EXPECT_EQ(pm->a % 4096, 0u);

  size_t mat = 0;
  const Rec* mm = findAlloc(img, 1 << 20, AllocKind::Mmap, &mat);
  ASSERT_NE(mm, nullptr);
  const Rec* un = findAfter(img, mat + 1, RecordType::Unmap, mm->a);
  ASSERT_NE(un, nullptr);
  EXPECT_EQ(un->b, 1u << 20);
  EXPECT_EQ(un->op(), Op::Munmap);

  size_t cat = 0;
  const Rec* custom = findAlloc(img, 999, AllocKind::Custom, &cat);
  ASSERT_NE(custom, nullptr);
  EXPECT_EQ(custom->a, 0x123400u);
  const Rec* cfree = findAfter(img, cat + 1, RecordType::Free, 0x123400);
  ASSERT_NE(cfree, nullptr);
  EXPECT_EQ(cfree->op(), Op::CustomFree);

  bool marker = false;
  for (const Rec& rec : img.recs) marker |= rec.type == RecordType::Marker && rec.text == "phase-x";
  EXPECT_TRUE(marker);
  ASSERT_FALSE(img.recs.empty());
  const Rec* exitRec = nullptr;
  for (const Rec& rec : img.recs) if (rec.type == RecordType::Exit) exitRec = &rec;
  ASSERT_NE(exitRec, nullptr);
  EXPECT_EQ(exitRec->a, 7u);
  EXPECT_EQ(exitRec->aux, 0u);
  // free(NULL) makes no record; no record is a Free of address 0.
  for (const Rec& rec : img.recs) EXPECT_FALSE(rec.type == RecordType::Free && rec.a == 0);
}

TEST_F(RingTransport, ForkChildRegistersItsOwnRing) {
  RunResult r = runChild("fork");
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(WEXITSTATUS(r.status), 0) << r.out;
  ASSERT_EQ(r.images.size(), 2u);
  const Image* parent = nullptr;
  const Image* child = nullptr;
  for (const Image& i : r.images) (i.hello.forked ? child : parent) = &i;
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->hello.ppid, parent->hello.pid);
  EXPECT_EQ(r.out, "child " + std::to_string(child->hello.pid) + "\n");
  EXPECT_NE(findAlloc(*parent, 111111, AllocKind::Malloc), nullptr);
  EXPECT_EQ(findAlloc(*parent, 222222, AllocKind::Malloc), nullptr) << "child wrote into the parent's ring";
  size_t at = 0;
  const Rec* childAlloc = findAlloc(*child, 222222, AllocKind::Malloc, &at);
  ASSERT_NE(childAlloc, nullptr);
  expectStackBefore(*child, childAlloc->c, at);
  EXPECT_EQ(findAlloc(*child, 111111, AllocKind::Malloc), nullptr);
  const Rec* exitRec = nullptr;
  for (const Rec& rec : child->recs) if (rec.type == RecordType::Exit) exitRec = &rec;
  ASSERT_NE(exitRec, nullptr);
  EXPECT_EQ(exitRec->a, 3u);
  EXPECT_EQ(exitRec->aux, 1u) << "_exit";
  const Rec* reaped = nullptr;
  for (const Rec& rec : parent->recs) if (rec.type == RecordType::ChildStatus) reaped = &rec;
  ASSERT_NE(reaped, nullptr);
  EXPECT_EQ(reaped->a, child->hello.pid);
  EXPECT_TRUE(WIFEXITED(static_cast<int>(reaped->b)));
  EXPECT_EQ(WEXITSTATUS(static_cast<int>(reaped->b)), 3);
}

TEST_F(RingTransport, VforkChildExitIsNotTheParents) {
  RunResult r = runChild("vfork");
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(WEXITSTATUS(r.status), 9);
  ASSERT_EQ(r.images.size(), 1u);
  std::vector<uint64_t> exits;
  const Rec* reaped = nullptr;
  for (const Rec& rec : r.images[0].recs) {
    if (rec.type == RecordType::Exit) exits.push_back(rec.a);
    if (rec.type == RecordType::ChildStatus) reaped = &rec;
  }
  EXPECT_EQ(exits, std::vector<uint64_t>{9});
  ASSERT_NE(reaped, nullptr);
  EXPECT_EQ(WEXITSTATUS(static_cast<int>(reaped->b)), 42);
}

TEST_F(RingTransport, CrashedProgramKeepsItsRecords) {
  RunOptions opt;
  opt.drainWhileRunning = false;  // everything is read after the process is dead
  RunResult r = runChild("segv", opt);
  ASSERT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(WTERMSIG(r.status), SIGSEGV);
  ASSERT_EQ(r.images.size(), 1u);
  size_t at = 0;
  const Rec* a = findAlloc(r.images[0], 333333, AllocKind::Malloc, &at);
  ASSERT_NE(a, nullptr);
  expectStackBefore(r.images[0], a->c, at);
  for (const Rec& rec : r.images[0].recs) EXPECT_NE(rec.type, RecordType::Exit);
}

TEST_F(RingTransport, ProgramUnwindingStaysWithLibgcc) {
  RunResult r = runChild("cxx");
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << r.out;
  EXPECT_EQ(r.out, "ok\n");
}

// An image's heap records replayed in delivery order (malloc family, and operator new when
// asked): what stays live, and the two signs of records delivered out of order.
struct Replay {
  std::unordered_map<uint64_t, uint64_t> live;
  int doubleAllocs = 0;  // an address allocated again while live
  int unknownFrees = 0;  // a free of an address not live
};
Replay replayHeap(const Image& img, bool withNew) {
  Replay out;
  for (const Rec& rec : img.recs) {
    if (rec.kind != AllocKind::Malloc && !(withNew && rec.kind == AllocKind::New)) continue;
    if (rec.type == RecordType::Alloc) {
      out.doubleAllocs += !out.live.emplace(rec.a, rec.b).second;
      out.live[rec.a] = rec.b;
    } else if (rec.type == RecordType::Free) {
      out.unknownFrees += out.live.erase(rec.a) == 0;
    }
  }
  return out;
}

// The ordering rule of wire.h, checked over everything a multi-threaded process recorded: an
// address is never allocated again while the recording still has it live.
TEST_F(RingTransport, ThreadsPairExactlyInRingOrder) {
  RunOptions opt;
  opt.env.push_back("MEMLEDGER_RING_SLOTS=4096");  // small ring: writers wait and wrap often
  RunResult r = runChild("threads", opt);
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(WEXITSTATUS(r.status), 0);
  ASSERT_EQ(r.images.size(), 1u);
  const Image& img = r.images[0];
  std::map<uint64_t, int> perSize;
  for (const Rec& rec : img.recs)
    if (rec.type == RecordType::Alloc && (rec.kind == AllocKind::Malloc || rec.kind == AllocKind::New))
      ++perSize[rec.b];
  EXPECT_EQ(replayHeap(img, true).doubleAllocs, 0);
  EXPECT_EQ(img.slotsConsumed, img.slotsDelivered);
  for (uint64_t s = 1000; s < 1004; ++s) EXPECT_EQ(perSize[s], 5000) << "size " << s;
  EXPECT_EQ(perSize[4321], 4) << "allocations in thread_local destructors";
  EXPECT_FALSE(img.detached);
}

// Blocks cross threads and their addresses come back on other threads (ring_child_scenarios'
// handoff): every free is of a live block, no address is allocated twice while live, and
// everything the program freed is gone in the end. With private lanes for all threads, with
// one private lane and the rest sharing lane 0, with lane 0 alone, and stamped with
// clock_gettime instead of the TSC; small lanes, so writers wait and wrap.
TEST_F(RingTransport, BlocksFreedOnOtherThreadsPairExactlyAcrossLanes) {
  const std::pair<const char*, const char*> configs[] = {
      {"16", "tsc"}, {"2", "tsc"}, {"1", "tsc"}, {"16", "monotonic"}};
  for (auto [lanes, clock] : configs) {
    SCOPED_TRACE(std::string("MEMLEDGER_RING_LANES=") + lanes + " MEMLEDGER_CLOCK=" + clock);
    RunOptions opt;
    opt.env.push_back("MEMLEDGER_RING_SLOTS=4096");
    opt.env.push_back(std::string("MEMLEDGER_RING_LANES=") + lanes);
    opt.env.push_back(std::string("MEMLEDGER_CLOCK=") + clock);
    RunResult r = runChild("handoff", opt);
    ASSERT_TRUE(WIFEXITED(r.status));
    ASSERT_EQ(WEXITSTATUS(r.status), 0);
    ASSERT_EQ(r.images.size(), 1u);
    const Image& img = r.images[0];
    int handedOff = 0;  // sizes 32..144 but 48, which the consumers allocate too
    for (const Rec& rec : img.recs)
      if (rec.type == RecordType::Alloc && rec.kind == AllocKind::Malloc)
        handedOff += rec.b >= 32 && rec.b <= 144 && rec.b != 48;
    Replay heap = replayHeap(img, false);
    EXPECT_EQ(heap.doubleAllocs, 0);
    EXPECT_EQ(heap.unknownFrees, 0);
    EXPECT_GE(handedOff, 3 * 60000 * 6 / 7);
    EXPECT_EQ(img.slotsConsumed, img.slotsDelivered);
    EXPECT_FALSE(img.detached);
    for (const auto& [addr, size] : heap.live) EXPECT_FALSE(size >= 32 && size <= 144) << size;
  }
}

// Handlers that allocate while their thread is inside a hook run untracked (runtime.h): the
// ring stays intact, and the handler's allocations made outside hooks are recorded.
TEST_F(RingTransport, AllocatingSignalHandlersDoNotCorruptTheRing) {
  RunResult r = runChild("signals");
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(WEXITSTATUS(r.status), 0);
  EXPECT_EQ(r.out, "handled\n");
  ASSERT_EQ(r.images.size(), 1u);
  const Image& img = r.images[0];
  EXPECT_EQ(img.slotsConsumed, img.slotsDelivered);
  std::unordered_map<uint64_t, uint64_t> live;
  int doubleAllocs = 0, handlerAllocs = 0, mainAllocs = 0;
  for (const Rec& rec : img.recs) {
    if (rec.type == RecordType::Alloc && rec.kind == AllocKind::Malloc) {
      doubleAllocs += !live.emplace(rec.a, rec.b).second;
      handlerAllocs += rec.b == 777;
      mainAllocs += rec.b == 555;
    } else if (rec.type == RecordType::Free) {
      live.erase(rec.a);
    }
  }
  EXPECT_EQ(doubleAllocs, 0);
  EXPECT_GE(mainAllocs, 300000);
  EXPECT_GT(handlerAllocs, 0);
}

TEST_F(RingTransport, RealProgramsRunUnchanged) {
  RunResult py = runTraced({"/usr/bin/python3", "-c", "print(1)"});
  ASSERT_TRUE(WIFEXITED(py.status));
  EXPECT_EQ(WEXITSTATUS(py.status), 0);
  EXPECT_EQ(py.out, "1\n");
  ASSERT_EQ(py.images.size(), 1u);
  EXPECT_EQ(py.images[0].command, "/usr/bin/python3 -c print(1)");
  EXPECT_GT(py.images[0].counts[static_cast<int>(RecordType::Alloc)], 100u);
  EXPECT_EQ(py.images[0].slotsConsumed, py.images[0].slotsDelivered);

  RunResult ct = runTraced({"/usr/bin/python3", "-c",
                            "import ctypes; l=ctypes.CDLL(None); p=l.malloc(123456); l.free(p)"});
  ASSERT_TRUE(WIFEXITED(ct.status));
  EXPECT_EQ(WEXITSTATUS(ct.status), 0);
  ASSERT_EQ(ct.images.size(), 1u);
  size_t at = 0;
  const Rec* a = findAlloc(ct.images[0], 123456, AllocKind::Malloc, &at);
  ASSERT_NE(a, nullptr);
  bool stackFirst = false;
  for (size_t i = 0; i < at; ++i) {
    const Rec& s = ct.images[0].recs[i];
    stackFirst |= s.type == RecordType::Stack && s.a == a->c && !s.frames.empty();
  }
  EXPECT_TRUE(stackFirst);
  EXPECT_NE(findAfter(ct.images[0], at + 1, RecordType::Free, a->a), nullptr);

  struct stat st;
  if (stat("/usr/bin/sqlite3", &st) != 0) return;
  RunResult sq = runTraced({"/usr/bin/sqlite3", ":memory:", "select 1"});
  ASSERT_TRUE(WIFEXITED(sq.status));
  EXPECT_EQ(WEXITSTATUS(sq.status), 0);
  EXPECT_EQ(sq.out, "1\n");
  ASSERT_EQ(sq.images.size(), 1u);
}

TEST_F(RingTransport, ModulesComeAndGoAroundTheirStacks) {
  RunResult r = runChild("dlopen");
  ASSERT_TRUE(WIFEXITED(r.status));
  ASSERT_EQ(WEXITSTATUS(r.status), 0);
  ASSERT_EQ(r.images.size(), 1u);
  const Image& img = r.images[0];
  EXPECT_EQ(img.slotsConsumed, img.slotsDelivered);
  size_t modAt = img.recs.size(), stackAt = img.recs.size(), goneAt = img.recs.size(), endAt = 0;
  const Rec* mod = nullptr;
  for (size_t i = 0; i < img.recs.size(); ++i) {
    const Rec& rec = img.recs[i];
    if (rec.type == RecordType::Module && rec.text.find("libexpat.so") != std::string::npos) {
      mod = &rec;
      modAt = i;
    } else if (mod && rec.type == RecordType::Stack && stackAt == img.recs.size() &&
               rec.frames[0] >= mod->b && rec.frames[0] < mod->c) {
      stackAt = i;
    } else if (mod && rec.type == RecordType::ModuleGone && rec.a == mod->a && rec.b == mod->b) {
      goneAt = i;
    } else if (rec.type == RecordType::Alloc && rec.b == 31337) {
      endAt = i;
    }
  }
  ASSERT_NE(mod, nullptr) << "no Module record for libexpat";
  EXPECT_LT(modAt, stackAt) << "the module must be known before a stack that runs in it";
  ASSERT_LT(stackAt, img.recs.size()) << "no allocation with libexpat as the innermost frame";
  EXPECT_LT(stackAt, goneAt);
  ASSERT_LT(goneAt, img.recs.size()) << "no ModuleGone after dlclose";
  EXPECT_LT(goneAt, endAt);
}

// dlopen must keep the caller's identity: glibc searches the *calling* object's RUNPATH, so the
// hook may only tail-call the real dlopen. A library with RUNPATH $ORIGIN/sub dlopens a library
// by bare name from there.
TEST_F(RingTransport, DlopenKeepsTheCallersRunpath) {
  if (system("cc --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no C compiler";
  char tmpl[] = "/tmp/memledger-runpath.XXXXXX";
  std::string d = mkdtemp(tmpl);
  std::string build =
      "cd " + d + " && mkdir sub && "
      "printf 'int inner(void){return 42;}' > inner.c && "
      "printf '#include <dlfcn.h>\\nint outer(void){void*h=dlopen(\"libinner.so\",RTLD_NOW);"
      "if(!h)return 1;return ((int(*)(void))dlsym(h,\"inner\"))();}' > outer.c && "
      "printf '#include <stdio.h>\\nint outer(void);int main(void){printf(\"%%d\\\\n\",outer());return 0;}' > main.c && "
      "cc -shared -fPIC -o sub/libinner.so inner.c && "
      "cc -shared -fPIC -o libouter.so outer.c -Wl,--enable-new-dtags,-rpath,'$ORIGIN/sub' -ldl && "
      "cc -o main main.c -L. -louter -Wl,-rpath,'$ORIGIN'";
  ASSERT_EQ(system(build.c_str()), 0) << build;
  RunResult r = runTraced({d + "/main"});
  system(("rm -rf " + d).c_str());
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  EXPECT_EQ(r.out, "42\n");
  ASSERT_EQ(r.images.size(), 1u);
}

TEST_F(RingTransport, ExecdImageRegistersAnew) {
  RunResult r = runTraced({"/usr/bin/python3", "-c",
                           "import os; os.execv('/usr/bin/python3', ['python3', '-c', 'pass'])"});
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].hello.pid, r.images[1].hello.pid);
  EXPECT_EQ(r.images[1].hello.forked, 0u);
  EXPECT_EQ(r.images[1].command, "python3 -c pass");
  char real[4096];
  ASSERT_NE(realpath("/usr/bin/python3", real), nullptr);
  EXPECT_EQ(r.images[1].exe, real);
}

TEST_F(RingTransport, NoFollowRecordsOnlyTheFirstImage) {
  RunOptions opt;
  opt.env.push_back("MEMLEDGER_NO_FOLLOW=1");
  RunResult r = runTraced({"/usr/bin/python3", "-c",
                           "import os, subprocess\n"
                           "subprocess.run(['/usr/bin/python3', '-c', 'pass'], check=True)\n"
                           "pid = os.fork()\n"
                           "if pid == 0: os._exit(0)\n"
                           "os.waitpid(pid, 0)\n"
                           "print(os.environ.get('MEMLEDGER_DIR', 'unset'))"},
                          opt);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  EXPECT_EQ(r.out, "unset\n");
  EXPECT_EQ(r.images.size(), 1u);
}

// A recorder that registered the ring but stopped answering: the writer waits ~2 s, then gives
// up with one stderr line and the program runs on to its normal end.
TEST_F(RingTransport, WriterDetachesWhenTheRecorderIsGone) {
  RunOptions opt;
  opt.heartbeat = false;
  opt.drainWhileRunning = false;
  opt.keepRecords = false;
  opt.env.push_back("MEMLEDGER_RING_SLOTS=1024");
  RunResult r = runChild("threads", opt);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  ASSERT_EQ(r.images.size(), 1u);
  EXPECT_TRUE(r.images[0].detached);
  EXPECT_GT(r.images[0].waitNs, 1'500'000'000u);
  // 4 threads x 5000 malloc/free pairs could not all fit in 1024 slots: the rest was counted.
  EXPECT_GT(r.images[0].lost, 10000u);
}

TEST_F(RingTransport, NoRecorderDirectoryMeansPassThrough) {
  RunOptions opt;
  opt.preload = false;
  opt.env.push_back("LD_PRELOAD=" + preloadPath());
  RunResult r = runTraced({"/usr/bin/python3", "-c", "print(2)"}, opt);
  ASSERT_TRUE(WIFEXITED(r.status));
  EXPECT_EQ(WEXITSTATUS(r.status), 0);
  EXPECT_EQ(r.out, "2\n");
  EXPECT_TRUE(r.images.empty());
}

// Per-event cost (not a pass/fail threshold: the machine is shared and noisy). Prints the
// uninstrumented and recorded ns per malloc/free pair; checks every allocation was recorded.
TEST_F(RingTransport, PerEventCost) {
  const long n = 2'000'000;
  RunOptions plain;
  plain.preload = false;
  plain.keepRecords = false;
  RunResult base = runChild("bench:" + std::to_string(n), plain);
  RunOptions traced;
  traced.keepRecords = false;
  RunResult rec = runChild("bench:" + std::to_string(n), traced);
  ASSERT_TRUE(WIFEXITED(rec.status));
  ASSERT_EQ(WEXITSTATUS(rec.status), 0);
  ASSERT_EQ(rec.images.size(), 1u);
  EXPECT_GE(rec.images[0].counts[static_cast<int>(RecordType::Alloc)], static_cast<uint64_t>(n));
  EXPECT_GE(rec.images[0].counts[static_cast<int>(RecordType::Free)], static_cast<uint64_t>(n));
  std::printf("per malloc/free pair (thread CPU): uninstrumented %s ns, recorded %s ns (writers waited %.3f s)\n",
              base.out.substr(0, base.out.find('\n')).c_str(),
              rec.out.substr(0, rec.out.find('\n')).c_str(), rec.images[0].waitNs / 1e9);
}

}  // namespace
