// Ring reservation and the full-ring wait (exact mode): a writer never drops a record while the
// recorder is alive; it waits, and the time waited is accounted in wait_ns for the recording.
#include "ring_writer.h"

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace memledger::preload::ring {
namespace {

// A recorder that has not refreshed its heartbeat for this long while a writer waits is gone.
constexpr uint64_t kHeartbeatTimeoutNs = 2'000'000'000ull;
constexpr int kSpinRounds = 256;

std::atomic<uint32_t> g_detachReported{0};

bool roomFor(wire::RingHeader* h, uint64_t end) {
  return end - h->tail.load(std::memory_order_acquire) <= h->capacity;
}

bool waitForRoom(wire::RingHeader* h, uint64_t end) {
  uint64_t started = nowNs();
  for (int i = 0; i < kSpinRounds; ++i) {
    __builtin_ia32_pause();
    if (roomFor(h, end)) {
      h->wait_ns.fetch_add(nowNs() - started, std::memory_order_relaxed);
      return true;
    }
  }
  // Sleep with the raw syscall: nanosleep is not hooked, but it is a cancellation point in libc.
  struct timespec pause = {0, 50'000};
  while (!roomFor(h, end)) {
    if (h->detached.load(std::memory_order_relaxed)) return false;
    uint64_t now = nowNs();
    uint64_t beat = h->heartbeat_ns.load(std::memory_order_acquire);
    if (now > beat && now - beat > kHeartbeatTimeoutNs) {
      h->wait_ns.fetch_add(now - started, std::memory_order_relaxed);
      detach(h);
      return false;
    }
    syscall(SYS_nanosleep, &pause, nullptr);
  }
  h->wait_ns.fetch_add(nowNs() - started, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool reserve(wire::RingHeader* h, uint32_t n, uint64_t* start) {
  uint64_t s = h->head.fetch_add(n, std::memory_order_relaxed);
  *start = s;
  // The slots a few records on are most likely this thread's next ones: ask for their cache line
  // now (for writing), so that store does not wait for the line the reader last held.
  __builtin_prefetch(&slot(h, s + n + 4), 1, 3);
  if (ML_LIKELY(t_state.roomRing == h && s + n <= t_state.roomUntil)) return true;
  uint64_t tail = h->tail.load(std::memory_order_acquire);
  if (ML_LIKELY(s + n - tail <= h->capacity)) {
    t_state.roomRing = h;
    t_state.roomUntil = tail + h->capacity;
    return true;
  }
  if (waitForRoom(h, s + n)) return true;
  h->lost.fetch_add(1, std::memory_order_relaxed);  // the record this reservation was for
  return false;
}

void detach(wire::RingHeader* h) {
  h->detached.store(1, std::memory_order_release);
  g_detachedRing = h;
  wire::RingHeader* expected = h;
  g_active.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  if (g_detachReported.exchange(1) == 0) writeStderr("memledger: recorder gone, recording stopped\n");
}

}  // namespace memledger::preload::ring

namespace memledger::preload {
wire::RingHeader* g_detachedRing = nullptr;
void noteLost() {
  if (wire::RingHeader* h = g_detachedRing) h->lost.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace memledger::preload
