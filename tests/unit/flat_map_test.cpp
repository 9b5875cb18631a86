// FlatMap against std::unordered_map as the model: the same inserts, finds and erases (backward
// shift deletion included) through every growth, for both hashes, on key patterns a heap makes.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "../../recorder/flat_map.h"

namespace memledger::recorder {
namespace {

struct Val {
  uint64_t a, b;
};

// Keys as a heap hands them out: dense runs of small blocks, page-aligned large blocks (+16,
// glibc's header), and scattered ones in other mappings.
std::vector<uint64_t> heapLikeKeys(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys;
  uint64_t brk = 0x555555560000ull;
  while (keys.size() < n) {
    switch (rng() % 3) {
      case 0:  // a run of small blocks
        for (int i = 0, len = static_cast<int>(rng() % 64); i < len; ++i) {
          keys.push_back(brk);
          brk += 32 + 16 * (rng() % 4);
        }
        break;
      case 1:  // a large block in its own mapping
        keys.push_back(0x7f0000000000ull + (rng() % (1u << 20)) * 4096 + 16);
        break;
      default:  // anywhere
        keys.push_back((rng() | 1) << 4);
        break;
    }
  }
  keys.resize(n);
  return keys;
}

template <bool ByAddress>
void checkAgainstModel(uint32_t seed) {
  FlatMap<Val, ByAddress> map;
  std::unordered_map<uint64_t, Val> model;
  std::vector<uint64_t> keys = heapLikeKeys(400000, seed);
  std::mt19937_64 rng(seed + 1);
  std::vector<uint64_t> live;
  for (uint64_t k : keys) {
    // Insert, sometimes erase a random live key (churn), check a few lookups.
    auto [v, isNew] = map.insert(k);
    ASSERT_EQ(isNew, model.count(k) == 0) << std::hex << k;
    *v = Val{k, k * 3};
    if (isNew) live.push_back(k);
    model[k] = *v;
    if (!live.empty() && rng() % 3 == 0) {
      size_t i = rng() % live.size();
      Val out{};
      ASSERT_TRUE(map.erase(live[i], &out));
      EXPECT_EQ(out.a, live[i]);
      model.erase(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    ASSERT_EQ(map.size(), model.size());
  }
  for (const auto& [k, v] : model) {
    const Val* found = map.find(k);
    ASSERT_NE(found, nullptr) << std::hex << k;
    EXPECT_EQ(found->b, v.b);
  }
  EXPECT_EQ(map.find(0x10), nullptr);
  size_t seen = 0;
  map.forEach([&](uint64_t k, Val& v) {
    ++seen;
    EXPECT_EQ(v.a, k);
  });
  EXPECT_EQ(seen, model.size());
  for (const auto& [k, v] : model) ASSERT_TRUE(map.erase(k));
  EXPECT_TRUE(map.empty());
}

TEST(FlatMap, FibonacciHashMatchesTheModelThroughEveryGrowth) { checkAgainstModel<false>(7); }

// ByAddress hashes 16 KiB of address space to one run of slots: every table size from 16 slots
// to millions (runs appear at 2^11 slots), with keys that fill runs and keys that collide.
TEST(FlatMap, AddressHashMatchesTheModelThroughEveryGrowth) { checkAgainstModel<true>(11); }

// A live set at its process's end: grown for 300k blocks, then nearly all freed. forEach skips
// the chunks with no entry and must still see exactly the ones left, also after backward
// shifts moved entries between chunks and after new inserts.
TEST(FlatMap, ForEachOnAMostlyEmptiedLiveSetSeesExactlyWhatIsLeft) {
  FlatMap<Val, true> map;
  std::vector<uint64_t> keys = heapLikeKeys(300000, 5);
  std::unordered_map<uint64_t, Val> left;
  for (uint64_t k : keys) *map.insert(k).first = Val{k, 1};
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 997 == 0) left[keys[i]] = Val{keys[i], 1};
    else map.erase(keys[i]);
  }
  for (uint64_t k = 0x7e0000000000ull; k < 0x7e0000000000ull + 64 * 48; k += 48) {
    *map.insert(k).first = Val{k, 2};  // a dense run: probes and shifts within and across chunks
    left[k] = Val{k, 2};
  }
  for (uint64_t k = 0x7e0000000000ull; k < 0x7e0000000000ull + 64 * 48; k += 96) {
    ASSERT_TRUE(map.erase(k));
    left.erase(k);
  }
  ASSERT_EQ(map.size(), left.size());
  size_t seen = 0;
  map.forEach([&](uint64_t k, Val& v) {
    ++seen;
    auto it = left.find(k);
    ASSERT_NE(it, left.end()) << std::hex << k;
    EXPECT_EQ(v.b, it->second.b);
  });
  EXPECT_EQ(seen, left.size());
}

TEST(FlatMap, AddressHashKeepsNeighboursInOneRun) {
  FlatMap<Val, true> map(1u << 16);
  uint64_t base = 0x555555560000ull;
  for (uint64_t i = 0; i < 256; ++i) map.insert(base + i * 32);  // 8 KiB of 32-byte blocks
  // Same run, in address order: the slots of two blocks 32 bytes apart are 2 apart.
  const Val* first = map.find(base);
  const Val* next = map.find(base + 32);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(reinterpret_cast<const char*>(next) - reinterpret_cast<const char*>(first),
            static_cast<ptrdiff_t>(2 * (sizeof(uint64_t) + sizeof(Val))));
}

}  // namespace
}  // namespace memledger::recorder
