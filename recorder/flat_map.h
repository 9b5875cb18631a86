// An open-addressing hash map from non-zero 64-bit keys (addresses, stack hashes, tids) to small
// values. The recorder's hot path does one lookup per event on maps with millions of entries;
// std::unordered_map allocates a node per insert, this does not: linear probing over one array,
// Fibonacci hashing (addresses are 16-aligned, so the low bits alone are useless), and
// backward-shift deletion so alloc/free churn leaves no tombstones behind.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <type_traits>
#include <utility>

namespace memledger::recorder {

// ByAddress: the keys are heap addresses, hashed to keep neighbours together (home()).
template <class V, bool ByAddress = false>
class FlatMap {
 public:
  explicit FlatMap(size_t initialCapacity = 16) { allocate(roundUp(initialCapacity)); }
  ~FlatMap() {
    freeSlots(slots_, capacity());
    std::free(chunks_);
  }
  FlatMap(const FlatMap&) = delete;
  FlatMap& operator=(const FlatMap&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* find(uint64_t key) {
    size_t i = home(key);
    while (true) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == 0) return nullptr;
      i = (i + 1) & mask_;
    }
  }

  const V* find(uint64_t key) const { return const_cast<FlatMap*>(this)->find(key); }
  // Starts loading the slot where `key` is (or would go): a later find/insert/erase of it then
  // does not wait for memory.
  void prefetch(uint64_t key) const { __builtin_prefetch(&slots_[home(key)], 1, 3); }

  // The value for `key`, value-initialised and inserted when absent; second is true when new.
  std::pair<V*, bool> insert(uint64_t key) {
    if ((size_ + 1) * 4 > capacity() * 3) grow();
    size_t i = home(key);
    while (true) {
      Slot& s = slots_[i];
      if (s.key == key) return {&s.value, false};
      if (s.key == 0) {
        s.key = key;
        s.value = V{};
        ++size_;
        if constexpr (ByAddress) ++chunks_[i >> kChunkBits];
        return {&s.value, true};
      }
      i = (i + 1) & mask_;
    }
  }

  // Removes `key`; copies its value to *out first when out is given. False when absent.
  bool erase(uint64_t key, V* out = nullptr) {
    size_t i = home(key);
    while (true) {
      Slot& s = slots_[i];
      if (s.key == 0) return false;
      if (s.key == key) break;
      i = (i + 1) & mask_;
    }
    if (out) *out = std::move(slots_[i].value);
    if constexpr (ByAddress) --chunks_[i >> kChunkBits];
    // Backward shift: pull later entries of the probe run into the hole when their home allows.
    size_t j = i;
    while (true) {
      j = (j + 1) & mask_;
      if (slots_[j].key == 0) break;
      size_t h = home(slots_[j].key);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = std::move(slots_[j]);
        if constexpr (ByAddress) {
          ++chunks_[i >> kChunkBits];
          --chunks_[j >> kChunkBits];
        }
        i = j;
      }
    }
    slots_[i].key = 0;
    --size_;
    return true;
  }

  // Every entry once. A live set (ByAddress) skips the chunks of slots that hold none: at an
  // image's end its table is sized for its largest live set (py_dict: 8M slots, 256 MiB) but
  // holds a few leaks, and scanning it all took ~40 ms.
  template <class F>
  void forEach(F&& f) {
    for (size_t c = 0; c < chunkCount(); ++c) {
      if constexpr (ByAddress) {
        if (chunks_[c] == 0) continue;
      }
      size_t end = std::min(capacity(), (c + 1) << kChunkBits);
      for (size_t i = c << kChunkBits; i < end; ++i)
        if (slots_[i].key) f(slots_[i].key, slots_[i].value);
    }
  }

  // Drops every entry and gives the memory back (a closed image keeps no live set).
  void release() {
    freeSlots(slots_, capacity());
    allocate(16);
  }

 private:
  struct Slot {
    uint64_t key;
    V value;
  };

  static size_t roundUp(size_t n) {
    size_t c = 16;
    while (c < n) c <<= 1;
    return c;
  }
  size_t capacity() const { return mask_ + 1; }
  size_t home(uint64_t key) const {
    if constexpr (ByAddress) {
      // Heap addresses: the 16 KiB of address space around a block maps to one run of 1024
      // slots, in address order (a block's 16-byte granule is its offset in the run), and only
      // which run is hashed. Blocks allocated together lie together, so their slots share cache
      // lines and pages: a table of millions of blocks otherwise costs a TLB miss and a cache
      // miss on every event (in a VM a TLB miss is a nested page walk). py_dict: the recorder's
      // CPU time -45%. Runs still spread at random, and a run is at most half full from one
      // chunk (a heap block takes 32 bytes or more), so probes stay short.
      if (shift_ + kRunBits < 64) {  // at least two runs
        uint64_t run = ((key >> (4 + kRunBits)) * 0x9e3779b97f4a7c15ull) >> (shift_ + kRunBits);
        return static_cast<size_t>((run << kRunBits) | ((key >> 4) & ((1u << kRunBits) - 1)));
      }
    }
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> shift_);
  }
  static constexpr int kRunBits = 10;
  // Live sets count their entries per chunk of 512 slots (16 KiB of 32-byte slots); the counts
  // of 8M slots take 32 KiB, touched once per insert and erase.
  static constexpr int kChunkBits = 9;
  size_t chunkCount() const { return (capacity() + (size_t{1} << kChunkBits) - 1) >> kChunkBits; }
  // Slots come zeroed (key 0: empty) and aligned to a cache line, so a slot of 16 or 32 bytes
  // never spans two lines. Large tables are mapped directly: the kernel's pages come zeroed (no
  // memset), and freeing them gives the memory back at once.
  static constexpr size_t kMapBytes = size_t{1} << 20;
  static_assert(std::is_trivially_copyable_v<Slot>, "slots are moved as bytes and start as zeros");
  static Slot* allocSlots(size_t cap) {
    size_t bytes = cap * sizeof(Slot);
    void* p;
    if (bytes >= kMapBytes) {
      // Hashing spreads entries over the whole table, so every page gets touched: populate them
      // in one call instead of taking a fault per page (~1-2 us each in a VM, memcg charged).
      p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
    } else {
      p = std::aligned_alloc(64, bytes < 64 ? 64 : bytes);
      if (!p) throw std::bad_alloc();
      std::memset(p, 0, bytes);
    }
    return static_cast<Slot*>(p);
  }
  static void freeSlots(Slot* p, size_t cap) {
    if (!p) return;
    size_t bytes = cap * sizeof(Slot);
    if (bytes >= kAsideBytes) unmapAside(p, bytes);
    else if (bytes >= kMapBytes) munmap(p, bytes);
    else std::free(p);
  }
  // Unmapping a table of millions of slots tears down a page-table entry per 4 KiB: 256 MiB (a
  // live set of 3.5M blocks) took ~40 ms of the recorder's end. From this size on a short-lived
  // thread does it while the recorder goes on (a grow, or the image's close and the file's end);
  // should the recorder exit first, the kernel finishes it as part of the exit. 8 MiB and up:
  // torch_mlp's live set (16 MiB) was ~10 ms of the last image's close on the recorder's thread,
  // against ~50 us to start a thread.
  static constexpr size_t kAsideBytes = size_t{8} << 20;
  static void unmapAside(void* p, size_t bytes) {
    try {
      std::thread([p, bytes] { munmap(p, bytes); }).detach();
    } catch (...) {
      munmap(p, bytes);  // no thread to be had: here, as before
    }
  }
  void allocate(size_t cap) {
    slots_ = allocSlots(cap);
    mask_ = cap - 1;
    size_ = 0;
    if constexpr (ByAddress) {
      std::free(chunks_);
      chunks_ = static_cast<uint16_t*>(std::calloc(chunkCount(), sizeof(uint16_t)));
      if (!chunks_) throw std::bad_alloc();
    }
    int bits = 0;
    while ((size_t{1} << bits) < cap) ++bits;
    shift_ = 64 - bits;
  }
  void grow() {
    Slot* old = slots_;
    size_t oldCap = capacity();
    allocate(oldCap * 2);
    for (size_t k = 0; k < oldCap; ++k) {
      if (!old[k].key) continue;
      size_t i = home(old[k].key);
      while (slots_[i].key) i = (i + 1) & mask_;
      slots_[i] = old[k];
      ++size_;
      if constexpr (ByAddress) ++chunks_[i >> kChunkBits];
    }
    freeSlots(old, oldCap);
  }

  Slot* slots_ = nullptr;
  uint16_t* chunks_ = nullptr;  // ByAddress: entries per chunk of slots
  size_t mask_ = 0;
  size_t size_ = 0;
  int shift_ = 60;
};

}  // namespace memledger::recorder
