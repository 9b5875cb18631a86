// Single-threaded allocation storm: 10M malloc/free pairs (or argv[1]) from four call sites at
// stack depths 10-20. Prints the pair count to stderr so a harness can compute a rate.
#include <cstdio>
#include <cstdlib>

#include "storm.h"

int main(int argc, char** argv) {
  long pairs = argc > 1 ? std::atol(argv[1]) : 10'000'000L;
  if (pairs <= 0) {
    std::fprintf(stderr, "usage: malloc_storm [PAIRS>0]\n");
    return 2;
  }
  long done = storm::run(pairs, 0x9e3779b97f4a7c15ULL, [] { return false; });
  std::fprintf(stderr, "malloc_storm: %ld malloc/free pairs\n", done);
  return done == pairs ? 0 : 1;
}
