// Lane reservation and the full-lane wait (exact mode): a writer never drops a record while the
// recorder is alive; it waits, and the time waited is accounted in wait_ns for the recording.
#include "ring_writer.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace memledger::preload::ring {
namespace {

// A recorder that has not refreshed its heartbeat for this long while a writer waits is gone.
constexpr uint64_t kHeartbeatTimeoutNs = 2'000'000'000ull;
constexpr int kSpinRounds = 256;

std::atomic<uint32_t> g_detachReported{0};

bool roomFor(const wire::LaneHeader* lane, uint32_t capacity, uint64_t end) {
  return end - lane->tail.load(std::memory_order_acquire) <= capacity;
}

bool waitForRoom(wire::RingHeader* h, const wire::LaneHeader* lane, uint32_t capacity, uint64_t end,
                 int spinRounds = kSpinRounds) {
  uint64_t started = nowNs();
  for (int i = 0; i < spinRounds; ++i) {
    __builtin_ia32_pause();
    if (roomFor(lane, capacity, end)) {
      h->wait_ns.fetch_add(nowNs() - started, std::memory_order_relaxed);
      return true;
    }
  }
  // Sleep with the raw syscall: nanosleep is not hooked, but it is a cancellation point in libc.
  struct timespec pause = {0, 50'000};
  while (!roomFor(lane, capacity, end)) {
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

// A lane's first lap touches fresh shared pages, one page fault each (~5 us here: the memfd's
// page is allocated, zeroed and charged). Faulting them in ahead, kPopulateBytes per call, costs
// one system call for 64 pages. Returns the first slot not known to be mapped (UINT64_MAX: all).
constexpr uint64_t kPopulateBytes = 256 * 1024;
uint64_t populateAhead(wire::Record* records, uint32_t capacity, uint64_t from, uint64_t need) {
  if (from >= capacity) return UINT64_MAX;  // past the first lap: every page was touched
  const uint64_t page = 4096;
  uint64_t base = reinterpret_cast<uint64_t>(records);
  uint64_t start = (base + from * sizeof(wire::Record)) & ~(page - 1);
  uint64_t end = base + static_cast<uint64_t>(capacity) * sizeof(wire::Record);
  uint64_t want = (base + need * sizeof(wire::Record) + kPopulateBytes) & ~(page - 1);
  if (want > end) want = end;
  if (want > start && syscall(SYS_madvise, start, want - start, MADV_POPULATE_WRITE) != 0)
    return UINT64_MAX;  // an older kernel: let the stores fault as before
  uint64_t slots = (want - base) / sizeof(wire::Record);
  return slots >= capacity ? UINT64_MAX : slots;
}

// A lane of its own for this thread on ring `h`, or none (lane 0 is shared) when all are taken.
void claimLane(wire::RingHeader* h) {
  ensureThreadExitHook();
  t_state.laneRing = h;
  t_state.lane = nullptr;
  t_state.roomUntil = 0;
  t_state.populatedUntil = 0;
  const uint32_t lanes = h->lanes;
  for (uint32_t l = 1; l < lanes; ++l) {
    wire::LaneHeader* lane = wire::laneHeader(h, l);
    uint32_t free = 0;
    if (lane->owner.load(std::memory_order_relaxed) != 0 ||
        !lane->owner.compare_exchange_strong(free, 1, std::memory_order_acq_rel)) {
      continue;
    }
    // The reader must know of the lane before any record in it can be visible.
    uint32_t used = h->lanesUsed.load(std::memory_order_relaxed);
    while (used < l + 1 &&
           !h->lanesUsed.compare_exchange_weak(used, l + 1, std::memory_order_acq_rel)) {
    }
    if (l != 1) h->crossLane.store(1, std::memory_order_relaxed);  // before any record of ours
    t_state.lane = lane;
    t_state.laneRecords = wire::laneRecords(h, h->capacity, h->mainCapacity, lanes, l);
    t_state.laneCapacity = wire::laneCapacity(h->capacity, h->mainCapacity, l);
    t_state.laneHead = lane->head.load(std::memory_order_relaxed);
    t_state.populatedUntil = t_state.laneHead;
    return;
  }
  h->crossLane.store(1, std::memory_order_relaxed);  // lane 0: shared with whoever else comes
}

// Lane 0: its writers take turns under its lock, so its slots are stamped in index order.
bool reserveShared(wire::RingHeader* h, uint32_t n, Reservation* r) {
  wire::LaneHeader* lane = wire::laneHeader(h, 0);
  for (int spins = 0; lane->lock.exchange(1, std::memory_order_acquire) != 0; ++spins) {
    if (spins < 1000) {
      __builtin_ia32_pause();
    } else {
      syscall(SYS_sched_yield);
      spins = 0;
    }
  }
  uint64_t i = lane->head.load(std::memory_order_relaxed);
  const uint32_t capacity = h->capacity;
  bool ok = roomFor(lane, capacity, i + n) || waitForRoom(h, lane, capacity, i + n);
  if (ok) {
    stampAndPublish(h, lane, wire::laneRecords(h, capacity, h->mainCapacity, h->lanes, 0),
                    capacity, i, n, r);
  }
  lane->lock.store(0, std::memory_order_release);
  return ok;
}

}  // namespace

bool reserveSlow(wire::RingHeader* h, uint32_t n, Reservation* r) {
  if (ML_UNLIKELY(t_state.laneRing != h)) claimLane(h);
  wire::LaneHeader* lane = t_state.lane;
  bool ok;
  if (ML_UNLIKELY(!lane)) {
    ok = reserveShared(h, n, r);
  } else {
    uint64_t i = t_state.laneHead;
    ok = true;
    if (ML_UNLIKELY(i + n > t_state.roomUntil)) {
      uint64_t tail = lane->tail.load(std::memory_order_acquire);
      const uint32_t capacity = t_state.laneCapacity;
      if (i + n - tail > capacity) {
        // Full: wait until an eighth of the lane is free, not just these n slots. Waking for
        // each batch the recorder hands back (256 slots) made a writer sleep and wake again
        // every few hundred records, and each wake-up took the recorder's core for a while.
        // No spinning first: an eighth of a lane takes the recorder about a millisecond, and on
        // a machine with fewer cores than threads a spin only takes cycles it needs.
        ok = waitForRoom(h, lane, capacity, i + n + capacity / 8, 0);
        tail = lane->tail.load(std::memory_order_acquire);
      }
      t_state.roomUntil = tail + capacity;
      if (ML_UNLIKELY(i + n > t_state.populatedUntil))
        t_state.populatedUntil = populateAhead(t_state.laneRecords, capacity, t_state.populatedUntil, i + n);
      if (t_state.roomUntil > t_state.populatedUntil) t_state.roomUntil = t_state.populatedUntil;
    }
    if (ML_LIKELY(ok)) {
      publishOwn(h, lane, i, n, r);
    }
  }
  if (ML_UNLIKELY(!ok)) h->lost.fetch_add(1, std::memory_order_relaxed);  // the record it was for
  return ok;
}

void releaseLane() {
  if (t_state.lane) t_state.lane->owner.store(0, std::memory_order_release);
  t_state.lane = nullptr;
  t_state.laneRing = nullptr;
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
