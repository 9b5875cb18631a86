// The leak-kind scan at a normal exit (docs/leak-kinds.md). The scan itself runs in the
// recorder, which knows every live block exactly and reads this process's memory with
// process_vm_readv; this file only (1) keeps the table of the library's own mappings, which are
// never roots, and (2) at exit, after the program's atexit handlers and destructors, saves the
// exiting thread's registers onto its stack, asks for the scan and waits for the answer.
//
// Where: this library's destructor. exit() and a return from main both run it (after the
// program's atexit handlers and the destructors of the objects finalized before this library);
// _exit, _Exit, exec and a fatal signal do not, so those processes are not scanned ("not
// classified"). Nothing of the program's changes: no allocation, no output, the exit status is
// the program's; the wait is bounded by the recorder's heartbeat.
#include <linux/futex.h>
#include <cerrno>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

namespace memledger::preload {

namespace {
wire::OwnRange g_own[wire::kMaxOwnRanges];
std::atomic<uint32_t> g_ownUsed{0};
uint32_t g_recorderPid = 0;  // the recorder (SO_PEERCRED of the control socket), for Yama
bool g_scanned = false;
}  // namespace

void noteOwnMapping(const void* p, size_t len) {
  if (!p || !len) return;
  uint64_t s = reinterpret_cast<uint64_t>(p);
  uint32_t used = g_ownUsed.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used && i < wire::kMaxOwnRanges; ++i) {  // reuse a freed entry
    uint64_t zero = 0;
    if (g_own[i].start.load(std::memory_order_relaxed) == 0 &&
        g_own[i].start.compare_exchange_strong(zero, s, std::memory_order_acq_rel)) {
      g_own[i].end.store(s + len, std::memory_order_release);
      return;
    }
  }
  uint32_t i = g_ownUsed.fetch_add(1, std::memory_order_acq_rel);
  if (i >= wire::kMaxOwnRanges) return;  // full: such a mapping is then scanned as a root
  g_own[i].end.store(s + len, std::memory_order_relaxed);
  g_own[i].start.store(s, std::memory_order_release);
}

void noteOwnUnmap(const void* p, size_t len) {
  (void)len;
  uint64_t s = reinterpret_cast<uint64_t>(p);
  uint32_t used = g_ownUsed.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used && i < wire::kMaxOwnRanges; ++i)
    if (g_own[i].start.load(std::memory_order_relaxed) == s) {
      g_own[i].end.store(0, std::memory_order_relaxed);
      g_own[i].start.store(0, std::memory_order_release);
    }
}

void noteRecorderPid(uint32_t pid) { g_recorderPid = pid; }

namespace {

long futexWait(std::atomic<uint32_t>* word, uint32_t expected, long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

// noinline: its frame, with the saved registers, lies between the stack pointer it sends and
// the stack's top, so the recorder scans it as part of the stack.
__attribute__((noinline)) void askAndWait(wire::RingHeader* h, wire::ScanBox* box) {
  // Every general register as the program left it (the callee-saved ones still hold the caller's
  // values here); the recorder finds them on the stack like any other word.
  volatile uint64_t regs[16];
  __asm__ volatile(
      "mov %%rbx, 0(%0)\n\tmov %%rbp, 8(%0)\n\tmov %%r12, 16(%0)\n\tmov %%r13, 24(%0)\n\t"
      "mov %%r14, 32(%0)\n\tmov %%r15, 40(%0)\n\tmov %%rax, 48(%0)\n\tmov %%rcx, 56(%0)\n\t"
      "mov %%rdx, 64(%0)\n\tmov %%rsi, 72(%0)\n\tmov %%rdi, 80(%0)\n\tmov %%r8, 88(%0)\n\t"
      "mov %%r9, 96(%0)\n\tmov %%r10, 104(%0)\n\tmov %%r11, 112(%0)\n\t"
      :
      : "r"(regs)
      : "memory");
  uint64_t sp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
  regs[15] = sp;
  box->state.store(1, std::memory_order_release);
  if (!enter()) {
    box->state.store(0, std::memory_order_relaxed);
    return;
  }
  recordSimple(wire::RecordType::LeakScan, sp & ~uint64_t{7}, reinterpret_cast<uint64_t>(&g_own[0]),
               g_ownUsed.load(std::memory_order_acquire) < wire::kMaxOwnRanges
                   ? g_ownUsed.load(std::memory_order_acquire)
                   : wire::kMaxOwnRanges,
               0);
  leave();
  // Bounded: the recorder answers, or its heartbeat (its own thread, refreshed every 100 ms
  // also while it scans) goes stale for 2 s, or 10 minutes pass.
  uint64_t start = nowNs();
  while (box->state.load(std::memory_order_acquire) == 1) {
    futexWait(&box->state, 1, 100);
    uint64_t now = nowNs();
    uint64_t beat = h->heartbeat_ns.load(std::memory_order_acquire);
    if (h->detached.load(std::memory_order_relaxed) || (now > beat && now - beat > 2'000'000'000ull) ||
        now - start > 600'000'000'000ull)
      break;
  }
  __asm__ volatile("" : : "r"(regs) : "memory");
}

__attribute__((destructor)) void scanAtExit() {
  if (g_scanned || !bootstrapped() || t_state.busy) return;
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  if (!h || !sameProcess()) return;
  wire::ScanBox* box = wire::scanBox(h);
  // The recorder sets the mode when it maps the ring; a process that ends before that waits for
  // it (at most 1 s), then asks only when told to (mode 2: `--scan off`, or a reader that does
  // not answer scans).
  for (int i = 0; i < 1000 && box->mode.load(std::memory_order_acquire) == 0; ++i) {
    timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  if (box->mode.load(std::memory_order_acquire) != 1) return;
  g_scanned = true;
  int savedErrno = errno;
#ifdef PR_SET_PTRACER
  // Yama (ptrace_scope 1) lets only ancestors read a process's memory; the recorder is one unless
  // the process was reparented elsewhere. Harmless where Yama is absent (EINVAL).
  if (g_recorderPid) prctl(PR_SET_PTRACER, static_cast<unsigned long>(g_recorderPid), 0, 0, 0);
#endif
  askAndWait(h, box);
  errno = savedErrno;
}

}  // namespace
}  // namespace memledger::preload
