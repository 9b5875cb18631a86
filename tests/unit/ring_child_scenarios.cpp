// Programs the transport tests trace. The unit-test binary re-executes itself with
// MEMLEDGER_RINGTEST_CHILD=<scenario>; a static initializer runs the scenario and exits before
// GoogleTest starts. Sizes are unique so the tests can find each allocation in the ring.
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace {

void* volatile g_sink;

void callMark(const char* name) {
  // The C API as a program without the header would reach it (memledger.h's weak refs do the same).
  using Mark = void (*)(const char*);
  if (auto mark = reinterpret_cast<Mark>(dlsym(RTLD_DEFAULT, "memledger_mark"))) mark(name);
}

__attribute__((noinline)) void* allocateSite(size_t n) {
  void* p = malloc(n);
  memset(p, 1, n);
  g_sink = p;
  return p;
}

// 40 frames deep: a Stack record spanning many continuation slots.
__attribute__((noinline)) void deepAlloc(int depth) {
  if (depth == 0) {
    allocateSite(98765);
    return;
  }
  deepAlloc(depth - 1);
  g_sink = nullptr;  // not a tail call
}

int allocScenario() {
  deepAlloc(40);
  callMark("phase-x");
  void* p = allocateSite(123456);
  free(p);
  void* c = calloc(3, 5000);
  g_sink = c;
  void* r1 = malloc(1000);
  g_sink = r1;
  void* r2 = realloc(r1, 100000);
  g_sink = r2;
  free(r2);
  void* arr = ::operator new[](77777);
  g_sink = arr;
  ::operator delete[](arr);
  void* al = ::operator new(44444, std::align_val_t(256));
  g_sink = al;
  ::operator delete(al, std::align_val_t(256));
  void* pm = nullptr;
  if (posix_memalign(&pm, 4096, 55555) == 0) free(pm);
  void* m = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(m, 1 << 20);
  using Custom = void (*)(const void*, size_t);
  using CustomFree = void (*)(const void*);
  auto ca = reinterpret_cast<Custom>(dlsym(RTLD_DEFAULT, "memledger_alloc"));
  auto cf = reinterpret_cast<CustomFree>(dlsym(RTLD_DEFAULT, "memledger_free"));
  if (ca && cf) {
    ca(reinterpret_cast<void*>(0x123400), 999);
    cf(reinterpret_cast<void*>(0x123400));
  }
  free(nullptr);
  exit(7);
}

int forkScenario() {
  g_sink = malloc(111111);
  pid_t child = fork();
  if (child == 0) {
    g_sink = malloc(222222);
    _exit(3);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 3) return 1;
  printf("child %d\n", static_cast<int>(child));
  fflush(stdout);
  return 0;
}

int segvScenario() {
  allocateSite(333333);
  raise(SIGSEGV);
  return 0;
}

__attribute__((noinline)) void thrower(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  thrower(depth - 1);
  g_sink = nullptr;  // keeps the recursion from becoming a tail call
}

// The program's unwinding must stay libgcc's (docs/platform.md: a linked libunwind would take over).
int cxxScenario() {
  try {
    thrower(20);
    return 2;
  } catch (const std::exception& e) {
    if (strcmp(e.what(), "deep") != 0) return 3;
  }
  void* frames[16];
  if (backtrace(frames, 16) < 2) return 4;
  Dl_info info{};
  void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
  if (!raise || !dladdr(raise, &info) || !strstr(info.dli_fname, "libgcc_s")) {
    printf("_Unwind_RaiseException from %s\n", raise && info.dli_fname ? info.dli_fname : "?");
    return 5;
  }
  void* bt = dlsym(RTLD_DEFAULT, "backtrace");
  if (!bt || !dladdr(bt, &info) || !strstr(info.dli_fname, "libc.so")) return 6;
  printf("ok\n");
  return 0;
}

// Allocates in a thread_local destructor, after the thread's own cleanup ran.
struct LateAllocator {
  bool armed = false;
  ~LateAllocator() {
    if (!armed) return;
    void* p = malloc(4321);
    g_sink = p;
    free(p);
  }
};
thread_local LateAllocator t_late;

void* threadBody(void* arg) {
  t_late.armed = true;
  size_t size = reinterpret_cast<size_t>(arg);
  for (int i = 0; i < 5000; ++i) {
    void* p = malloc(size);
    g_sink = p;
    free(p);
  }
  return nullptr;
}

int threadsScenario() {
  pthread_t t[4];
  for (size_t i = 0; i < 4; ++i) pthread_create(&t[i], nullptr, threadBody, reinterpret_cast<void*>(1000 + i));
  for (pthread_t& th : t) pthread_join(th, nullptr);
  return 0;
}

// Blocks allocated on one thread and freed on another, all the time: three producers hand
// blocks to three consumers through a small queue (consumers allocate and free too). Freed
// blocks go back to the arena of the thread that made them, so addresses are handed out again
// across threads: the lanes' merge must keep every free before the allocation that reuses its
// address, and every allocation before the free on another thread (wire.h).
struct Handoff {
  static constexpr int kDepth = 64;
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
  void* items[kDepth];
  int head = 0, count = 0, producersLeft = 3;
};
Handoff g_handoff;
constexpr int kHandoffBlocks = 60000;  // per producer

void* producerBody(void* arg) {
  size_t base = reinterpret_cast<size_t>(arg);
  Handoff& q = g_handoff;
  for (int i = 0; i < kHandoffBlocks; ++i) {
    void* p = malloc(base + static_cast<size_t>(i % 7) * 16);
    static_cast<char*>(p)[0] = 1;
    pthread_mutex_lock(&q.mu);
    while (q.count == Handoff::kDepth) pthread_cond_wait(&q.changed, &q.mu);
    q.items[(q.head + q.count++) % Handoff::kDepth] = p;
    pthread_cond_broadcast(&q.changed);
    pthread_mutex_unlock(&q.mu);
  }
  pthread_mutex_lock(&q.mu);
  --q.producersLeft;
  pthread_cond_broadcast(&q.changed);
  pthread_mutex_unlock(&q.mu);
  return nullptr;
}

void* consumerBody(void*) {
  Handoff& q = g_handoff;
  for (;;) {
    pthread_mutex_lock(&q.mu);
    while (q.count == 0 && q.producersLeft > 0) pthread_cond_wait(&q.changed, &q.mu);
    if (q.count == 0) {
      pthread_mutex_unlock(&q.mu);
      return nullptr;
    }
    void* p = q.items[q.head];
    q.head = (q.head + 1) % Handoff::kDepth;
    --q.count;
    pthread_cond_broadcast(&q.changed);
    pthread_mutex_unlock(&q.mu);
    free(p);
    void* own = malloc(48);
    g_sink = own;
    free(own);
  }
}

int handoffScenario() {
  pthread_t t[6];
  for (size_t i = 0; i < 3; ++i) pthread_create(&t[i], nullptr, producerBody, reinterpret_cast<void*>(32 + 8 * i));
  for (size_t i = 3; i < 6; ++i) pthread_create(&t[i], nullptr, consumerBody, nullptr);
  for (pthread_t& th : t) pthread_join(th, nullptr);
  return 0;
}

// Four call sites, so the per-thread stack cache is exercised as in the baseline of docs/platform.md.
__attribute__((noinline)) void* site(int which, size_t n) {
  switch (which) {
    case 0: return malloc(n);
    case 1: return malloc(n + 16);
    case 2: return malloc(n + 32);
    default: return malloc(n + 48);
  }
}

int benchScenario(long n) {
  // Thread CPU time: the machine is shared, wall time mostly measures the neighbours.
  timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; ++i) {
    void* p = site(static_cast<int>(i & 3), 64);
    g_sink = p;
    free(p);
  }
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
  printf("%.1f\n", ns / static_cast<double>(n));
  fflush(stdout);
  return 0;
}

// A library loaded and unloaded at run time; its allocations' stacks start inside it.
int dlopenScenario() {
  void* h = dlopen("libexpat.so.1", RTLD_NOW);
  if (!h) return 2;
  using Create = void* (*)(const char*);
  using Destroy = void (*)(void*);
  auto create = reinterpret_cast<Create>(dlsym(h, "XML_ParserCreate"));
  auto destroy = reinterpret_cast<Destroy>(dlsym(h, "XML_ParserFree"));
  if (!create || !destroy) return 3;
  void* parser = create(nullptr);
  if (!parser) return 4;
  destroy(parser);
  if (dlclose(h) != 0) return 5;
  g_sink = malloc(31337);
  return 0;
}

// A signal handler that allocates (wrongly, but programs do), firing while the main thread is
// inside the hooks most of the time.
volatile sig_atomic_t g_handled = 0;
void allocatingHandler(int) {
  void* p = malloc(777);
  g_sink = p;
  free(p);
  g_handled = g_handled + 1;
}

int signalsScenario() {
  struct sigaction sa {};
  sa.sa_handler = allocatingHandler;
  sigaction(SIGALRM, &sa, nullptr);
  itimerval every{{0, 200}, {0, 200}};
  setitimer(ITIMER_REAL, &every, nullptr);
  for (int i = 0; i < 300000 || g_handled < 50; ++i) {
    void* p = malloc(555);
    g_sink = p;
    free(p);
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);
  printf("handled\n");
  return 0;
}

// A vfork child whose exec fails and that _exits, as Python's subprocess does: its exit status
// is not the parent's.
int vforkScenario() {
  pid_t pid = vfork();
  if (pid == 0) {
    execl("/nonexistent/program", "x", static_cast<char*>(nullptr));
    _exit(42);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 42 ? 9 : 1;
}

int runScenario(const std::string& name) {
  if (name == "vfork") return vforkScenario();
  if (name == "signals") return signalsScenario();
  if (name == "dlopen") return dlopenScenario();
  if (name == "alloc") return allocScenario();
  if (name == "fork") return forkScenario();
  if (name == "segv") return segvScenario();
  if (name == "cxx") return cxxScenario();
  if (name == "threads") return threadsScenario();
  if (name == "handoff") return handoffScenario();
  if (name.rfind("bench:", 0) == 0) return benchScenario(std::atol(name.c_str() + 6));
  return 100;
}

struct ChildEntry {
  ChildEntry() {
    if (const char* s = getenv("MEMLEDGER_RINGTEST_CHILD")) {
      int rc = runScenario(s);
      fflush(stdout);
      exit(rc);
    }
  }
} g_childEntry;

}  // namespace
