#include "tsc_clock.h"

#include <time.h>
#include <x86intrin.h>

namespace memledger::recorder {

uint64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// A pair read as close together as the two clocks allow: the TSC read twice around the clock
// read, the tightest of a few tries kept.
void readPair(uint64_t* tsc, uint64_t* ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 4; ++i) {
    uint64_t before = __rdtsc();
    uint64_t t = monotonicNs();
    uint64_t after = __rdtsc();
    if (i == 0 || after - before < best) {
      best = after - before;
      *tsc = before + (after - before) / 2;
      *ns = t;
    }
  }
}

}  // namespace

TscClock& TscClock::instance() {
  static TscClock clock;
  return clock;
}

TscClock::TscClock() : nsPerTick_(0.0) {
  readPair(&tsc0_, &ns0_);
  // A first slope over 200 µs (good to about one part in a thousand) for records converted
  // before the next refresh, e.g. ones written before this first pair.
  uint64_t until = ns0_ + 200000;
  while (monotonicNs() < until) _mm_pause();
  refresh();
}

TscClock::Line TscClock::refresh() {
  uint64_t tsc, ns;
  readPair(&tsc, &ns);
  if (ns > ns0_ && tsc > tsc0_)
    nsPerTick_.store(static_cast<double>(ns - ns0_) / static_cast<double>(tsc - tsc0_),
                     std::memory_order_relaxed);
  return line();
}

}  // namespace memledger::recorder
