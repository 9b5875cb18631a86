// memcheck's leak rules (recorder/leak_classify.h) on memory made by hand: blocks and roots are
// words in a fake address space, read through a Memory of our own.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "recorder/leak_classify.h"

using namespace memledger::recorder::leakscan;

namespace {

// A sparse 64-bit address space: words set by address, everything else reads as zero.
class FakeMemory final : public Memory {
 public:
  void set(uint64_t addr, uint64_t value) { words_[addr] = value; }
  void readMany(const Region* ranges, size_t n, uint8_t* out, std::vector<bool>& ok) override {
    ok.assign(n, true);
    for (size_t i = 0; i < n; ++i) {
      for (uint64_t a = ranges[i].start; a < ranges[i].end; a += 8) {
        auto it = words_.find(a);
        uint64_t v = it == words_.end() ? 0 : it->second;
        std::memcpy(out, &v, 8);
        out += 8;
      }
    }
  }
  std::map<uint64_t, uint64_t> words_;
};

constexpr uint64_t kRoot = 0x1000, kHeap = 0x100000;

std::vector<LeakKind> run(const std::vector<Block>& blocks, FakeMemory& mem, bool glibc = false) {
  return classify(blocks, {{kRoot, kRoot + 4096}}, mem, glibc);
}

}  // namespace

TEST(LeakClassify, StartPointerFromRootIsReachableAndSoIsWhatItPointsTo) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 64}, {kHeap + 0x100, 48}, {kHeap + 0x200, 32}};
  mem.set(kRoot + 8, kHeap);               // root -> A
  mem.set(kHeap + 16, kHeap + 0x100);      // A -> B
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Reachable);
  EXPECT_EQ(k[1], LeakKind::Reachable);
  EXPECT_EQ(k[2], LeakKind::Definite);     // nothing points at C
}

TEST(LeakClassify, InteriorPointerIsPossibleAndSoIsEverythingBelowIt) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 200}, {kHeap + 0x400, 40}};
  mem.set(kRoot, kHeap + 40);
  mem.set(kHeap + 48, kHeap + 0x400);      // a start pointer, but from a possible block
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Possible);
  EXPECT_EQ(k[1], LeakKind::Possible);
}

TEST(LeakClassify, PossibleIsUpgradedWhenAStartPointerTurnsUpLater) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 200}, {kHeap + 0x400, 40}};
  mem.set(kRoot, kHeap + 40);              // interior first
  mem.set(kRoot + 64, kHeap);              // then a start pointer
  mem.set(kHeap + 48, kHeap + 0x400);
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Reachable);
  EXPECT_EQ(k[1], LeakKind::Reachable);
}

TEST(LeakClassify, LostListHeadIsDefiniteItsTailIndirect) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 32}, {kHeap + 0x40, 32}, {kHeap + 0x80, 32}};
  mem.set(kHeap + 0x80, kHeap + 0x40);     // head (highest address) -> middle -> first
  mem.set(kHeap + 0x40, kHeap);
  auto k = run(blocks, mem);
  // Cliques in address order: block 0 leads one (it points at nothing) but stays unreached, so
  // block 1's clique takes it in; block 2's takes block 1: the head alone is definite.
  EXPECT_EQ(k[2], LeakKind::Definite);
  EXPECT_EQ(k[1], LeakKind::Indirect);
  EXPECT_EQ(k[0], LeakKind::Indirect);
}

TEST(LeakClassify, CycleOfLostBlocksHasTheLowestAddressAsDefinite) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 48}, {kHeap + 0x40, 48}};
  mem.set(kHeap, kHeap + 0x40);
  mem.set(kHeap + 0x40, kHeap);
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Definite);
  EXPECT_EQ(k[1], LeakKind::Indirect);
}

TEST(LeakClassify, HeuristicsMakeKnownInteriorPointersReachable) {
  FakeMemory mem;
  // length64: pointer at +8, first word = size - 8.
  // stdstring: pointer at +24, words: length 5, capacity 15; size 3*8 + 15 + 1 = 40.
  // newarray: pointer at +8, first word = element count dividing size - 8 (here 4 of 14 bytes).
  // none: pointer at +8 in a block whose first word says nothing.
  std::vector<Block> blocks = {{kHeap, 72}, {kHeap + 0x100, 40}, {kHeap + 0x200, 64}, {kHeap + 0x300, 64}};
  mem.set(kHeap, 64);
  mem.set(kRoot, kHeap + 8);
  mem.set(kHeap + 0x100, 5);
  mem.set(kHeap + 0x108, 15);
  mem.set(kRoot + 8, kHeap + 0x100 + 24);
  mem.set(kHeap + 0x200, 4);
  mem.set(kRoot + 16, kHeap + 0x200 + 8);
  mem.set(kHeap + 0x300, 5);
  mem.set(kRoot + 24, kHeap + 0x300 + 8);
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Reachable);
  EXPECT_EQ(k[1], LeakKind::Reachable);
  EXPECT_EQ(k[2], LeakKind::Reachable);
  EXPECT_EQ(k[3], LeakKind::Possible);  // 56 % 5 != 0
}

TEST(LeakClassify, GlibcNextChunkHeaderIsNotAPointerIntoTheBlock) {
  FakeMemory mem;
  // A 100-byte block: chunk 112 bytes from start - 16, so the next chunk's header is start + 96,
  // inside the block's last 8 bytes. glibc's arena points there (the top chunk, a free list).
  std::vector<Block> blocks = {{kHeap + 16, 100}};
  mem.set(kRoot, kHeap + 16 + 96);
  EXPECT_EQ(run(blocks, mem, /*glibc*/ true)[0], LeakKind::Definite);
  EXPECT_EQ(run(blocks, mem, /*glibc*/ false)[0], LeakKind::Possible);
}

TEST(LeakClassify, ZeroSizedBlockIsFoundByItsStartOnly) {
  FakeMemory mem;
  std::vector<Block> blocks = {{kHeap, 0}, {kHeap + 0x20, 0}};
  mem.set(kRoot, kHeap);
  mem.set(kRoot + 8, kHeap + 0x21);
  auto k = run(blocks, mem);
  EXPECT_EQ(k[0], LeakKind::Reachable);
  EXPECT_EQ(k[1], LeakKind::Definite);
}
