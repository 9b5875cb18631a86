// Bootstrap (real functions, first ring, registration with the recorder) and fork handling.
//
// Bootstrap runs on the first hook call, which comes before any constructor when libstdc++ or
// the loader allocates early (DESIGN "Known traps"), and again from our constructor (a no-op
// then). Everything it does is a system call or a dlsym; dlsym's own calloc, like every call
// made under the guard, is served from the library's own heap (arena.h).
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "arena.h"
#include "python_allocators.h"
#include "python_frames.h"
#include "runtime.h"
#include "unwinder.h"

namespace memledger::preload {

Reals R;
__thread ThreadState t_state;
std::atomic<wire::RingHeader*> g_active{nullptr};
std::atomic<uint32_t> g_ringGen{1};
std::atomic<int> g_bootState{0};
bool g_clockTsc = false;
bool g_rdtscp = false;

namespace {

enum : int { kNotStarted = 0, kRunning = 1, kDone = 2 };
std::atomic<uint32_t> g_bootOwner{0};

// Settings read once at bootstrap (getenv is not safe in a fork child handler; these are).
char g_socketPath[sizeof(sockaddr_un::sun_path)];
bool g_haveDir = false;
bool g_noFollow = false;
uint32_t g_capacity = wire::kDefaultRingSlots;  // lanes 0 and 2..
uint32_t g_mainCapacity = wire::kDefaultMainLaneSlots;  // lane 1
uint32_t g_lanes = wire::kDefaultRingLanes;
uint32_t g_pid = 0;
uint32_t g_forkParent = 0;  // the pid that forked this image (0: not a fork child)
wire::RingHeader* g_ring = nullptr;  // this image's mapping (also after a detach)
char g_exePath[4096];

// Serialises registration and the Hello buffer; only bootstrap and a fork child use them.
alignas(8) char g_helloBuffer[wire::kMaxHelloMessage];

template <typename T>
void resolve(T& slot, const char* name) {
  slot = reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

void resolveReals() {
  resolve(R.calloc, "calloc");
  resolve(R.malloc, "malloc");
  resolve(R.free, "free");
  resolve(R.malloc_usable_size, "malloc_usable_size");
  resolve(R.realloc, "realloc");
  resolve(R.reallocarray, "reallocarray");
  resolve(R.posix_memalign, "posix_memalign");
  resolve(R.aligned_alloc, "aligned_alloc");
  resolve(R.memalign, "memalign");
  resolve(R.valloc, "valloc");
  resolve(R.pvalloc, "pvalloc");
  resolve(R.mmap, "mmap");
  resolve(R.mmap64, "mmap64");
  resolve(R.munmap, "munmap");
  resolve(R.mremap, "mremap");
  resolve(R.dlopen, "dlopen");
  resolve(R.dlclose, "dlclose");
  resolve(R.exit, "exit");
  resolve(R._exit, "_exit");
  resolve(R._Exit, "_Exit");
  resolve(R.wait, "wait");
  resolve(R.waitpid, "waitpid");
  resolve(R.wait4, "wait4");
  resolve(R.waitid, "waitid");
  resolve(R.fork, "fork");
  resolve(R._Fork, "_Fork");
  R.globalMalloc = reinterpret_cast<void* (*)(size_t)>(dlsym(RTLD_DEFAULT, "malloc"));
  R.globalFree = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "free"));
  R.globalPosixMemalign =
      reinterpret_cast<int (*)(void**, size_t, size_t)>(dlsym(RTLD_DEFAULT, "posix_memalign"));
  resolve(R.opNew, "_Znwm");
  resolve(R.opNewArray, "_Znam");
  resolve(R.opNewAligned, "_ZnwmSt11align_val_t");
  resolve(R.opNewArrayAligned, "_ZnamSt11align_val_t");
  resolve(R.opNewNothrow, "_ZnwmRKSt9nothrow_t");
  resolve(R.opNewArrayNothrow, "_ZnamRKSt9nothrow_t");
  resolve(R.opNewAlignedNothrow, "_ZnwmSt11align_val_tRKSt9nothrow_t");
  resolve(R.opNewArrayAlignedNothrow, "_ZnamSt11align_val_tRKSt9nothrow_t");
  // A C program has no libstdc++: those lookups failed, and the program's first dlerror() would
  // return our message.
  dlerror();
}

ssize_t readWhole(const char* path, char* buf, size_t cap) {
  int fd = static_cast<int>(syscall(SYS_open, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return -1;
  size_t used = 0;
  while (used < cap) {
    ssize_t n = syscall(SYS_read, fd, buf + used, cap - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  syscall(SYS_close, fd);
  return static_cast<ssize_t>(used);
}

// The TSC stamps records when it ticks at a constant rate through sleep states (CPUID's
// invariant TSC) and the kernel trusts it as its clocksource (synchronised across CPUs).
// MEMLEDGER_CLOCK=monotonic keeps clock_gettime.
bool tscIsTheClock() {
  const char* forced = getenv("MEMLEDGER_CLOCK");
  if (forced && strcmp(forced, "monotonic") == 0) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
  if (a < 0x80000007u) return false;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
  if (!(d & (1u << 8))) return false;
  __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001u), "c"(0));
  g_rdtscp = (d & (1u << 27)) != 0;
  char source[32];
  ssize_t n = readWhole("/sys/devices/system/clocksource/clocksource0/current_clocksource", source,
                        sizeof(source) - 1);
  return n >= 3 && memcmp(source, "tsc", 3) == 0 && (n == 3 || source[3] == '\n');
}

// A power of two in [lo, hi] from the environment into *out; false (and *out kept) otherwise.
bool envPowerOfTwo(const char* name, uint32_t lo, uint32_t hi, uint32_t* out) {
  const char* text = getenv(name);
  if (!text) return false;
  unsigned long v = strtoul(text, nullptr, 10);
  if (v < lo || v > hi || (v & (v - 1)) != 0) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

void readSettings() {
  const char* dir = getenv(wire::kEnvDir);
  if (!dir || !*dir) return;
  size_t len = strlen(dir);
  if (len + 1 + strlen(wire::kSocketName) + 1 > sizeof(g_socketPath)) {
    writeStderr("memledger: MEMLEDGER_DIR is too long for a socket path, recording disabled\n");
    return;
  }
  memcpy(g_socketPath, dir, len);
  g_socketPath[len] = '/';
  strcpy(g_socketPath + len + 1, wire::kSocketName);
  g_haveDir = true;
  unwind::init();
  const char* nf = getenv(wire::kEnvNoFollow);
  g_noFollow = nf && strcmp(nf, "1") == 0;
  if (envPowerOfTwo(wire::kEnvRingSlots, 64, 1u << 26, &g_capacity)) g_mainCapacity = g_capacity;
  envPowerOfTwo(wire::kEnvRingLanes, 1, wire::kMaxRingLanes, &g_lanes);
  ssize_t n = syscall(SYS_readlink, "/proc/self/exe", g_exePath, sizeof(g_exePath) - 1);
  g_exePath[n > 0 ? n : 0] = '\0';
  g_clockTsc = tscIsTheClock();
}

// Creates this image's ring in a memfd and hands it to the recorder. On success the ring
// becomes active; the socket and the memfd are closed (the mapping stays).
bool registerRing(bool forked) {
  size_t bytes = wire::ringBytes(g_capacity, g_mainCapacity, g_lanes);
  int memfd = static_cast<int>(syscall(SYS_memfd_create, "memledger-ring", MFD_CLOEXEC));
  if (memfd < 0) {
    writeStderr("memledger: memfd_create failed, recording disabled\n");
    return false;
  }
  if (syscall(SYS_ftruncate, memfd, bytes) != 0) {
    syscall(SYS_close, memfd);
    writeStderr("memledger: cannot size the ring, recording disabled\n");
    return false;
  }
  void* base = rawMmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) {
    syscall(SYS_close, memfd);
    writeStderr("memledger: cannot map the ring, recording disabled\n");
    return false;
  }
  auto* h = static_cast<wire::RingHeader*>(base);
  h->magic = wire::kRingMagic;
  h->version = wire::kWireVersion;
  h->capacity = g_capacity;
  h->pid = g_pid;
  h->clock = g_clockTsc ? wire::kClockTsc : wire::kClockMonotonic;
  h->lanes = g_lanes;
  h->mainCapacity = g_mainCapacity;
  h->lanesUsed.store(1, std::memory_order_relaxed);  // lane 0, the shared one
  h->crossLane.store(0, std::memory_order_relaxed);
  uint64_t now = nowNs();
  // A fresh heartbeat: a recorder that never maps the ring is detected 2 s into the first wait.
  h->heartbeat_ns.store(now, std::memory_order_release);

  wire::Hello hello{};
  hello.version = wire::kWireVersion;
  hello.pid = g_pid;
  hello.ppid = forked && g_forkParent ? g_forkParent : static_cast<uint32_t>(syscall(SYS_getppid));
  hello.capacity = g_capacity;
  hello.start_ns = now;
  hello.forked = forked ? 1 : 0;
  size_t room = sizeof(g_helloBuffer) - sizeof(hello);
  size_t exeLen = strlen(g_exePath);
  if (exeLen > room / 2) exeLen = room / 2;
  ssize_t cmd = readWhole("/proc/self/cmdline", g_helloBuffer + sizeof(hello), room - exeLen);
  hello.cmdline_bytes = static_cast<uint32_t>(cmd > 0 ? cmd : 0);
  memcpy(g_helloBuffer, &hello, sizeof(hello));
  memcpy(g_helloBuffer + sizeof(hello) + hello.cmdline_bytes, g_exePath, exeLen);
  size_t msgLen = sizeof(hello) + hello.cmdline_bytes + exeLen;

  int sock = static_cast<int>(syscall(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, g_socketPath, sizeof(addr.sun_path));
  bool sent = false;
  if (sock >= 0 && syscall(SYS_connect, sock, &addr, sizeof(addr)) == 0) {
    ucred peer{};
    socklen_t peerLen = sizeof(peer);
    if (syscall(SYS_getsockopt, sock, SOL_SOCKET, SO_PEERCRED, &peer, &peerLen) == 0)
      noteRecorderPid(static_cast<uint32_t>(peer.pid));
    iovec iov{g_helloBuffer, msgLen};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &memfd, sizeof(int));
    ssize_t n;
    do {
      n = syscall(SYS_sendmsg, sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    sent = n == static_cast<ssize_t>(msgLen);
  }
  if (sock >= 0) syscall(SYS_close, sock);
  syscall(SYS_close, memfd);
  if (!sent) {
    rawMunmap(base, bytes);
    writeStderr("memledger: cannot register with the recorder (MEMLEDGER_DIR/ctl.sock), recording disabled\n");
    return false;
  }
  g_ring = h;
  g_active.store(h, std::memory_order_release);
  return true;
}

void startRecording() {
  readSettings();
  g_pid = static_cast<uint32_t>(syscall(SYS_getpid));
  if (!g_haveDir) return;
  pthread_atfork(nullptr, nullptr, &childAfterFork);
  modulesInit(g_exePath);
  py::init();
  pyalloc::init();
  if (registerRing(false)) {
    t_state.busy = 1;
    modulesRescan();  // the initial modules, first in the ring
    t_state.busy = 0;
  }
}

}  // namespace

void bootstrap() {
  int expected = kNotStarted;
  if (g_bootState.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel)) {
    g_bootOwner.store(currentTid(), std::memory_order_relaxed);
    uint32_t saved = t_state.busy;
    t_state.busy = 1;  // everything bootstrap calls passes through untracked
    resolveReals();
    startRecording();
    t_state.busy = saved;
    g_bootState.store(kDone, std::memory_order_release);
    return;
  }
  // Re-entered from inside bootstrap (dlsym → calloc): the guard is held, the own heap serves it.
  if (g_bootOwner.load(std::memory_order_relaxed) == currentTid()) return;
  while (g_bootState.load(std::memory_order_acquire) != kDone) __builtin_ia32_pause();
}

bool sameProcess() { return static_cast<uint32_t>(syscall(SYS_getpid)) == g_pid; }

void forkCheck() {
  if (static_cast<uint32_t>(syscall(SYS_getpid)) != g_pid) childAfterFork();
}

// Runs in the child before anything else there allocates (atfork child handler, the fork/_Fork
// wrappers, or the first hook that notices a new pid): the parent's ring must not see a single
// record of the child.
void childAfterFork() {
  uint32_t pid = static_cast<uint32_t>(syscall(SYS_getpid));
  t_state.inFork = 0;
  if (pid == g_pid) return;  // already switched (the handler and the wrapper both call this)
  g_active.store(nullptr, std::memory_order_release);
  g_detachedRing = nullptr;  // the parent's detach is not the child's
  // The forking process is the parent, even if it has exited by the time the child registers
  // (getppid() would then name the subreaper, i.e. the recorder).
  g_forkParent = g_pid;
  g_pid = pid;
  t_state.tid = 0;
  t_state.laneRing = nullptr;  // a new ring may be mapped where the parent's was
  t_state.lane = nullptr;
  uint32_t saved = t_state.busy;
  t_state.busy = 1;
  if (g_ring) {
    rawMunmap(g_ring, wire::ringBytes(g_ring->capacity, g_ring->mainCapacity, g_ring->lanes));
    g_ring = nullptr;
  }
  g_ringGen.fetch_add(1, std::memory_order_relaxed);
  modulesResetAfterFork();
  resetCachesAfterFork();
  arena::resetAfterFork();
  unwind::resetAfterFork();
  py::resetAfterFork();
  if (g_haveDir && !g_noFollow && registerRing(true)) modulesRescan();
  t_state.busy = saved;
}

void* rawMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r < 0 && r > -4096) return MAP_FAILED;
  noteOwnMapping(reinterpret_cast<void*>(r), len);
  return reinterpret_cast<void*>(r);
}

int rawMunmap(void* addr, size_t len) {
  noteOwnUnmap(addr, len);
  return static_cast<int>(syscall(SYS_munmap, addr, len));
}

uint32_t fetchTid() {
  t_state.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  return t_state.tid;
}

uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void writeStderr(const char* msg) {
  size_t len = strlen(msg);
  while (len > 0) {
    ssize_t n = syscall(SYS_write, 2, msg, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    msg += n;
    len -= static_cast<size_t>(n);
  }
}

namespace {
// The constructor: bootstrap if no hook ran yet, and with MEMLEDGER_NO_FOLLOW=1 hide the
// recorder from exec'd descendants (fork children see g_noFollow and do not register).
__attribute__((constructor)) void onLoad() {
  bootstrap();
  if (g_noFollow) unsetenv(wire::kEnvDir);
}
}  // namespace

}  // namespace memledger::preload
