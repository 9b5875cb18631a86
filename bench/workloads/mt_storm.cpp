// Multi-threaded allocation storm: the malloc_storm pairs split over THREADS threads (default
// 4). With --seconds S each thread storms until S seconds have passed instead (the soak test).
// With --rate R the storm is paced to R events/s in total (an event is an allocation or a free,
// so a pair is two), R / THREADS per thread: a program that makes events at a known rate, so a
// profiler either keeps that pace or makes the run longer. Unpaced, it runs as fast as it can.
// Prints the total pair count to stderr so a harness can compute a rate.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "storm.h"

int main(int argc, char** argv) {
  long pairs = 10'000'000L;
  int threads = 4;
  double seconds = 0;
  double rate = 0;  // events/s over all threads; 0: unpaced
  bool badRate = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
      // strtod with an end check, not atof: "--rate 10M" must be an error, not a rate of 10.
      // At least one event a second keeps a schedule's nanoseconds within a long long.
      char* end = nullptr;
      rate = std::strtod(argv[++i], &end);
      badRate = *argv[i] == '\0' || *end != '\0' || !std::isfinite(rate) || rate < 1;
    } else {
      pairs = std::atol(argv[i]);
    }
  }
  if (pairs <= 0 || threads <= 0 || seconds < 0 || badRate) {
    std::fprintf(stderr, "usage: mt_storm [PAIRS>0] [--threads N] [--seconds S] [--rate EVENTS_PER_S>=1]\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  // One start for all threads: thread t's schedule says its `done` pairs (2 * done events) are
  // due at start + 2 * done / (rate / threads) seconds.
  const auto start = Clock::now();
  const double nsPerPair = rate > 0 ? 2e9 * threads / rate : 0;
  std::atomic<long> total{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    long share = pairs / threads + (t < pairs % threads ? 1 : 0);
    pool.emplace_back([&, t, share] {
      auto keepGoing = [&] { return Clock::now() < deadline; };
      long todo = seconds > 0 ? -1 : share;
      std::uint64_t seed = 0x9e3779b97f4a7c15ULL * (t + 1);
      long done;
      if (rate > 0) {
        // Sleep only when ahead of the schedule; a thread that is behind (its profiler slows it)
        // never sleeps, so the run takes longer by what it could not keep up with. The deadline
        // is absolute: the time between batches and a sleep's lateness do not add up.
        done = storm::run(todo, seed, keepGoing, [&](long made) {
          auto due = start + std::chrono::nanoseconds(static_cast<long long>(made * nsPerPair));
          if (Clock::now() < due) std::this_thread::sleep_until(due);
        });
      } else {
        done = storm::run(todo, seed, keepGoing);
      }
      total += done;
    });
  }
  for (auto& th : pool) th.join();
  if (rate > 0) {
    std::fprintf(stderr, "mt_storm: %ld malloc/free pairs on %d threads, paced to %.0f events/s\n",
                 total.load(), threads, rate);
  } else {
    std::fprintf(stderr, "mt_storm: %ld malloc/free pairs on %d threads\n", total.load(), threads);
  }
  return seconds > 0 || total == pairs ? 0 : 1;
}
