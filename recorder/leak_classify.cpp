#include "leak_classify.h"

#include <algorithm>
#include <cstring>

namespace memledger::recorder::leakscan {

const char* leakKindName(LeakKind k) {
  switch (k) {
    case LeakKind::Definite: return "definite";
    case LeakKind::Indirect: return "indirect";
    case LeakKind::Possible: return "possible";
    case LeakKind::Reachable: return "reachable";
  }
  return "definite";
}

namespace {

enum : uint8_t { kUnreached = 0, kPossible = 1, kReachable = 2, kIndirect = 3 };
constexpr size_t kBatchBytes = 4u << 20;   // memory read per process_vm_readv round
constexpr size_t kBatchRanges = 1024;      // IOV_MAX

class Classifier {
 public:
  Classifier(const std::vector<Block>& blocks, Memory& mem, bool glibc)
      : blocks_(blocks), mem_(mem), glibc_(glibc), state_(blocks.size(), kUnreached),
        pending_(blocks.size(), 0), buf_(2 * kBatchBytes + 64) {
    starts_.reserve(blocks.size());
    for (const Block& b : blocks) starts_.push_back(b.address);
    if (!blocks.empty()) {
      lo_ = blocks.front().address;
      uint64_t hi = 0;
      for (const Block& b : blocks) hi = std::max(hi, b.address + std::max<uint64_t>(b.size, 1));
      span_ = hi - lo_;
    }
  }

  void scanRoots(const std::vector<Region>& roots) {
    pieces_.clear();
    for (const Region& r : roots) {
      uint64_t s = (r.start + 7) & ~uint64_t{7}, e = r.end & ~uint64_t{7};
      for (uint64_t a = s; a < e; a += kBatchBytes) pieces_.push_back({a, std::min(e, a + kBatchBytes), -1});
    }
    size_t next = 0;
    while (next < pieces_.size()) {
      size_t first = next, bytes = 0;
      while (next < pieces_.size() && next - first < kBatchRanges && bytes < kBatchBytes)
        bytes += pieces_[next].end - pieces_[next].start, ++next;
      readAndScan(first, next, /*clique*/ -1, /*roots*/ true);
    }
    process(-1);
  }

  void cliques() {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (state_[i] != kUnreached) continue;
      push(static_cast<uint32_t>(i));
      process(static_cast<int64_t>(i));
    }
  }

  std::vector<LeakKind> result() const {
    std::vector<LeakKind> out(blocks_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      switch (state_[i]) {
        case kUnreached: out[i] = LeakKind::Definite; break;
        case kIndirect: out[i] = LeakKind::Indirect; break;
        case kPossible: out[i] = LeakKind::Possible; break;
        default: out[i] = LeakKind::Reachable; break;
      }
    }
    return out;
  }

  ClassifyStats stats;

 private:
  struct Piece {
    uint64_t start, end;
    int64_t block;  // -1: a root
  };

  // The block `w` points into, or -1.
  int64_t find(uint64_t w) const {
    if (w - lo_ >= span_) return -1;
    auto it = std::upper_bound(starts_.begin(), starts_.end(), w);
    if (it == starts_.begin()) return -1;
    size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
    const Block& b = blocks_[i];
    if (w >= b.address + std::max<uint64_t>(b.size, 1)) return -1;
    if (glibc_ && w != b.address) {
      uint64_t chunk = b.size + 8 + 15 < 32 ? 32 : (b.size + 8 + 15) & ~uint64_t{15};
      if (w == b.address - 16 + chunk) return -1;  // the next chunk's header: glibc's own pointer
    }
    return static_cast<int64_t>(i);
  }

  void push(uint32_t i) {
    if (pending_[i]) return;
    pending_[i] = 1;
    stack_.push_back(i);
  }

  // memcheck's default heuristics (stdstring, length64, newarray) for an interior pointer.
  bool heuristic(uint64_t w, const Block& b) {
    uint64_t off = w - b.address;
    if (off != 8 && off != 24) return false;
    if (b.size < off) return false;
    uint64_t words[2] = {0, 0};
    Region r{b.address, b.address + 16};
    if (b.size < 16) r.end = b.address + 8;
    heurOk_.clear();
    mem_.readMany(&r, 1, reinterpret_cast<uint8_t*>(words), heurOk_);
    if (heurOk_.empty() || !heurOk_[0]) return false;
    if (off == 24) {  // stdstring: length, capacity, refcount, chars, NUL
      uint64_t capacity = words[1];
      return b.size >= 16 && 3 * 8 + capacity + 1 == b.size && words[0] <= capacity;
    }
    uint64_t n = words[0];  // length64, then newarray
    if (n > 0 && b.size - 8 == n) return true;
    return n > 0 && (b.size - 8) % n == 0;
  }

  void fromNoClique(uint64_t w, bool priorDefinite) {
    int64_t found = find(w);
    if (found < 0) return;
    size_t i = static_cast<size_t>(found);
    if (state_[i] == kReachable) return;
    bool viaStart = w == blocks_[i].address || heuristic(w, blocks_[i]);
    if (viaStart && priorDefinite) {
      state_[i] = kReachable;
      push(static_cast<uint32_t>(i));
    } else if (state_[i] == kUnreached) {
      state_[i] = kPossible;
      push(static_cast<uint32_t>(i));
    }
  }

  void fromClique(uint64_t w, int64_t clique) {
    int64_t found = find(w);
    if (found < 0 || found == clique) return;
    size_t i = static_cast<size_t>(found);
    if (state_[i] != kUnreached) return;
    push(static_cast<uint32_t>(i));
    state_[i] = kIndirect;
  }

  void process(int64_t clique) {
    while (!stack_.empty()) {
      pieces_.clear();
      size_t bytes = 0;
      while (!stack_.empty() && pieces_.size() < kBatchRanges && bytes < kBatchBytes) {
        uint32_t i = stack_.back();
        stack_.pop_back();
        pending_[i] = 0;
        const Block& b = blocks_[i];
        uint64_t s = (b.address + 7) & ~uint64_t{7}, e = (b.address + b.size) & ~uint64_t{7};
        for (uint64_t a = s; a < e; a += kBatchBytes) {
          uint64_t pe = std::min(e, a + kBatchBytes);
          pieces_.push_back({a, pe, static_cast<int64_t>(i)});
          bytes += pe - a;
        }
      }
      // A block larger than a batch went in whole (pieces of kBatchBytes): read it in rounds.
      size_t next = 0;
      while (next < pieces_.size()) {
        size_t first = next, got = 0;
        while (next < pieces_.size() && next - first < kBatchRanges && got < kBatchBytes)
          got += pieces_[next].end - pieces_[next].start, ++next;
        readAndScan(first, next, clique, false);
      }
    }
  }

  void readAndScan(size_t first, size_t last, int64_t clique, bool roots) {
    std::vector<Piece> batch(pieces_.begin() + static_cast<long>(first), pieces_.begin() + static_cast<long>(last));
    ranges_.clear();
    for (const Piece& p : batch) ranges_.push_back({p.start, p.end});
    ok_.clear();
    mem_.readMany(ranges_.data(), ranges_.size(), buf_.data(), ok_);
    size_t off = 0;
    for (size_t k = 0; k < batch.size(); ++k) {
      const Piece& p = batch[k];
      size_t len = p.end - p.start;
      if (k < ok_.size() && ok_[k]) {
        (roots ? stats.rootBytes : stats.blockBytesScanned) += len;
        const uint64_t* words = reinterpret_cast<const uint64_t*>(buf_.data() + off);
        size_t n = len / 8;
        if (clique >= 0) {
          for (size_t j = 0; j < n; ++j)
            if (words[j] - lo_ < span_) fromClique(words[j], clique);
        } else {
          bool priorDefinite = roots || state_[static_cast<size_t>(p.block)] != kPossible;
          for (size_t j = 0; j < n; ++j)
            if (words[j] - lo_ < span_) fromNoClique(words[j], priorDefinite);
        }
      } else {
        stats.unreadableBytes += len;
      }
      off += len;
    }
  }

  const std::vector<Block>& blocks_;
  Memory& mem_;
  bool glibc_;
  std::vector<uint64_t> starts_;
  uint64_t lo_ = 0, span_ = 0;
  std::vector<uint8_t> state_, pending_;
  std::vector<uint32_t> stack_;
  std::vector<Piece> pieces_;
  std::vector<Region> ranges_;
  std::vector<bool> ok_, heurOk_;
  std::vector<uint8_t> buf_;
};

}  // namespace

std::vector<LeakKind> classify(const std::vector<Block>& blocks, const std::vector<Region>& roots,
                               Memory& mem, bool glibcChunks, ClassifyStats* stats) {
  Classifier c(blocks, mem, glibcChunks);
  c.scanRoots(roots);
  c.cliques();
  if (stats) *stats = c.stats;
  return c.result();
}

}  // namespace memledger::recorder::leakscan
