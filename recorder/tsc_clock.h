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
  // Integer arithmetic: every record is converted, and the unsigned <-> double conversions of a
  // floating-point line took 18 of the reader's ~400 instructions per record. The slope is kept
  // in 16.48 fixed point (a relative error of ~1e-14 at GHz rates: 0.04 ns over an hour), and
  // the conversion is monotonic in the stamp, as the merge needs.
  struct Line {
    uint64_t tsc0 = 0, ns0 = 0;
    uint64_t slope48 = 0;  // ns per tick * 2^48
    static constexpr int kShift = 48;
    static uint64_t slopeOf(double nsPerTick) {
      double scaled = nsPerTick * static_cast<double>(uint64_t{1} << kShift);
      if (!(scaled > 0)) return 0;
      return scaled >= 18446744073709549568.0 ? UINT64_MAX : static_cast<uint64_t>(scaled + 0.5);
    }
    uint64_t toNs(uint64_t tsc) const {
      using u128 = unsigned __int128;
      if (tsc >= tsc0) return ns0 + static_cast<uint64_t>((u128{tsc - tsc0} * slope48) >> kShift);
      uint64_t back = static_cast<uint64_t>((u128{tsc0 - tsc} * slope48) >> kShift);
      return back >= ns0 ? 0 : ns0 - back;
    }
  };

  // Reads a fresh pair (call before converting a batch of records) and returns the line.
  Line refresh();
  uint64_t toNs(uint64_t tsc) const { return line().toNs(tsc); }
  Line line() const { return Line{tsc0_, ns0_, Line::slopeOf(nsPerTick_.load(std::memory_order_relaxed))}; }

 private:
  TscClock();
  uint64_t tsc0_, ns0_;
  std::atomic<double> nsPerTick_;
};

}  // namespace memledger::recorder
