// Multi-threaded allocation storm: the malloc_storm pairs split over THREADS threads (default
// 4). With --seconds S each thread storms until S seconds have passed instead (the soak test).
// Prints the total pair count to stderr so a harness can compute a rate.
#include <atomic>
#include <chrono>
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
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      pairs = std::atol(argv[i]);
    }
  }
  if (pairs <= 0 || threads <= 0 || seconds < 0) {
    std::fprintf(stderr, "usage: mt_storm [PAIRS>0] [--threads N] [--seconds S]\n");
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  std::atomic<long> total{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    long share = pairs / threads + (t < pairs % threads ? 1 : 0);
    pool.emplace_back([&, t, share] {
      auto keepGoing = [&] { return Clock::now() < deadline; };
      long done = storm::run(seconds > 0 ? -1 : share, 0x9e3779b97f4a7c15ULL * (t + 1), keepGoing);
      total += done;
    });
  }
  for (auto& th : pool) th.join();
  std::fprintf(stderr, "mt_storm: %ld malloc/free pairs on %d threads\n", total.load(), threads);
  return seconds > 0 || total == pairs ? 0 : 1;
}
