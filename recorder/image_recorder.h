// The per-image half of the recorder core: pairs allocations with frees, interns stacks, keeps
// the live set, the per-site aggregates, the exact heap peak (with the live set per site at that
// instant) and the timeline of one process image. It is a RecordSink: a RingReader drains into it,
// and tests feed it Decoded records by hand. Everything is O(1) per event and allocation-free on
// the hot path once the hash maps have grown. By default only blocks still live when the image
// ends (leaks) cost an `allocations` row; a freed block lives on in its site's exact totals and in
// the per-bucket site activity (`site_timeline`), which is all the analyzer needs of it.
//
// Decisions worth knowing when reading a recording:
// - Timeline: one row per bucket in which anything happened (an event or an RSS sample), at a
//   fixed width for the whole run (meta bucket_ns, `record --bucket-ms`, 1 ms by default). It is
//   not coarsened automatically: an idle process costs a row per RSS sample (every 10 ms), a
//   busy one a row per ms (3.6M rows per busy hour); pass a wider bucket for long runs.
// - A timestamp older than the current bucket (threads publish slightly out of order) counts in
//   the current bucket. An RSS sample waits until the event stream reaches its time.
// - `site_timeline`: per bucket, one row packing every site that allocated in it, written with the
//   bucket's timeline row; frees are not split per bucket.
// - `sites` rows are written when the image ends: a recorder killed mid-run leaves processes,
//   stacks, modules, timeline and site_timeline, but no per-site totals and no leak rows.
// - Temporaries: a block freed before the thread that allocated it allocated anything else; a
//   realloc's free is a resize, never a temporary. Python's objects (pyobject) and the other
//   kinds are two separate "anything else": recording the objects changes no heap temporary.
// - Accounts (schemas/kinds.h): every kind counts in one account of the image, an address space
//   (0 host heap: malloc + new, 1 anonymous mmap, then device:N, pinned, managed as they appear)
//   or a pool (custom blocks: in use inside memory already counted elsewhere). Each account has
//   its own live total, exact peak and curve; sites.peak_* is what was live at the peak of the
//   site's own account. Spaces also add into the Recording's simultaneous totals over all live
//   images (spaces rows of image 0, peak_site_lists).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <optional>
#include <string>
#include <vector>

#include "db_writer.h"
#include "flat_map.h"
#include "leak_classify.h"
#include "paged_array.h"
#include "ring_reader.h"

// Inlined into its callers, as a macro: the attribute and `inline` must stay together.
#define ML_HOT [[gnu::always_inline]] inline

namespace memledger::recorder {

class Recording;

// fold_threshold_ns meaning "no freed block gets a row": only leaks do.
inline constexpr uint64_t kLeaksOnly = UINT64_MAX;

struct RecordingOptions {
  uint64_t origin_ns = 0;              // CLOCK_MONOTONIC of the recording's t = 0
  uint64_t bucket_ns = 1'000'000;      // timeline bucket width
  // Freed blocks that lived at least this long get an `allocations` row (`record --fold-ms`).
  uint64_t fold_threshold_ns = kLeaksOnly;
  bool fold = true;                    // false: every allocation gets an `allocations` row
};

// meta allocation_rows for these options: 'leaks' | 'long_lived' | 'all'.
const char* allocationRowsPolicy(const RecordingOptions& opt);
// meta fold_threshold_ns: 0 for 'all', INT64_MAX for 'leaks' (SQLite integers are signed).
uint64_t foldThresholdMeta(const RecordingOptions& opt);

// One site: a stack and a kind, in one image.
struct Site {
  int64_t stack_id = 0;
  wire::AllocKind kind = wire::AllocKind::Malloc;
  uint32_t account = 0;  // index in the image's accounts
  uint64_t alloc_count = 0, alloc_bytes = 0, free_count = 0, freed_bytes = 0;
  uint64_t temp_count = 0, temp_bytes = 0, realloc_count = 0, max_realloc_chain = 0;
  uint64_t max_live_count = 0, max_live_bytes = 0, min_size = UINT64_MAX, max_size = 0;
  uint64_t same_size_count = 0, last_size = 0, lifetime_ns_sum = 0;
  uint64_t cur_count = 0, cur_bytes = 0;
  // Lazy snapshot of the live set at its account's peak: valid for the peak epoch in `stamp`;
  // the same for the recording's simultaneous peak of its space (gstamp: that space's epoch).
  uint64_t at_peak_count = 0, at_peak_bytes = 0, stamp = 0;
  uint64_t at_gpeak_count = 0, at_gpeak_bytes = 0, gstamp = 0;
  // Activity in the current timeline bucket (a `site_buckets` entry when it is flushed):
  // allocations, frees (schema 7) and temporaries (counted at their free); listed: the site is in
  // bucketSites_.
  uint64_t bucket_bytes = 0;
  uint64_t bucket_allocs = 0;
  uint64_t bucket_frees = 0, bucket_freed_bytes = 0, bucket_temps = 0;
  bool bucket_listed = false;
};

class ImageRecorder final : public RecordSink {
 public:
  ImageRecorder(Recording& rec, int64_t imageId, const RecordingOptions& opt,
                const ImageRecorder* forkParent);
  void onRecord(const Decoded& r) override;
  void prefetch(const wire::Record& ahead) override;
  // A live set past ~1 MiB of table no longer sits in L2: from there each event would miss.
  bool wantsPrefetch() const override {
    return heap_.size() >= kPrefetchLiveBlocks || stackByHash_.size() >= kPrefetchStacks ||
           (pyBlocks_ && pyBlocks_->size() >= kPrefetchLiveBlocks);
  }
  static constexpr uint32_t kNoGlobal = UINT32_MAX;
  static constexpr size_t kPrefetchLiveBlocks = 16384;
  static constexpr size_t kPrefetchStacks = 65536;

  // A /proc sample of the process (absolute CLOCK_MONOTONIC time). caughtUp: the ring holds
  // nothing older, so the timeline may advance to the sample's time.
  void sampleMemory(uint64_t ts, uint64_t rssBytes, std::optional<uint64_t> anonBytes,
                    bool caughtUp = true);
  // The image ended at `ts`: writes its leaks, sites and last timeline row; frees its live set.
  void close(uint64_t ts);
  bool closed() const { return closed_; }

  int64_t id() const { return id_; }
  std::optional<int> exitRecord() const { return exitRecord_; }
  uint64_t unknownFrees() const { return unknownFrees_; }
  uint64_t peakHeapBytes() const { return accounts_[kHeap].peak; }
  uint64_t peakHeapNs() const { return accounts_[kHeap].peakNs; }
  uint64_t peakMmapBytes() const { return accounts_[kMmap].peak; }
  uint64_t peakMmapNs() const { return accounts_[kMmap].peakNs; }
  uint64_t peakRss() const { return peakRss_; }
  int64_t heapBytes() const { return accounts_[kHeap].live; }
  int64_t mmapBytes() const { return accounts_[kMmap].live; }
  // The live set of this image's sites at the recording's simultaneous peak of global space
  // `global` reached in `epoch` (Recording::finish): nothing when the image had ended before.
  void peakSitesAt(uint32_t global, uint64_t epoch, std::vector<packed::PeakSiteEntry>& out) const;
  uint64_t events() const { return events_; }
  // Sites of this image (after close(): final aggregates). For tests and the summary line.
  const PagedArray<Site>& sites() const { return sites_; }

  // A stack this image interned, by its wire hash (fork children look up their parent's).
  bool stackFrames(uint64_t hash, std::vector<uint64_t>* frames) const;

  // ---- leak kinds (image_recorder_scan.cpp, docs/leak-kinds.md) ----
  // Called for a LeakScan record (the process waits in its exit until the hook answers it).
  void setLeakScanHook(std::function<void(const Decoded&)> hook) { leakScanHook_ = std::move(hook); }
  // Classifies the live heap blocks of process `pid` now (r: the LeakScan record); their kinds go
  // to leak_kinds when the image closes. false when the process could not be scanned.
  bool runLeakScan(uint32_t pid, const Decoded& r);
  // Records that the scan was not run (status 'failed', error) for the leak_scans row.
  void noteLeakScanSkipped(const Decoded& r, const std::string& why);
  uint64_t leakScanNs() const { return scanRow_ ? scanRow_->duration_ns : 0; }

 private:
  struct StackInfo {
    int64_t dbId;
    uint32_t node;  // its innermost frame's node in treeNodes_ (0: the empty stack)
    int32_t site[kinds::kKindCount];  // this stack's site per kind (in the kind's usual account)
  };
  // 24 bytes, so a live-set slot (key + block) is 32 and never straddles a cache line: the live
  // set is the recorder's biggest structure and each event misses the cache on it once.
  // The kind is the site's (a site is a stack and a kind), so the block keeps none of its own.
  struct LiveBlock {
    uint64_t sizeChain;  // size (low 48 bits) | reallocs of this block so far (high 16)
    uint64_t tOp;        // t_alloc (low 56 bits) | op (7, kinds::Op) | has a realloc_of (1)
    uint32_t site;
    uint32_t tid;

    static LiveBlock make(uint64_t size, uint64_t t, uint32_t site, uint32_t tid, uint16_t chain,
                          uint8_t op, bool hasReallocOf) {
      return LiveBlock{(size & kSizeMask) | (uint64_t{chain} << 48),
                       (t & kTimeMask) | (uint64_t{op} & 127) << 56 | (hasReallocOf ? 1ull << 63 : 0),
                       site, tid};
    }
    uint64_t size() const { return sizeChain & kSizeMask; }
    uint16_t chain() const { return static_cast<uint16_t>(sizeChain >> 48); }
    uint64_t tAlloc() const { return tOp & kTimeMask; }
    uint8_t op() const { return static_cast<uint8_t>((tOp >> 56) & 127); }
    bool hasReallocOf() const { return tOp >> 63; }
    static constexpr uint64_t kSizeMask = (1ull << 48) - 1;  // 256 TiB
    static constexpr uint64_t kTimeMask = (1ull << 56) - 1;  // 2.2 years of nanoseconds
  };
  static_assert(sizeof(LiveBlock) == 24);
  struct Mapping {  // one mmap call; its address range may be split by partial munmaps
    uint64_t address, size, remaining, t_alloc;
    uint32_t site, tid;
    uint8_t op;
  };
  struct Range {
    uint64_t end;
    uint32_t mapping;
  };
  struct ThreadState {
    uint64_t lastAlloc = 0;        // address of the thread's most recent allocation, 0 after it died
    // The same for kinds inside counted memory (pyobject): apart, so that recording Python's
    // objects leaves the other blocks' temporaries as they were.
    uint64_t lastInsideAlloc = 0;
    bool reallocPending = false;   // the thread's last record was a realloc's free
    uint16_t reallocChain = 0;
    uint32_t reallocOf = 0;
  };
  struct Bucket {
    int64_t index = -1;
    int64_t start = -1;  // when a marker split the bucket: the marker's time (else index * bucket_ns)
    uint64_t allocs = 0, frees = 0, allocBytes = 0;
  };
  // One account (see the header comment): a space's or a pool's live total in this image.
  struct Account {
    std::string name, space, kind;  // spaces row: "heap", "device:0", "pool:arena"; its space
    bool pool = false;
    uint32_t poolId = 0;
    uint64_t base = 0, reserved = 0;
    std::optional<uint64_t> createdNs, destroyedNs;
    int64_t live = 0;
    uint64_t peak = 0, peakNs = 0, epoch = 0;
    int64_t bucketMax = 0, bucketMin = 0;
    bool inBucket = false;             // changed in the current bucket
    uint32_t global = kNoGlobal;       // the Recording's simultaneous total of its space
    uint64_t closeGlobalEpoch = 0;     // that total's epoch when this image ended
    std::unique_ptr<FlatMap<LiveBlock, true>> blocks;  // its live blocks (heap: heap_, mmap: ranges_)
  };
  static constexpr uint32_t kHeap = 0, kMmap = 1;

  uint64_t rel(uint64_t ts) const { return ts > opt_.origin_ns ? ts - opt_.origin_ns : 0; }
  // FlatMap reserves key 0: an address (or hash) 0 is kept under ~0, which none takes.
  static uint64_t mapKey(uint64_t v) { return v ? v : ~uint64_t{0}; }
  static uint64_t fromMapKey(uint64_t key) { return key == ~uint64_t{0} ? 0 : key; }
  // A mapping as a block, for its allocations row.
  static LiveBlock blockOf(const Mapping& m) {
    return LiveBlock::make(m.size, m.t_alloc, m.site, m.tid, 0, m.op, false);
  }
  // Every event asks for its thread; consecutive events mostly come from the same one.
  ThreadState& thread(uint32_t tid) {
    if (lastThread_ && tid == lastTid_) return *lastThread_;
    return otherThread(tid);
  }
  ThreadState& otherThread(uint32_t tid);
  // The site of a stack and kind: a lookup in the common case, interning a new one otherwise.
  // Kinds the wire brings are checked by the caller (kinds::known): k < kKindCount here.
  ML_HOT uint32_t siteFor(uint64_t stackHash, wire::AllocKind kind, uint32_t account) {
    int k = static_cast<int>(kind);
    if (const uint32_t* found = stackByHash_.find(mapKey(stackHash))) {
      int32_t site = stacks_[*found].site[k];
      // Heap kinds always count in account 0; others may differ by device or pool.
      if (site >= 0 && (account == kHeap || sites_[static_cast<uint32_t>(site)].account == account))
        return static_cast<uint32_t>(site);
    }
    return newSiteFor(stackHash, k, account);
  }
  uint32_t newSiteFor(uint64_t stackHash, int kind, uint32_t account);
  // The account a kind counts in (tag: device number or pool id). Heap kinds: always 0.
  ML_HOT uint32_t accountOf(wire::AllocKind kind, uint32_t tag) {
    if (kind == wire::AllocKind::Malloc || kind == wire::AllocKind::New) return kHeap;
    if (kind == wire::AllocKind::Mmap) return kMmap;
    return otherAccount(kind, tag);
  }
  uint32_t otherAccount(wire::AllocKind kind, uint32_t tag);
  // The pool "pymalloc"'s live blocks (record --python-allocators), once it exists: Python's
  // objects are most of such a run's events, prefetched as the heap's are.
  FlatMap<LiveBlock, true>* pyBlocks_ = nullptr;
  FlatMap<LiveBlock, true>& blocksOf(uint32_t account) {
    return account == kHeap ? heap_ : *accounts_[account].blocks;
  }
  void onPoolCreate(const Decoded& r);
  void onPoolDestroy(const Decoded& r);
  void closeAccounts();  // at close(): spaces rows, the simultaneous totals (image_recorder_accounts.cpp)
  void resetBucketAccounts();
  void onStack(const Decoded& r);
  // The outermost `known` frames of `frames` are a path whose hashes and nodes are known: those
  // of the thread's previous stack (LastStack), which shared them, or known is 0. Its vectors
  // hold them at [len] for len in 0..known, and the new stack's path is written into the same
  // vectors from known + 1 on: a path is indexed from the outer end, so the shared part stays
  // where it is (copying ~100 entries of each per new stack was ~5% of the recorder's time on
  // torch's import).
  struct OuterPath {
    size_t known;
    std::vector<uint64_t>* hashes;
    std::vector<uint32_t>* nodes;
  };
  uint32_t internStack(uint64_t hash, const uint64_t* frames, size_t n, OuterPath outer = {});
  // Returns the stack's stacks.id; leafNode_ is then its node in treeNodes_, and the outer
  // path's vectors (none given: scratchHashes_ and scratchNodes_) hold its path's hashes and
  // nodes ([len] for len in 0..n).
  int64_t addToStackTree(const uint64_t* frames, size_t n, OuterPath outer);
  uint32_t ipId(uint64_t address);
  // The per-event steps below are small and run once or twice per event: always inlined (at -O2
  // GCC kept them as calls, whose entry, exit and reloads of members were ~15% of the reader's
  // instructions per event on a malloc storm).
  ML_HOT void touch(Site& s);  // copies the live state into the peak snapshot once per peak epoch
  ML_HOT void bucketAt(uint64_t t) {
    if (t < quietUntil_) return;  // the current bucket, no sample due
    newBucketAt(t);
  }
  void newBucketAt(uint64_t t);
  void refreshQuiet() {
    quietUntil_ = pendingSamples_.empty() ? bucketEnd_ : std::min(bucketEnd_, pendingSamples_.front().t);
  }
  void flushBucket();
  ML_HOT void countInBucket(uint32_t site, uint64_t size);
  ML_HOT void countFreeInBucket(uint32_t site, uint64_t frees, uint64_t bytes, bool temporary);
  ML_HOT void listInBucket(uint32_t site);
  void splitBucketAt(uint64_t t);
  ML_HOT void accountChanged(uint32_t account, int64_t delta, uint64_t t);
  void globalChanged(uint32_t global, int64_t delta, uint64_t t);

  ML_HOT void onAlloc(const Decoded& r);  // once each in onRecord
  ML_HOT void onFree(const Decoded& r);
  void onMmap(const Decoded& r, uint64_t t);
  void unmapRange(uint64_t addr, uint64_t len, uint64_t t);
  // Returns the allocations row written for the block, 0 when it was folded.
  ML_HOT uint32_t freeBlock(uint64_t addr, const LiveBlock& b, uint64_t t, wire::Op op, bool missed);
  void endMapping(uint32_t index, uint64_t t);
  uint32_t writeAllocation(const LiveBlock& b, uint64_t address, std::optional<uint64_t> tFree,
                           uint32_t reallocOf = 0);
  ML_HOT uint32_t takeReallocOf(const LiveBlock& b, uint64_t address);
  void applySamples(uint64_t t);

  // Leak kinds of the blocks live at the scan, by address (sorted), with their allocation time
  // to tell a block allocated again at the same address after the scan.
  void writeLeakKind(uint32_t allocationId, uint64_t address, const LiveBlock& b);
  std::function<void(const Decoded&)> leakScanHook_;
  std::vector<uint64_t> scanAddress_;
  std::vector<uint64_t> scanTimeKind_;  // t_alloc << 8 | kind
  std::optional<LeakScanRow> scanRow_;

  Recording& rec_;
  DbWriter& db_;
  int64_t id_;
  RecordingOptions opt_;
  const ImageRecorder* forkParent_;
  bool closed_ = false;
  // After close(): per global space, this image's sites that held something at its simultaneous
  // peak as it stood then, in site order (what peakSitesAt() answers when no later peak came):
  // gathered in close()'s pass over the sites instead of a second pass (700k sites of 248 bytes
  // on torch_mlp: ~35 ms).
  std::vector<std::vector<packed::PeakSiteEntry>> closePeakSites_;
  // Python: the time its interpreter started finalizing (rel ns), 0 none (python_frames.h).
  uint64_t pyFinalizeNs_ = 0;
  void onPyCode(const Decoded& r);
  void onPyCodeTable(const Decoded& r);
  void flushPendingCodes();
  // Code objects whose line table is still arriving in PyCodeTable records, by serial.
  struct PendingCode {
    std::string name, file, table;
    int32_t firstLine = 0;
    uint64_t version = 0, tableBytes = 0;
  };
  std::map<uint64_t, PendingCode> pendingCodes_;
  void writeFinalizeSites();
  uint64_t events_ = 0;

  FlatMap<uint32_t> stackByHash_;
  PagedArray<StackInfo> stacks_;
  FlatMap<uint32_t> ipByAddress_;
  FlatMap<uint64_t> addressByIp_;  // ips.id -> address, for stackFrames() (kept after close)
  // The stack tree in memory, one node per distinct frame path from the outermost frame; `row`
  // is the stacks.id of the row whose whole stack is exactly this path (0: none yet).
  struct TreeNode {
    uint32_t parent, ip;
    int64_t row;
    uint32_t stack;  // 1 + index in stacks_ of the stack that is exactly this path, 0: none
  };
  static uint64_t mixHash(uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }
  PagedArray<TreeNode> treeNodes_;
  // Hash of a path's frame addresses, outermost first (64 bits: a collision among millions of
  // paths is ~1e-7 likely) -> node index in treeNodes_.
  FlatMap<uint32_t> pathNodes_;
  uint32_t leafNode_ = 0;  // the node addToStackTree() ended at
  std::vector<uint32_t> scratchIps_, scratchShared_;
  // Per thread, its last Stack record's whole stack (a delta record's base, wire.h "Stack
  // records") and, when it was interned here just now, its path hashes (outermost first).
  struct LastStack {
    uint64_t hash = 0;
    std::vector<uint64_t> frames;  // innermost first
    std::vector<uint64_t> pathHashes;  // [len] for len in 0..frames.size(); empty: not known
    std::vector<uint32_t> pathNodes;   // the same paths' nodes in treeNodes_
  };
  FlatMap<uint32_t> lastStackOf_;  // tid + 1 -> index in lastStacks_
  std::vector<LastStack> lastStacks_;
  std::vector<uint64_t> scratchFrames_;
  uint64_t unresolvedStacks_ = 0;  // delta records whose base was not found (corrupt input)
  std::vector<uint64_t> scratchHashes_;
  std::vector<uint32_t> scratchNodes_;
  PagedArray<Site> sites_;

  FlatMap<LiveBlock, true> heap_;    // malloc/new family (account 0)
  std::vector<Account> accounts_;
  std::map<uint64_t, uint32_t> accountByKey_;  // (shape, kind, tag) -> index in accounts_
  uint64_t lastAccountKey_ = UINT64_MAX;
  uint32_t lastAccount_ = 0;
  // Sites of a stack and kind in an account other than the stack's usual one for that kind.
  std::map<std::tuple<uint32_t, int, uint32_t>, uint32_t> extraSites_;
  // allocations.id of the block a live heap block was realloc'ed from, by address: only blocks
  // whose old block got a row (--fold-ms, --no-fold) have one, so it stays out of LiveBlock.
  FlatMap<uint32_t> reallocOf_;
  std::map<uint64_t, Range> ranges_;  // anonymous mmap, by start address
  std::vector<Mapping> mappings_;
  std::vector<uint32_t> freeMappings_;
  FlatMap<ThreadState> threads_;
  uint32_t lastTid_ = 0;
  ThreadState* lastThread_ = nullptr;

  std::map<std::pair<uint64_t, uint64_t>, int64_t> modules_;  // (bias, start) -> modules.id
  // The image's own modules loaded now, by start: a new ip's module_id is written with its row
  // (symbolization checks it against its own answer and corrects the few that differ: ips of
  // modules inherited through fork, or arriving before their Module record).
  struct ModuleSpan {
    uint64_t end;
    int64_t id;
  };
  std::map<uint64_t, ModuleSpan> moduleAt_;
  int64_t moduleOf(uint64_t address) const;  // 0: none known

  uint64_t unknownFrees_ = 0, peakRss_ = 0, unknownKinds_ = 0;
  std::optional<int> exitRecord_;
  Bucket bucket_;
  uint64_t bucketEnd_ = 0;  // where bucket_ ends (0: no bucket yet)
  uint64_t quietUntil_ = 0;  // before this, an event needs nothing of bucketAt (bucketEnd_, next sample)
  std::vector<uint32_t> bucketSites_;  // sites that allocated or freed in the current bucket
  std::vector<SiteBucketEntry> bucketEntries_;  // their site_buckets entries when it is flushed
  struct Sample {
    uint64_t t, rss;
    std::optional<uint64_t> anon;
  };
  std::vector<Sample> pendingSamples_;
  std::optional<uint64_t> rss_, anon_;
};

}  // namespace memledger::recorder
