// Writing side of the ring (wire.h): reserve n consecutive slots of this thread's lane, fill,
// publish each slot.
#pragma once

#include <cstring>

#include "runtime.h"

namespace memledger::preload::ring {

// Stamps the reservation [i, i + n) and publishes it: the first record's stamp is in its slot
// before the head that covers it is (wire.h: the reader bounds its merge with it).
inline void stampAndPublish(wire::RingHeader* h, wire::LaneHeader* lane, wire::Record* records,
                            uint32_t capacity, uint64_t i, uint32_t n, Reservation* r) {
  r->records = records;
  r->mask = capacity - 1;
  r->index = i;
  r->ts = stampNow(h->crossLane.load(std::memory_order_relaxed) != 0);
  __atomic_store_n(&records[i & r->mask].ts, r->ts, __ATOMIC_RELAXED);
  lane->head.store(i + n, std::memory_order_release);
}

// The same on this thread's own lane, whose head it keeps.
inline void publishOwn(wire::RingHeader* h, wire::LaneHeader* lane, uint64_t i, uint32_t n,
                       Reservation* r) {
  stampAndPublish(h, lane, t_state.laneRecords, t_state.laneCapacity, i, n, r);
  t_state.laneHead = i + n;
  // The slots a few records on are this thread's next ones: ask for their cache line now
  // (for writing), so that store does not wait for the line the reader last held.
  __builtin_prefetch(&r->records[(i + n + 4) & r->mask], 1, 3);
}

// Everything reserve() does (claiming a lane, the shared lane 0, reading the tail, waiting,
// faulting pages in ahead).
bool reserveSlow(wire::RingHeader* h, uint32_t n, Reservation* r);

// Reserves n consecutive slots on this thread's lane of `h` (claiming a lane on the first call
// for a ring), waits until all of them are free, stamps the first record and publishes the new
// head. Returns false when the ring is (or just became) detached: nothing was reserved.
// Inline where the slots are known free on the thread's own lane (nearly every call): as a
// call its entry and exit were ~20 instructions of a reservation's ~50.
inline bool reserve(wire::RingHeader* h, uint32_t n, Reservation* r) {
  wire::LaneHeader* lane = t_state.lane;
  uint64_t i = t_state.laneHead;
  if (ML_LIKELY(t_state.laneRing == h && lane && i + n <= t_state.roomUntil)) {
    publishOwn(h, lane, i, n, r);
    return true;
  }
  return reserveSlow(h, n, r);
}

// This thread's lane goes back to the ring's pool (thread exit).
void releaseLane();

inline wire::Record& slot(const Reservation& r, uint64_t index) {
  return r.records[index & r.mask];
}

// Fills every field but the publication stamp, then publishes: the release store orders the
// fields before the stamp for the reader's acquire load. The record carries the reservation's
// time stamp (wire.h: taken before the head that covers it was published).
inline void write(const Reservation& res, uint64_t index, wire::RecordType type,
                  wire::AllocKind kind, uint16_t aux, uint64_t a, uint64_t b, uint64_t c,
                  uint32_t tag = 0) {
  wire::Record& r = slot(res, index);
  r.type = type;
  r.kind = kind;
  r.aux = aux;
  r.tid = currentTid();
  r.tag = tag;
  r.ts = res.ts;
  r.a = a;
  r.b = b;
  r.c = c;
  r.seq.store(static_cast<uint32_t>(index + 1), std::memory_order_release);
}

// Continuation slots: 44 payload bytes after the stamp, stamped with wire::continuationStamp.
inline void writeContinuations(const Reservation& res, uint64_t first, const void* bytes, size_t len) {
  const char* src = static_cast<const char*>(bytes);
  for (uint64_t i = first; len > 0; ++i) {
    wire::Record& r = slot(res, i);
    size_t n = len < wire::kContinuationBytes ? len : wire::kContinuationBytes;
    char* payload = reinterpret_cast<char*>(&r) + sizeof(uint32_t);
    std::memcpy(payload, src, n);
    if (n < wire::kContinuationBytes) std::memset(payload + n, 0, wire::kContinuationBytes - n);
    r.seq.store(wire::continuationStamp(i), std::memory_order_release);
    src += n;
    len -= n;
  }
}

// Stack frames: kFramesPerContinuation (5) whole frames per continuation slot, as wire.h counts
// them (continuationSlotsForFrames); the last 4 payload bytes of each slot stay unused.
inline void writeFrameContinuations(const Reservation& res, uint64_t first, const uint64_t* ips,
                                    size_t n) {
  for (uint64_t i = first; n > 0; ++i) {
    size_t k = n < wire::kFramesPerContinuation ? n : wire::kFramesPerContinuation;
    wire::Record& r = slot(res, i);
    char* payload = reinterpret_cast<char*>(&r) + sizeof(uint32_t);
    std::memcpy(payload, ips, k * sizeof(uint64_t));
    std::memset(payload + k * sizeof(uint64_t), 0, wire::kContinuationBytes - k * sizeof(uint64_t));
    r.seq.store(wire::continuationStamp(i), std::memory_order_release);
    ips += k;
    n -= k;
  }
}

// Sets `detached`, prints the one stderr line, stops recording in this process image.
void detach(wire::RingHeader* h);

}  // namespace memledger::preload::ring
