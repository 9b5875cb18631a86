// The image's accounts (schemas/kinds.h: spaces and pools, see image_recorder.h): made as records
// name them, written as `spaces` rows when the image ends, and its part of the recording's
// simultaneous peaks (peak_sites).
#include <algorithm>

#include "image_recorder.h"
#include "recording.h"

namespace memledger::recorder {

using wire::AllocKind;
using wire::Op;

// A device's, pinned or managed space, or a pool: made the first time a record names it.
uint32_t ImageRecorder::otherAccount(AllocKind kind, uint32_t tag) {
  const kinds::KindInfo& k = kinds::info(kind);
  bool pool = k.shape == kinds::Shape::PoolBlock;
  uint64_t key = pool ? (1ull << 63) | uint64_t{k.code} << 32 | tag
                      : uint64_t(k.space) << 32 | (k.space == kinds::Space::Device ? tag : 0);
  if (key == lastAccountKey_) return lastAccount_;
  auto [it, isNew] = accountByKey_.try_emplace(key, static_cast<uint32_t>(accounts_.size()));
  if (isNew) {
    Account a;
    a.pool = pool;
    a.blocks = std::make_unique<FlatMap<LiveBlock, true>>(16);
    if (pool) {
      a.poolId = tag;
      a.kind = k.name;
      // memledger_alloc's blocks: the unnamed pool "custom"; a named pool gets its name from
      // its PoolCreate record (which comes first when the program created it).
      a.name = kind == AllocKind::Custom && tag == 0 ? std::string("custom")
                                                     : std::string(k.name) + ":" + std::to_string(tag);
      // Python's small objects (record --python-allocators): the pool is pymalloc, its memory the
      // arenas the interpreter maps itself (mmap blocks of this image).
      if (kind == AllocKind::PyObject) {
        a.name = "pymalloc";
        a.space = kinds::spaceName(k.space);
        pyBlocks_ = a.blocks.get();
      }
    } else {
      a.space = kinds::spaceName(k.space);
      if (k.space == kinds::Space::Device) a.space += ":" + std::to_string(tag);
      a.name = a.space;
      a.global = rec_.globalSpace(a.space);
    }
    accounts_.push_back(std::move(a));
  }
  lastAccountKey_ = key;
  lastAccount_ = it->second;
  return it->second;
}

void ImageRecorder::onPoolCreate(const Decoded& r) {
  uint64_t t = rel(r.ts);
  bucketAt(t);
  uint32_t acc = accountOf(AllocKind::Custom, r.tag);
  Account& a = accounts_[acc];
  a.name = "pool:" + (r.text.empty() ? std::to_string(r.tag) : std::string(r.text));
  a.base = r.a;
  a.reserved = r.b;
  a.createdNs = t;
  // The pool's memory is counted where the program got it: a heap block or a mapping at its base.
  if (heap_.find(mapKey(r.a))) a.space = accounts_[kHeap].space;
  else if (!ranges_.empty() && ranges_.upper_bound(r.a) != ranges_.begin() &&
           std::prev(ranges_.upper_bound(r.a))->second.end > r.a)
    a.space = accounts_[kMmap].space;
}

// Its `spaces` rows; its memory leaves the simultaneous totals (its leftovers stay its leaks).
void ImageRecorder::closeAccounts() {
  for (uint32_t i = 0; i < accounts_.size(); ++i) {
    Account& a = accounts_[i];
    SpaceRow row;
    row.image_id = id_;
    row.account = i;
    row.name = a.name;
    row.space = a.space;
    row.pool = a.pool;
    row.pool_id = a.poolId;
    row.kind = a.kind;
    row.base = a.base;
    row.reserved_bytes = a.reserved;
    row.created_ns = a.createdNs;
    row.destroyed_ns = a.destroyedNs;
    row.peak_bytes = a.peak;
    row.peak_ns = a.peakNs;
    row.end_bytes = static_cast<uint64_t>(std::max<int64_t>(a.live, 0));
    db_.insertSpace(row);
    if (a.global != kNoGlobal) {
      Recording::GlobalSpace& g = rec_.global(a.global);
      g.live -= a.live;
      a.closeGlobalEpoch = g.epoch;
    }
    a.blocks.reset();
  }
  pyBlocks_ = nullptr;
}

void ImageRecorder::peakSitesAt(uint32_t global, uint64_t epoch, std::vector<packed::PeakSiteEntry>& out) const {
  if (closed_) {
    // close() left every site of a global account stamped with that total's epoch then, which is
    // each such account's closeGlobalEpoch: the test below reduces to the account's, the same
    // for all accounts of one total.
    for (const Account& a : accounts_) {
      if (a.global != global) continue;
      if (a.closeGlobalEpoch != epoch || global >= closePeakSites_.size()) return;
      out.insert(out.end(), closePeakSites_[global].begin(), closePeakSites_[global].end());
      return;
    }
    return;
  }
  for (size_t i = 0; i < sites_.size(); ++i) {
    const Site& s = sites_[i];
    const Account& a = accounts_[s.account];
    // An image that ended before the peak (its epoch moved on) had nothing live at it.
    if (a.global != global || a.closeGlobalEpoch != epoch || s.gstamp != epoch) continue;
    if (s.at_gpeak_count == 0 && s.at_gpeak_bytes == 0) continue;
    out.push_back({static_cast<uint64_t>(s.stack_id), static_cast<uint64_t>(s.kind), s.at_gpeak_count,
                   s.at_gpeak_bytes});
  }
}

}  // namespace memledger::recorder
