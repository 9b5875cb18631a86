// MEMLEDGER_END_TIMES=1: one stderr line per step of a recording's end (the leak scan, the
// finalization sites, an image's close, the global peaks, symbolization, indexes, compression),
// with its wall time and the CPU time of the thread that ran it. A measuring aid for the end's
// cost (docs/python.md, "Overhead"); nothing is printed without the variable.
#pragma once

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace memledger::recorder {

inline bool endTimesOn() {
  static const bool on = [] {
    const char* v = std::getenv("MEMLEDGER_END_TIMES");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

// Prints "memledger: end: NAME wall W ms, thread CPU C ms" when it goes out of scope.
class EndTimer {
 public:
  explicit EndTimer(const char* name) : name_(name), on_(endTimesOn()) {
    if (on_) now(&wall_, &cpu_);
  }
  ~EndTimer() {
    if (!on_) return;
    double wall, cpu;
    now(&wall, &cpu);
    std::fprintf(stderr, "memledger: end: %-20s wall %7.1f ms, thread CPU %7.1f ms\n", name_,
                 (wall - wall_) * 1e3, (cpu - cpu_) * 1e3);
  }
  EndTimer(const EndTimer&) = delete;
  EndTimer& operator=(const EndTimer&) = delete;

 private:
  static void now(double* wall, double* cpu) {
    timespec a{}, b{};
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    *wall = static_cast<double>(a.tv_sec) + static_cast<double>(a.tv_nsec) * 1e-9;
    *cpu = static_cast<double>(b.tv_sec) + static_cast<double>(b.tv_nsec) * 1e-9;
  }
  const char* name_;
  bool on_;
  double wall_ = 0, cpu_ = 0;
};

}  // namespace memledger::recorder
