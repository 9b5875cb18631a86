#include "image_recorder.h"

#include <algorithm>
#include <cstdio>

#include "end_times.h"
#include "recording.h"

namespace memledger::recorder {

namespace {
using wire::AllocKind;
using wire::Op;
using wire::RecordType;

using kinds::opName;
bool isReallocOp(uint8_t op) {
  return op == static_cast<uint8_t>(Op::Realloc) || op == static_cast<uint8_t>(Op::Reallocarray) ||
         op == static_cast<uint8_t>(Op::PyMemRealloc) || op == static_cast<uint8_t>(Op::PyObjectRealloc);
}
}  // namespace

const char* allocationRowsPolicy(const RecordingOptions& opt) {
  if (!opt.fold || opt.fold_threshold_ns == 0) return "all";
  return opt.fold_threshold_ns == kLeaksOnly ? "leaks" : "long_lived";
}

uint64_t foldThresholdMeta(const RecordingOptions& opt) {
  if (!opt.fold) return 0;
  return std::min<uint64_t>(opt.fold_threshold_ns, INT64_MAX);
}

ImageRecorder::ImageRecorder(Recording& rec, int64_t imageId, const RecordingOptions& opt,
                             const ImageRecorder* forkParent)
    : rec_(rec), db_(rec.db()), id_(imageId), opt_(opt), forkParent_(forkParent),
      heap_(1024) {
  if (opt_.bucket_ns == 0) opt_.bucket_ns = 1'000'000;
  accounts_.resize(2);
  accounts_[kHeap].name = accounts_[kHeap].space = kinds::spaceName(kinds::Space::HostHeap);
  accounts_[kMmap].name = accounts_[kMmap].space = kinds::spaceName(kinds::Space::HostMmap);
  accounts_[kMmap].kind = kinds::name(AllocKind::Mmap);
  for (Account& a : accounts_) a.global = rec_.globalSpace(a.space);
}

// The live set is too large for the cache (python3 building a dict: millions of blocks), and so
// are the stacks by hash where there are hundreds of thousands of them (torch's import: each
// allocation and each new stack looks one up); the site and thread tables stay hot.
void ImageRecorder::prefetch(const wire::Record& ahead) {
  if (ahead.type == RecordType::Stack) {
    if (stackByHash_.size() >= kPrefetchStacks) stackByHash_.prefetch(mapKey(ahead.a));
    return;
  }
  if (ahead.type == RecordType::Alloc && stackByHash_.size() >= kPrefetchStacks) stackByHash_.prefetch(mapKey(ahead.c));
  if ((ahead.type != RecordType::Alloc && ahead.type != RecordType::Free) || ahead.a == 0) return;
  if (ahead.kind == AllocKind::Malloc || ahead.kind == AllocKind::New) {
    if (heap_.size() >= kPrefetchLiveBlocks) heap_.prefetch(ahead.a);
  } else if (ahead.kind == AllocKind::PyObject && pyBlocks_ && pyBlocks_->size() >= kPrefetchLiveBlocks) {
    pyBlocks_->prefetch(ahead.a);
  }
}

void ImageRecorder::onRecord(const Decoded& r) {
  if (closed_) return;
  ++events_;
  switch (r.type) {
    case RecordType::Alloc:
      if (r.kind == AllocKind::Mmap) onMmap(r, rel(r.ts));
      else if (__builtin_expect(kinds::known(static_cast<uint8_t>(r.kind)), 1)) onAlloc(r);
      else ++unknownKinds_;  // a newer writer's kind: never counted as another one
      break;
    case RecordType::Free:
      if (!kinds::known(static_cast<uint8_t>(r.kind))) {
        ++unknownKinds_;
      } else if (r.kind == AllocKind::Mmap) {
        // A free of a mapping by address alone: the piece starting there goes.
        auto it = ranges_.find(r.a);
        uint64_t t = rel(r.ts);
        bucketAt(t);
        if (it != ranges_.end()) unmapRange(r.a, it->second.end - r.a, t);
        else ++unknownFrees_;
      } else {
        onFree(r);
      }
      break;
    case RecordType::Unmap: {
      uint64_t t = rel(r.ts);
      bucketAt(t);
      thread(r.tid).reallocPending = false;
      unmapRange(r.a, r.b, t);
      break;
    }
    case RecordType::Stack:
      onStack(r);
      break;
    case RecordType::Module: {
      int64_t mid = rec_.nextModuleId();
      db_.insertModule(mid, id_, std::string(r.text), r.a, r.b, r.c, rel(r.ts));
      modules_[{r.a, r.b}] = mid;
      moduleAt_[r.b] = ModuleSpan{r.c, mid};  // a later one at the same start: the newer wins
      break;
    }
    case RecordType::ModuleGone: {
      auto it = modules_.find({r.a, r.b});
      if (it != modules_.end()) {
        db_.setModuleUnload(it->second, rel(r.ts));
        auto at = moduleAt_.find(r.b);
        if (at != moduleAt_.end() && at->second.id == it->second) moduleAt_.erase(at);
        modules_.erase(it);
      }
      break;
    }
    case RecordType::Exit:
      exitRecord_ = static_cast<int>(r.a & 0xff);
      break;
    case RecordType::ChildStatus:
      rec_.noteWaitStatus(static_cast<uint32_t>(r.a), static_cast<int>(r.b));
      break;
    case RecordType::Marker: {
      uint64_t t = rel(r.ts);
      splitBucketAt(t);
      db_.insertMarker(id_, t, std::string(r.text));
      break;
    }
    case RecordType::PoolCreate:
      onPoolCreate(r);
      break;
    case RecordType::PoolDestroy:
      onPoolDestroy(r);
      break;
    case RecordType::PyCode:
      onPyCode(r);
      break;
    case RecordType::PyCodeTable:
      onPyCodeTable(r);
      break;
    case RecordType::PyFinalize:
      if (!pyFinalizeNs_) {
        pyFinalizeNs_ = std::max<uint64_t>(rel(r.ts), 1);
        db_.insertPythonFinalize(id_, pyFinalizeNs_);
        EndTimer timer("finalize sites");
        writeFinalizeSites();
      }
      break;
    case RecordType::LeakScan:  // the process waits in its exit: answered by the hook
      if (leakScanHook_) leakScanHook_(r);
      break;
    case RecordType::CollectorNote:  // a collector's fact (memledger_collector_note)
      rec_.noteCollector(r.text);
      break;
    case RecordType::Nop:
    case RecordType::ThreadName:    // reserved
    case RecordType::Continuation:  // stray: its head was dropped
    case RecordType::Count:
      break;
  }
}

// A pool that goes takes its blocks with it: they are released, not leaked.
void ImageRecorder::onPoolDestroy(const Decoded& r) {
  uint64_t t = rel(r.ts);
  bucketAt(t);
  uint32_t acc = accountOf(AllocKind::Custom, r.tag);
  FlatMap<LiveBlock, true>& blocks = blocksOf(acc);
  std::vector<std::pair<uint64_t, LiveBlock>> gone;
  blocks.forEach([&](uint64_t key, LiveBlock& b) { gone.emplace_back(fromMapKey(key), b); });
  for (auto& [address, b] : gone) {
    blocks.erase(mapKey(address), nullptr);
    freeBlock(address, b, t, Op::PoolFree, /*missed=*/true);
  }
  accounts_[acc].destroyedNs = t;
}

ImageRecorder::ThreadState& ImageRecorder::otherThread(uint32_t tid) {
  lastThread_ = threads_.insert(uint64_t{tid} + 1).first;  // +1: key 0 means empty
  lastTid_ = tid;
  return *lastThread_;
}

uint32_t ImageRecorder::newSiteFor(uint64_t hash, int k, uint32_t account) {
  // Hash 0 is "no stack"; the map reserves key 0, so that stack lives under a key no real hash
  // takes (hashFrames never returns 0, and ~0 stands in for it).
  uint64_t key = mapKey(hash);
  uint32_t idx;
  if (const uint32_t* found = stackByHash_.find(key)) {
    idx = *found;
  } else {
    // A fork child inherits its parent's per-thread stack caches: the frames were sent on the
    // parent's ring. Unknown anywhere: an empty stack, still its own site.
    std::vector<uint64_t> frames;
    if (hash && forkParent_ && forkParent_->stackFrames(hash, &frames))
      idx = internStack(key, frames.data(), frames.size());
    else
      idx = internStack(key, nullptr, 0);
  }
  int32_t& site = stacks_[idx].site[k];
  if (site >= 0 && sites_[static_cast<uint32_t>(site)].account == account) return static_cast<uint32_t>(site);
  uint32_t* extra = nullptr;
  if (site >= 0) {  // the stack already has a site of this kind, in another account
    auto [it, isNew] = extraSites_.try_emplace({idx, k, account}, 0);
    if (!isNew) return it->second;
    extra = &it->second;
  }
  uint32_t created = static_cast<uint32_t>(sites_.size());
  Site s;
  s.stack_id = stacks_[idx].dbId;
  s.kind = static_cast<AllocKind>(k);
  s.account = account;
  // Nothing of this site was live at any earlier peak.
  const Account& a = accounts_[account];
  s.stamp = a.epoch;
  if (a.global != kNoGlobal) s.gstamp = rec_.global(a.global).epoch;
  sites_.push_back(s);
  if (extra) *extra = created;
  else site = static_cast<int32_t>(created);
  return created;
}

ML_HOT void ImageRecorder::touch(Site& s) {
  const Account& a = accounts_[s.account];
  if (s.stamp < a.epoch) {
    s.at_peak_count = s.cur_count;
    s.at_peak_bytes = s.cur_bytes;
    s.stamp = a.epoch;
  }
  if (a.global != kNoGlobal) {
    uint64_t ge = rec_.global(a.global).epoch;
    if (s.gstamp < ge) {
      s.at_gpeak_count = s.cur_count;
      s.at_gpeak_bytes = s.cur_bytes;
      s.gstamp = ge;
    }
  }
}

ML_HOT void ImageRecorder::listInBucket(uint32_t site) {
  Site& s = sites_[site];
  if (!s.bucket_listed) {
    s.bucket_listed = true;
    bucketSites_.push_back(site);
  }
}

// A free (or the part of a mapping unmapped) in the current bucket: what each site held at any
// bucket's end is then its allocations minus its frees so far (schema 7).
ML_HOT void ImageRecorder::countFreeInBucket(uint32_t site, uint64_t frees, uint64_t bytes, bool temporary) {
  listInBucket(site);
  Site& s = sites_[site];
  s.bucket_frees += frees;
  s.bucket_freed_bytes += bytes;
  s.bucket_temps += temporary ? 1 : 0;
}

ML_HOT void ImageRecorder::countInBucket(uint32_t site, uint64_t size) {
  listInBucket(site);
  Site& s = sites_[site];
  ++s.bucket_allocs;
  s.bucket_bytes += size;
  // The curve's counts are the heap's, as its live bytes are (version 5): a phase's allocated
  // and freed bytes are then the heap's own.
  if (s.account == kHeap) {
    ++bucket_.allocs;
    bucket_.allocBytes += size;
  }
}

ML_HOT void ImageRecorder::accountChanged(uint32_t account, int64_t delta, uint64_t t) {
  Account& a = accounts_[account];
  a.live += delta;
  a.bucketMax = std::max(a.bucketMax, a.live);
  a.bucketMin = std::min(a.bucketMin, a.live);
  a.inBucket = true;
  if (a.live > static_cast<int64_t>(a.peak)) {
    a.peak = static_cast<uint64_t>(a.live);
    a.peakNs = t;
    ++a.epoch;  // every site's snapshot of this account is now stale; touch() refreshes it lazily
  }
  if (a.global != kNoGlobal) globalChanged(a.global, delta, t);
}

void ImageRecorder::globalChanged(uint32_t global, int64_t delta, uint64_t t) {
  Recording::GlobalSpace& g = rec_.global(global);
  g.live += delta;
  if (g.live > static_cast<int64_t>(g.peak)) {
    g.peak = static_cast<uint64_t>(g.live);
    g.peakNs = t;
    ++g.epoch;
  }
}

ML_HOT static void countAlloc(Site& s, uint64_t size) {
  if (s.alloc_count && size == s.last_size) ++s.same_size_count;
  s.last_size = size;
  ++s.alloc_count;
  s.alloc_bytes += size;
  s.min_size = std::min(s.min_size, size);
  s.max_size = std::max(s.max_size, size);
  ++s.cur_count;
  s.cur_bytes += size;
  s.max_live_count = std::max(s.max_live_count, s.cur_count);
  s.max_live_bytes = std::max(s.max_live_bytes, s.cur_bytes);
}

ML_HOT void ImageRecorder::onAlloc(const Decoded& r) {
  // A collector's event carries its own time (late activity records); the stamp orders it.
  uint64_t t = rel(__builtin_expect(r.event_ns != 0, 0) ? r.event_ns : r.ts);
  bucketAt(t);
  uint8_t op = static_cast<uint8_t>(r.aux);
  ThreadState& th = thread(r.tid);
  bool isRealloc = isReallocOp(op) && th.reallocPending;
  uint16_t chain = isRealloc ? static_cast<uint16_t>(std::min<uint32_t>(th.reallocChain + 1u, 65535u)) : 0;
  uint32_t reallocOf = isRealloc ? th.reallocOf : 0;
  th.reallocPending = false;
  (kinds::insideCountedMemory(r.kind) ? th.lastInsideAlloc : th.lastAlloc) = r.a;

  uint32_t account = accountOf(r.kind, r.tag);
  uint32_t site = siteFor(r.c, r.kind, account);
  FlatMap<LiveBlock, true>& live = blocksOf(account);
  auto [blk, isNew] = live.insert(mapKey(r.a));
  if (!isNew) {
    // The address is live already: its free was missed (e.g. freed by a path we do not hook).
    LiveBlock old = *blk;
    freeBlock(r.a, old, t, Op::Free, /*missed=*/true);
  }
  *blk = LiveBlock::make(r.b, t, site, r.tid, chain, op, reallocOf != 0);
  if (reallocOf) *reallocOf_.insert(mapKey(r.a)).first = reallocOf;

  Site& s = sites_[site];
  touch(s);
  countAlloc(s, r.b);
  if (isRealloc) {
    ++s.realloc_count;
    s.max_realloc_chain = std::max<uint64_t>(s.max_realloc_chain, chain);
  }
  countInBucket(site, r.b);
  accountChanged(account, static_cast<int64_t>(r.b), t);
}

ML_HOT void ImageRecorder::onFree(const Decoded& r) {
  uint64_t t = rel(__builtin_expect(r.event_ns != 0, 0) ? r.event_ns : r.ts);
  bucketAt(t);
  uint8_t op = static_cast<uint8_t>(r.aux);
  FlatMap<LiveBlock, true>& live = blocksOf(accountOf(r.kind, r.tag));
  LiveBlock b;
  uint32_t row = 0;
  uint16_t chain = 0;
  if (r.a && live.erase(r.a, &b)) {
    row = freeBlock(r.a, b, t, static_cast<Op>(op), /*missed=*/false);
    chain = b.chain();
  } else if (r.a) {
    ++unknownFrees_;  // e.g. a fork child freeing a block its parent allocated
  }
  ThreadState& th = thread(r.tid);
  th.reallocPending = isReallocOp(op);
  th.reallocChain = chain;
  th.reallocOf = row;
}

ML_HOT uint32_t ImageRecorder::freeBlock(uint64_t addr, const LiveBlock& b, uint64_t t, wire::Op op,
                                  bool missed) {
  Site& s = sites_[b.site];
  touch(s);
  uint64_t lifetime = t > b.tAlloc() ? t - b.tAlloc() : 0;
  uint64_t size = b.size();
  ++s.free_count;
  s.freed_bytes += size;
  --s.cur_count;
  s.cur_bytes -= size;
  s.lifetime_ns_sum += lifetime;
  // A realloc is a resize, not a short use: it never makes the old block a temporary.
  bool temporary = false;
  if (!missed && !isReallocOp(static_cast<uint8_t>(op))) {
    ThreadState* owner = (lastThread_ && lastTid_ == b.tid) ? lastThread_
                                                            : threads_.find(uint64_t{b.tid} + 1);
    uint64_t* last = !owner ? nullptr : kinds::insideCountedMemory(s.kind) ? &owner->lastInsideAlloc : &owner->lastAlloc;
    if (last && *last == addr) {
      ++s.temp_count;
      s.temp_bytes += size;
      *last = 0;
      temporary = true;
    }
  }
  countFreeInBucket(b.site, 1, size, temporary);
  uint32_t reallocOf = takeReallocOf(b, addr);
  uint32_t row = 0;
  if (!opt_.fold || lifetime >= opt_.fold_threshold_ns) row = writeAllocation(b, addr, t, reallocOf);
  if (s.account == kHeap) ++bucket_.frees;
  accountChanged(s.account, -static_cast<int64_t>(size), t);
  return row;
}

ML_HOT uint32_t ImageRecorder::takeReallocOf(const LiveBlock& b, uint64_t address) {
  uint32_t id = 0;
  if (b.hasReallocOf()) reallocOf_.erase(mapKey(address), &id);
  return id;
}

uint32_t ImageRecorder::writeAllocation(const LiveBlock& b, uint64_t address,
                                        std::optional<uint64_t> tFree, uint32_t reallocOf) {
  AllocationRow row;
  row.id = rec_.nextAllocationId();
  row.image_id = id_;
  row.tid = b.tid;
  row.kind = kinds::name(sites_[b.site].kind);
  row.op = opName(b.op());
  row.address = address;
  row.size = b.size();
  row.stack_id = sites_[b.site].stack_id;
  row.t_alloc = b.tAlloc();
  row.t_free = tFree;
  if (reallocOf) row.realloc_of = reallocOf;
  db_.insertAllocation(row);
  return static_cast<uint32_t>(row.id);
}

void ImageRecorder::onMmap(const Decoded& r, uint64_t t) {
  bucketAt(t);
  ThreadState& th = thread(r.tid);
  th.reallocPending = false;
  th.lastAlloc = r.a;
  if (r.b == 0) return;
  unmapRange(r.a, r.b, t);  // MAP_FIXED over an existing mapping replaces it
  uint32_t site = siteFor(r.c, AllocKind::Mmap, kMmap);
  uint32_t index;
  if (!freeMappings_.empty()) {
    index = freeMappings_.back();
    freeMappings_.pop_back();
  } else {
    index = static_cast<uint32_t>(mappings_.size());
    mappings_.emplace_back();
  }
  mappings_[index] = Mapping{r.a, r.b, r.b, t, site, r.tid, static_cast<uint8_t>(r.aux)};
  ranges_[r.a] = Range{r.a + r.b, index};
  Site& s = sites_[site];
  touch(s);
  countAlloc(s, r.b);
  countInBucket(site, r.b);
  accountChanged(kMmap, static_cast<int64_t>(r.b), t);
}

void ImageRecorder::unmapRange(uint64_t addr, uint64_t len, uint64_t t) {
  if (len == 0 || ranges_.empty()) return;
  uint64_t end = addr + len < addr ? UINT64_MAX : addr + len;
  auto it = ranges_.upper_bound(addr);
  if (it != ranges_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.end > addr) it = prev;
  }
  while (it != ranges_.end() && it->first < end) {
    uint64_t s = it->first, e = it->second.end;
    uint32_t mi = it->second.mapping;
    uint64_t lo = std::max(s, addr), hi = std::min(e, end);
    it = ranges_.erase(it);
    if (s < lo) ranges_.emplace(s, Range{lo, mi});              // the part below survives
    if (e > hi) it = ranges_.emplace_hint(it, hi, Range{e, mi});  // the part above survives
    uint64_t removed = hi - lo;
    Mapping& m = mappings_[mi];
    Site& site = sites_[m.site];
    touch(site);
    m.remaining -= removed;
    site.freed_bytes += removed;
    site.cur_bytes -= removed;
    countFreeInBucket(m.site, m.remaining == 0 ? 1 : 0, removed, false);  // counted as freed when all of it went
    accountChanged(kMmap, -static_cast<int64_t>(removed), t);
    if (m.remaining == 0) endMapping(mi, t);
    if (e > hi) break;  // hi == end: nothing further can overlap
  }
}

void ImageRecorder::endMapping(uint32_t index, uint64_t t) {
  Mapping& m = mappings_[index];
  Site& s = sites_[m.site];
  uint64_t lifetime = t > m.t_alloc ? t - m.t_alloc : 0;
  ++s.free_count;
  --s.cur_count;
  s.lifetime_ns_sum += lifetime;
  if (!opt_.fold || lifetime >= opt_.fold_threshold_ns) {
    writeAllocation(blockOf(m), m.address, t);
  }
  freeMappings_.push_back(index);
}

void ImageRecorder::close(uint64_t ts) {
  if (closed_) return;
  flushPendingCodes();
  applySamples(rel(ts));
  flushBucket();
  // Whatever is still live is a leak of this image: one row each, never freed.
  auto leak = [this](uint64_t key, LiveBlock& b) {
    uint64_t address = fromMapKey(key);
    writeAllocation(b, address, std::nullopt, takeReallocOf(b, address));
  };
  heap_.forEach([this](uint64_t key, LiveBlock& b) {
    uint64_t address = fromMapKey(key);
    writeLeakKind(writeAllocation(b, address, std::nullopt, takeReallocOf(b, address)), address, b);
  });
  if (scanRow_) db_.insertLeakScan(*scanRow_);
  for (Account& a : accounts_)
    if (a.blocks) a.blocks->forEach(leak);
  for (auto& [start, range] : ranges_) {
    Mapping& m = mappings_[range.mapping];
    if (m.remaining == 0) continue;
    writeAllocation(blockOf(m), m.address, std::nullopt);
    m.remaining = 0;  // one row per mapping, however many pieces it was split into
  }
  for (size_t i = 0; i < sites_.size(); ++i) {
    Site& s = sites_[i];
    const Account& a = accounts_[s.account];
    if (a.epoch == 0) {
      s.at_peak_count = s.at_peak_bytes = 0;  // nothing ever live in the account: no peak instant
    } else if (s.stamp < a.epoch) {
      s.at_peak_count = s.cur_count;
      s.at_peak_bytes = s.cur_bytes;
    }
    // The simultaneous peak so far: what this site held then (peakSitesAt() keeps it only if no
    // later peak came after this image ended).
    if (a.global != kNoGlobal) {
      if (s.gstamp < rec_.global(a.global).epoch) {
        s.at_gpeak_count = s.cur_count;
        s.at_gpeak_bytes = s.cur_bytes;
        s.gstamp = rec_.global(a.global).epoch;
      }
      if (s.at_gpeak_count != 0 || s.at_gpeak_bytes != 0) {
        if (closePeakSites_.size() <= a.global) closePeakSites_.resize(a.global + 1);
        closePeakSites_[a.global].push_back({static_cast<uint64_t>(s.stack_id), static_cast<uint64_t>(s.kind),
                                             s.at_gpeak_count, s.at_gpeak_bytes});
      }
    }
    SiteRow row;
    row.stack_id = s.stack_id;
    row.kind = static_cast<uint8_t>(s.kind);
    row.account = s.account;
    row.image_id = id_;
    row.alloc_count = s.alloc_count;
    row.alloc_bytes = s.alloc_bytes;
    row.free_count = s.free_count;
    row.freed_bytes = s.freed_bytes;
    row.leak_count = s.cur_count;
    row.leak_bytes = s.cur_bytes;
    row.peak_count = s.at_peak_count;
    row.peak_bytes = s.at_peak_bytes;
    row.temp_count = s.temp_count;
    row.temp_bytes = s.temp_bytes;
    row.realloc_count = s.realloc_count;
    row.max_live_count = s.max_live_count;
    row.max_live_bytes = s.max_live_bytes;
    row.min_size = s.alloc_count ? s.min_size : 0;
    row.max_size = s.max_size;
    row.same_size_count = s.same_size_count;
    row.lifetime_ns_sum = s.lifetime_ns_sum;
    row.max_realloc_chain = s.max_realloc_chain;
    db_.insertSite(row);
  }
  closeAccounts();
  if (unknownKinds_)
    std::fprintf(stderr, "memledger: warning: %llu records of image %lld had a kind this memledger does not know; not counted\n",
                 static_cast<unsigned long long>(unknownKinds_), static_cast<long long>(id_));
  heap_.release();
  reallocOf_.release();
  lastStackOf_.release();
  std::vector<LastStack>().swap(lastStacks_);
  if (unresolvedStacks_)
    std::fprintf(stderr, "memledger: warning: %llu stacks of image %lld arrived without their base; only their inner frames are known\n",
                 static_cast<unsigned long long>(unresolvedStacks_), static_cast<long long>(id_));
  ranges_.clear();
  std::vector<Mapping>().swap(mappings_);
  std::vector<uint32_t>().swap(freeMappings_);
  threads_.release();
  lastThread_ = nullptr;
  ipByAddress_.release();
  pathNodes_.release();  // nothing more is interned here (fork children ask stackFrames(), which
                        // reads treeNodes_ and addressByIp_)
  closed_ = true;
}

}  // namespace memledger::recorder
