// The allocation storm shared by malloc_storm and mt_storm: malloc/free pairs from four call
// sites whose stacks are 10, 13, 16 and 20 frames deep. The depth is built by a noinline
// recursive descent that cannot be turned into a loop (work after the call), so an unwinder
// really walks those frames; the pairs are made in batches at the bottom of each descent, as a
// program's inner loop would make them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace storm {

constexpr int kSites = 4;
constexpr int kSiteDepth[kSites] = {10, 13, 16, 20};
constexpr int kBatch = 256;   // pairs per descent
constexpr int kWindow = 8;    // blocks kept alive at once per batch: frees are not always LIFO

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {  // xorshift64: cheap, so the baseline stays dominated by malloc/free
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// Sizes from 8 B to 4 KiB, log-spread, plus jitter, so malloc's size classes all take part.
inline std::size_t nextSize(Rng& rng) {
  std::uint64_t r = rng.next();
  return (std::size_t{8} << (r % 10)) + ((r >> 8) % 64);
}

// Keeps the compiler from eliding a malloc/free pair whose block is never otherwise used.
inline void use(void* p) { asm volatile("" : : "r"(p) : "memory"); }

#define STORM_SITE(N)                                                         \
  __attribute__((noinline)) inline long site##N(Rng& rng, int pairs) {        \
    void* live[kWindow] = {};                                                 \
    for (int i = 0; i < pairs; ++i) {                                         \
      void*& slot = live[i % kWindow];                                        \
      std::free(slot);                                                        \
      slot = std::malloc(nextSize(rng));                                      \
      static_cast<char*>(slot)[0] = static_cast<char>(i);                     \
      use(slot);                                                              \
    }                                                                         \
    for (void* p : live) std::free(p);                                        \
    return pairs;                                                             \
  }
STORM_SITE(0)
STORM_SITE(1)
STORM_SITE(2)
STORM_SITE(3)
#undef STORM_SITE

__attribute__((noinline)) inline long descend(int depth, int site, Rng& rng, int pairs) {
  if (depth > 1) {
    long done = descend(depth - 1, site, rng, pairs);
    asm volatile("" ::: "memory");  // work after the call: no tail call, no loop
    return done;
  }
  switch (site) {
    case 0: return site0(rng, pairs);
    case 1: return site1(rng, pairs);
    case 2: return site2(rng, pairs);
    default: return site3(rng, pairs);
  }
}

// Makes `pairs` malloc/free pairs, cycling through the four sites. When `pairs` is negative the
// storm runs until `keepGoing` returns false instead (checked once per batch). `afterBatch(done)`
// is called after each batch with the pairs made so far, outside the descent so it adds no frame
// to the recorded stacks (mt_storm --rate sleeps there); the overload without it passes a no-op
// that inlines away, so an unpaced storm costs what it did.
template <class KeepGoing, class AfterBatch>
long run(long pairs, std::uint64_t seed, KeepGoing keepGoing, AfterBatch afterBatch) {
  Rng rng{seed | 1};
  long done = 0;
  for (long b = 0; pairs < 0 ? keepGoing() : done < pairs; ++b) {
    int site = static_cast<int>(b % kSites);
    int n = pairs < 0 ? kBatch : static_cast<int>(pairs - done < kBatch ? pairs - done : kBatch);
    // The stack below malloc: the site, `d` descend() frames, then main and libc's three start
    // frames (__libc_start_call_main, __libc_start_main, _start): d = depth - 5. A
    // thread's start frames are about as many (the thread function, start_thread, clone3).
    done += descend(kSiteDepth[site] - 5, site, rng, n);
    afterBatch(done);
  }
  return done;
}

template <class KeepGoing>
long run(long pairs, std::uint64_t seed, KeepGoing keepGoing) {
  return run(pairs, seed, keepGoing, [](long) {});
}

}  // namespace storm
