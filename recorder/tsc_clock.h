// Maps the time-stamp counter values that rings stamp their records with (wire.h RingClock) to
// CLOCK_MONOTONIC nanoseconds.
//
// The line goes through a (tsc, ns) pair taken when the recorder started and one taken at the
// latest conversion of a batch: every record being converted was written before that second
// pair, so it lies between the two points and its error is at most the jitter of reading the two
// clocks one after the other (tens of ns), however short the span. Later pairs only make the
// slope better; the conversion never needs the TSC's nominal frequency.
#pragma once

#include <atomic>
#include <cstdint>

namespace memledger::recorder {

class TscClock {
 public:
  static TscClock& instance();  // the first pair is read on first use

  // Reads a fresh pair (call before converting a batch of records).
  void refresh();
  uint64_t toNs(uint64_t tsc) const;

 private:
  TscClock();
  uint64_t tsc0_, ns0_;
  std::atomic<double> nsPerTick_;
};

}  // namespace memledger::recorder
