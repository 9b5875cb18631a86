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

uint64_t monotonicNs();  // CLOCK_MONOTONIC now, in nanoseconds: the recorder's one clock read

class TscClock {
 public:
  static TscClock& instance();  // the first pair is read on first use

  // The mapping at one moment, copied out so a batch converts without touching shared state.
  struct Line {
    uint64_t tsc0 = 0, ns0 = 0;
    double nsPerTick = 0;
    uint64_t toNs(uint64_t tsc) const {
      double ns = static_cast<double>(ns0) + static_cast<double>(static_cast<int64_t>(tsc - tsc0)) * nsPerTick;
      return ns <= 0 ? 0 : static_cast<uint64_t>(ns);
    }
  };

  // Reads a fresh pair (call before converting a batch of records) and returns the line.
  Line refresh();
  uint64_t toNs(uint64_t tsc) const { return line().toNs(tsc); }
  Line line() const { return Line{tsc0_, ns0_, nsPerTick_.load(std::memory_order_relaxed)}; }

 private:
  TscClock();
  uint64_t tsc0_, ns0_;
  std::atomic<double> nsPerTick_;
};

}  // namespace memledger::recorder
