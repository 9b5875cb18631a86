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
  // A alone: its tree shapes, made once, re-costed (analyzer/tree_index.h).
  std::shared_ptr<const an::TreeIndex> index;
  if (r->show == Show::A && q.index.valid()) {
    while (q.index.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
      if (control.cancelled) throw an::Cancelled();
    index = q.index.get();
    r->index = index;
  }
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
  // A's trees on the index: one cost per site, the live set applied there (no list of sites and
  // lookups); a live set holding a site of its own (none of the index's) goes the long way.
  std::optional<std::vector<an::TreeCost>> indexed;
  if (index) {
    std::vector<an::TreeCost> costs = index->costs(rec, q.from, q.to, control);
    r->live = liveOf(shown, q, control, true);
    if (control.cancelled) throw an::Cancelled();
    if (index->applyLive(rec, costs, r->live)) indexed = std::move(costs);
    // Applied: one amount per activity site (5.6 MB for a PyTorch run) is not kept (`by_site = {}`
    // cleared it and kept its memory with the range).
    r->live.by_site = std::vector<int64_t>();
  }
  if (!indexed) {
    r->costs = an::siteCosts(rec, q.from, q.to, control);
    r->live = liveOf(shown, q, control, false);
  }
  if (control.cancelled) throw an::Cancelled();
  std::vector<an::SiteCost> costsB;
  an::SizeHistogram sizesB;  // B − A: B's sizes of the range
  an::LiveSet liveB;
  if (r->diff()) {
    r->other = q.b;
    costsB = an::siteCosts(*q.b->rec, q.from, q.to, control);
    liveB = liveOf(*q.b, q, control, false);
    // Both peaks follow the range, or neither: a delta of a range's peak and a whole run's is none.
    if (!liveB.available) r->live.available = false;
    if (r->live.available) an::applyLiveSet(costsB, liveB);
  }
  if (!indexed) an::applyLiveSet(r->costs, r->live);
  r->temporary_follows = (q.from || q.to) && r->live.available;
  std::set<std::string> spaces;
  for (const auto& c : r->costs) spaces.insert(c.space);
  for (const auto& c : costsB) spaces.insert(c.space);
  if (indexed)
    for (const std::string& s : index->spaces(*indexed)) spaces.insert(s);
  r->spaces.assign(spaces.begin(), spaces.end());
  r->site_count = indexed ? size_t(std::count_if(indexed->begin(), indexed->end(), [](const an::TreeCost& c) {
                              return c.peak || c.leaked || c.allocated || c.count || c.temporary;
                            }))
                          : r->costs.size();
  if (!q.space.empty() && spaces.count(q.space)) r->space = q.space;
  // The Sizes histogram of A's indexed costs (their counts and amounts, which the trees do not
  // change) on a thread of its own beside the trees: 10-40 ms of a PyTorch range off the longest
  // path (the leaks' thread is done by then or nearly).
  std::future<an::SizeHistogram> indexedSizes;
  if (indexed)
    indexedSizes = std::async(std::launch::async, [&rec, &index, &indexed, &q] {
      return an::sizeHistogram(rec, *index, *indexed, q.from, q.to, 10);
    });
  an::SiteFrames frames = indexed ? an::SiteFrames{} : an::siteFrames(rec, r->costs);
  if (control.cancelled) throw an::Cancelled();
  if (indexed) {
    an::TreeIndex::Trees trees = index->trees(*indexed, r->space);
    r->top_down = std::move(trees.top_down);
    r->bottom_up = std::move(trees.bottom_up);
    r->symbols = std::move(trees.symbols);
  } else if (r->diff()) {
    sizesB = an::sizeHistogram(*q.b->rec, costsB, q.from, q.to, 10);  // before costsB moves into the trees
    an::SiteFrames framesB = an::siteFrames(*q.b->rec, costsB);
    an::DiffTrees trees = an::diffTrees(r->costs, std::move(frames), std::move(costsB), std::move(framesB), r->space);
    r->top_down = std::move(trees.top_down.tree);
    r->top_down_change = std::move(trees.top_down.change);
    r->bottom_up = std::move(trees.bottom_up.tree);
    r->bottom_up_change = std::move(trees.bottom_up.change);
    r->symbols = std::move(trees.symbols);
  } else {
    r->top_down = an::buildCallTree(r->costs, frames, an::TreeDirection::TopDown, r->space);
    r->bottom_up = an::buildCallTree(r->costs, frames, an::TreeDirection::BottomUp, r->space);
    if (control.cancelled) throw an::Cancelled();
    r->symbols = an::callerCallee(r->costs, frames, r->space);
  }
  r->top_down.t_from_ns = r->bottom_up.t_from_ns = q.from;
  r->top_down.t_to_ns = r->bottom_up.t_to_ns = q.to;
  r->leaks_list = rangeLeaks.valid() ? std::make_shared<const an::Leaks>(rangeLeaks.get())
                                     : std::shared_ptr<const an::Leaks>(r->shown, &shown.report.leaks);
  if (control.cancelled) throw an::Cancelled();
  // The range's costs (their sizes: the whole run's, in the site list): no site read again.
  r->sizes = indexed ? indexedSizes.get() : an::sizeHistogram(rec, r->costs, q.from, q.to, 10);
  if (r->diff()) {  // B's leaks and sizes of the same range, matched with A's per site
    const RecordingData& b = *q.b;
    std::optional<an::Leaks> rangedB;  // the whole run's are B's report's own, not copied
    const an::Leaks& leaksB = rangeLeaksB.valid() ? rangedB.emplace(rangeLeaksB.get()) : b.report.leaks;
    if (control.cancelled) throw an::Cancelled();
    r->leak_changes = std::make_shared<const an::ListChanges>(an::diffLeaks(r->leaks(), leaksB));
    r->size_changes = an::diffSizes(r->sizes, sizesB);
    r->headlines = an::compareHeadlines(shown.report, shown.series, b.report, b.series);
  }
  return r;
}

}  // namespace memledger::gui
