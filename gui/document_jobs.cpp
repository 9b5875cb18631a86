#include "gui/document_jobs.h"

#include <algorithm>
#include <future>
#include <set>

#include "analyzer/tree_diff.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

std::shared_ptr<RecordingData> loadRecording(const std::string& file, an::QueryControl& control, bool levels,
                                             bool firstPart) {
  auto d = std::make_shared<RecordingData>();
  // A compressed recording past 16 MiB is decompressed into a temporary file, not into memory:
  // SQLite reads it through the page cache, and every range works from what the analyzer keeps
  // in memory anyway (a PyTorch run's 46 MB database was the GUI's largest single block).
  an::OpenOptions options;
  options.max_in_memory = uint64_t(16) << 20;
  d->rec = std::make_shared<an::Recording>(an::Recording::open(file, options));
  an::Filter listed;
  listed.top = kListedSites;
  if (firstPart) {
    d->report = an::reportFirstPart(*d->rec, listed, control);
  } else {
    d->report = an::report(*d->rec, listed, control);
    d->complete = true;
  }
  d->series = an::memorySeries(*d->rec, control);
  d->markers = an::markers(*d->rec);
  for (const auto& s : d->series) {
    std::vector<an::Series> coarser;
    for (size_t n = s.series.points.size() / 8; levels && n >= 4096 / 8 && s.series.points.size() > 4096; n /= 8) {
      if (control.cancelled) throw an::Cancelled();
      an::Curve c = an::downsample(s.series, 0, INT64_MAX, n);
      an::Series level;
      level.exact_peak = s.series.exact_peak;
      level.points.reserve(c.points.size());
      for (const an::CurvePoint& p : c.points) level.points.push_back({p.t_from_ns, p.last, p.max, p.min});
      coarser.push_back(std::move(level));
      if (c.points.size() < 4096) break;
    }
    d->levels.push_back(std::move(coarser));
  }
  d->end_ns = d->rec->info().duration_ns;
  for (const auto& s : d->series)
    if (!s.series.points.empty()) d->end_ns = std::max(d->end_ns, s.series.points.back().t_ns);
  for (const auto& p : d->report.processes) d->end_ns = std::max(d->end_ns, p.end_ns.value_or(p.start_ns));
  if (d->end_ns <= 0) d->end_ns = 1;
  return d;
}

namespace {
// The live set (the range's peak, or what was live at the chosen instant) that is to replace
// the whole-run peak; none for the whole run. `bySite` for TreeIndex::applyLive().
an::LiveSet liveOf(const RecordingData& d, const RangeRequest& q, an::QueryControl& control, bool bySite) {
  if (q.live_at) return an::liveAt(*d.rec, *q.live_at, control, bySite);
  if (q.from || q.to) return an::rangePeak(*d.rec, q.from.value_or(0), q.to.value_or(d.end_ns), &d.series, control, bySite);
  return {};
}

std::shared_ptr<const an::TreeIndex> waitFor(const RangeRequest::IndexFuture& index, an::QueryControl& control) {
  if (!index.valid()) return nullptr;
  while (index.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
    if (control.cancelled) throw an::Cancelled();
  return index.get();
}

// One recording's costs of the range: one per site of its tree index (its trees re-costed on
// the index's shapes, analyzer/tree_index.h), or, without an index or when the live set holds a
// site the index does not have, the list of its sites with anything in the range.
struct Side {
  const RecordingData* data = nullptr;
  std::shared_ptr<const an::TreeIndex> index;
  std::optional<std::vector<an::TreeCost>> indexed;
  std::vector<an::SiteCost> costs;  // when not indexed
  an::LiveSet live;

  Side(const RecordingData& d, std::shared_ptr<const an::TreeIndex> i, const RangeRequest& q, an::QueryControl& control)
      : data(&d), index(std::move(i)) {
    if (index) indexed = index->costs(*d.rec, q.from, q.to, control);
    else costs = an::siteCosts(*d.rec, q.from, q.to, control);
    live = liveOf(d, q, control, bool(index));
  }
  // The live set into the peak amounts (after both sides' availability is settled: `available`
  // as the caller left it stays).
  void applyLive(const RangeRequest& q, an::QueryControl& control) {
    if (indexed && !index->applyLive(*data->rec, *indexed, live)) {
      const bool available = live.available;
      indexed.reset();
      costs = an::siteCosts(*data->rec, q.from, q.to, control);
      live = liveOf(*data, q, control, false);
      live.available = live.available && available;
    }
    if (!indexed) an::applyLiveSet(costs, live);
    // Applied: one amount per activity site (5.6 MB for a PyTorch run) is not kept (`by_site = {}`
    // cleared it and kept its memory with the range).
    live.by_site = std::vector<int64_t>();
  }
  void addSpaces(std::set<std::string>& out) const {
    if (indexed)
      for (const std::string& s : index->spaces(*indexed)) out.insert(s);
    for (const auto& c : costs) out.insert(c.space);
  }
  size_t siteCount() const {
    return indexed ? size_t(std::count_if(indexed->begin(), indexed->end(), [](const an::TreeCost& c) {
                       return c.peak || c.leaked || c.allocated || c.count || c.temporary;
                     }))
                   : costs.size();
  }
  an::SizeHistogram sizes(const RangeRequest& q) const {
    return indexed ? an::sizeHistogram(*data->rec, *index, *indexed, q.from, q.to, 10)
                   : an::sizeHistogram(*data->rec, costs, q.from, q.to, 10);
  }
  // The list of sites (an indexed side's made from its costs), for the trees built from scratch.
  std::vector<an::SiteCost> list() const { return indexed ? index->siteCosts(*indexed) : costs; }
};
}  // namespace

std::shared_ptr<RangeData> computeRange(const RangeRequest& q, an::QueryControl& control) {
  auto r = std::make_shared<RangeData>();
  r->from_ns = q.from;
  r->to_ns = q.to;
  r->live_at_ns = q.live_at;
  r->show = q.b ? q.show : Show::A;
  r->shown = r->show == Show::B ? q.b : q.a;
  const RecordingData& shown = *r->shown;
  const an::Recording& rec = *shown.rec;
  // A range's leaks (its leaked blocks' rows, and the Python rule's snapshot) on a thread of
  // their own, beside the costs, live set and trees; cancelled with the request.
  an::Filter f;
  f.t_from_ns = q.from;
  f.t_to_ns = q.to;
  f.top = kListedSites;
  auto leakControl = std::make_shared<an::QueryControl>();
  std::future<an::Leaks> rangeLeaks, rangeLeaksB;  // B's: B − A's, of the same range
  if (q.from || q.to) {
    rangeLeaks = std::async(std::launch::async, [&rec, f, leakControl] { return an::leaks(rec, f, *leakControl); });
    if (r->show == Show::Diff)
      rangeLeaksB = std::async(std::launch::async, [&q, f, leakControl] { return an::leaks(*q.b->rec, f, *leakControl); });
  }
  struct CancelOnExit {  // before the future waits for it: a request that fails or is cancelled stops it
    std::shared_ptr<an::QueryControl> control;
    ~CancelOnExit() { control->cancel(); }
  } cancelLeaks{leakControl};
  // Each recording's trees on its own index (made once per recording; the job waits for it).
  r->index = waitFor(r->show == Show::B ? q.index_b : q.index, control);
  Side side(shown, r->index, q, control);
  std::optional<Side> other;  // B − A: B's side
  if (r->diff()) {
    r->other = q.b;
    other.emplace(*q.b, waitFor(q.index_b, control), q, control);
    // Both peaks follow the range, or neither: a delta of a range's peak and a whole run's is none.
    side.live.available = other->live.available = side.live.available && other->live.available;
    other->applyLive(q, control);
  }
  side.applyLive(q, control);
  if (control.cancelled) throw an::Cancelled();
  r->live = std::move(side.live);
  r->temporary_follows = (q.from || q.to) && r->live.available;
  std::set<std::string> spaces;
  side.addSpaces(spaces);
  if (other) other->addSpaces(spaces);
  r->spaces.assign(spaces.begin(), spaces.end());
  r->site_count = side.siteCount();
  if (!q.space.empty() && spaces.count(q.space)) r->space = q.space;
  // The Sizes histogram(s) on a thread of their own beside the trees: 10-40 ms of a PyTorch
  // range off the longest path (the leaks' thread is done by then or nearly).
  std::future<an::SizeHistogram> sizes = std::async(std::launch::async, [&] { return side.sizes(q); });
  std::future<an::SizeHistogram> sizesB;
  if (other) sizesB = std::async(std::launch::async, [&] { return other->sizes(q); });
  struct WaitSizes {  // they read the sides: done before the sides go, whatever throws
    std::future<an::SizeHistogram>&a, &b;
    ~WaitSizes() {
      if (a.valid()) a.wait();
      if (b.valid()) b.wait();
    }
  } waitSizes{sizes, sizesB};
  if (!other && side.indexed) {
    an::TreeIndex::Trees trees = side.index->trees(*side.indexed, r->space, q.bottom_up);
    r->top_down = std::move(trees.top_down);
    r->bottom_up = std::move(trees.bottom_up);
    r->symbols = std::move(trees.symbols);
  } else if (other) {
    // B − A: both sides' own trees merged node by node; without both indexes, one tree of both
    // recordings' sites (each site's frames listed: 400 MB a PyTorch run).
    an::DiffTrees trees;
    if (side.indexed && other->indexed) {
      trees = an::diffTrees(side.index->trees(*side.indexed, r->space, q.bottom_up),
                            other->index->trees(*other->indexed, r->space, q.bottom_up));
    } else {
      std::vector<an::SiteCost> a = side.list(), b = other->list();
      an::SiteFrames fa = an::siteFrames(rec, a), fb = an::siteFrames(*q.b->rec, b);
      trees = an::diffTrees(a, std::move(fa), std::move(b), std::move(fb), r->space);
    }
    r->top_down = std::move(trees.top_down.tree);
    r->top_down_change = std::move(trees.top_down.change);
    r->bottom_up = std::move(trees.bottom_up.tree);
    r->bottom_up_change = std::move(trees.bottom_up.change);
    r->symbols = std::move(trees.symbols);
  } else {
    const an::SiteFrames frames = an::siteFrames(rec, side.costs);
    if (control.cancelled) throw an::Cancelled();
    r->top_down = an::buildCallTree(side.costs, frames, an::TreeDirection::TopDown, r->space);
    if (q.bottom_up) r->bottom_up = an::buildCallTree(side.costs, frames, an::TreeDirection::BottomUp, r->space);
    if (control.cancelled) throw an::Cancelled();
    r->symbols = an::callerCallee(side.costs, frames, r->space);
  }
  r->top_down.t_from_ns = r->bottom_up.t_from_ns = q.from;
  r->top_down.t_to_ns = r->bottom_up.t_to_ns = q.to;
  r->leaks_list = rangeLeaks.valid() ? std::make_shared<const an::Leaks>(rangeLeaks.get())
                                     : std::shared_ptr<const an::Leaks>(r->shown, &shown.report.leaks);
  if (control.cancelled) throw an::Cancelled();
  r->sizes = sizes.get();
  if (r->diff()) {  // B's leaks and sizes of the same range, matched with A's per site
    const RecordingData& b = *q.b;
    std::optional<an::Leaks> rangedB;  // the whole run's are B's report's own, not copied
    const an::Leaks& leaksB = rangeLeaksB.valid() ? rangedB.emplace(rangeLeaksB.get()) : b.report.leaks;
    if (control.cancelled) throw an::Cancelled();
    r->leak_changes = std::make_shared<const an::ListChanges>(an::diffLeaks(r->leaks(), leaksB));
    r->size_changes = an::diffSizes(r->sizes, sizesB.get());
    r->headlines = an::compareHeadlines(shown.report, shown.series, b.report, b.series);
  }
  return r;
}

}  // namespace memledger::gui
