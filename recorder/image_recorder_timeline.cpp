// The image's timeline (docs/architecture.md): the buckets of its curve, each written as a
// `timeline` row with the sites that allocated or freed in it, and the /proc samples (RSS,
// anonymous memory) applied as the event stream reaches their time.
#include <algorithm>

#include "image_recorder.h"

namespace memledger::recorder {

void ImageRecorder::resetBucketAccounts() {
  for (Account& a : accounts_) {
    a.bucketMax = a.bucketMin = a.live;
    a.inBucket = false;
  }
}

void ImageRecorder::newBucketAt(uint64_t t) {
  if (t < bucketEnd_) {  // the current bucket (or a little behind it): no division per event
    if (!pendingSamples_.empty() && pendingSamples_.front().t <= t) applySamples(t);
    return;  // applySamples() refreshed quietUntil_
  }
  int64_t idx = static_cast<int64_t>(t / opt_.bucket_ns);
  if (idx <= bucket_.index) {  // same bucket, or a timestamp a little behind: stay
    applySamples(t);
    return;
  }
  if (bucket_.index >= 0) {
    // Samples taken before the current bucket ended are the current bucket's.
    applySamples(static_cast<uint64_t>(bucket_.index + 1) * opt_.bucket_ns - 1);
    flushBucket();
  }
  applySamples(t);
  bucket_ = Bucket{idx, -1, 0, 0, 0};
  resetBucketAccounts();
  bucketEnd_ = static_cast<uint64_t>(idx + 1) * opt_.bucket_ns;
  refreshQuiet();
}

// A marker starts a phase at an exact instant: the bucket around it is cut there, so what came
// before the marker and what came after it never share a timeline row.
void ImageRecorder::splitBucketAt(uint64_t t) {
  bucketAt(t);
  if (bucket_.index < 0) return;
  int64_t start = bucket_.start >= 0 ? bucket_.start : bucket_.index * static_cast<int64_t>(opt_.bucket_ns);
  if (static_cast<int64_t>(t) <= start) return;
  flushBucket();
  bucket_ = Bucket{bucket_.index, static_cast<int64_t>(t), 0, 0, 0};
  resetBucketAccounts();
}

void ImageRecorder::flushBucket() {
  if (bucket_.index < 0) return;
  TimelineRow row;
  row.image_id = id_;
  row.t_ns = bucket_.start >= 0 ? static_cast<uint64_t>(bucket_.start)
                                 : static_cast<uint64_t>(bucket_.index) * opt_.bucket_ns;
  row.heap_bytes = accounts_[kHeap].live;
  row.heap_max = accounts_[kHeap].bucketMax;
  row.heap_min = accounts_[kHeap].bucketMin;
  row.mmap_bytes = accounts_[kMmap].live;
  for (uint32_t i = 2; i < accounts_.size(); ++i) {
    const Account& a = accounts_[i];
    if (a.inBucket) row.accounts.push_back({i, a.live, a.bucketMax, a.bucketMin});
  }
  row.rss_bytes = rss_;
  row.anon_bytes = anon_;
  row.allocs = bucket_.allocs;
  row.frees = bucket_.frees;
  row.alloc_bytes = bucket_.allocBytes;
  db_.insertTimeline(row);
  if (bucketSites_.empty()) return;
  bucketEntries_.clear();
  for (uint32_t i : bucketSites_) {
    Site& s = sites_[i];
    bucketEntries_.push_back({static_cast<uint64_t>(s.stack_id), static_cast<uint64_t>(s.kind), s.bucket_allocs,
                              s.bucket_bytes, s.bucket_frees, s.bucket_freed_bytes, s.bucket_temps});
    s.bucket_allocs = s.bucket_bytes = s.bucket_frees = s.bucket_freed_bytes = s.bucket_temps = 0;
    s.bucket_listed = false;
  }
  db_.insertSiteTimeline(id_, row.t_ns, bucketEntries_);
  bucketSites_.clear();
}

void ImageRecorder::sampleMemory(uint64_t ts, uint64_t rssBytes, std::optional<uint64_t> anonBytes,
                                 bool caughtUp) {
  if (closed_) return;
  peakRss_ = std::max(peakRss_, rssBytes);
  uint64_t t = rel(ts);
  // A sample must not run ahead of events still waiting in the ring: it waits until the event
  // stream reaches its time, unless the ring is drained (then nothing older can come).
  if (pendingSamples_.size() >= 1024) pendingSamples_.erase(pendingSamples_.begin());
  pendingSamples_.push_back(Sample{t, rssBytes, anonBytes});
  refreshQuiet();
  if (caughtUp) bucketAt(t);
}

void ImageRecorder::applySamples(uint64_t t) {
  size_t n = 0;
  while (n < pendingSamples_.size() && pendingSamples_[n].t <= t) {
    rss_ = pendingSamples_[n].rss;
    if (pendingSamples_[n].anon) anon_ = pendingSamples_[n].anon;
    ++n;
  }
  if (n) pendingSamples_.erase(pendingSamples_.begin(), pendingSamples_.begin() + static_cast<long>(n));
  refreshQuiet();
}

}  // namespace memledger::recorder
