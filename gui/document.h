// One open recording and the answers the views show, computed on worker threads.
//
// The GUI thread never runs a query: open() and setRange() start a job on the document's own
// thread pool (QtConcurrent) that asks the analyzer and hands plain value structs back with a queued call.
// A newer request cancels the older one through its QueryControl (analyzer/analyzer.h), and a
// result that arrives after a newer request is dropped. Views only read what is published here.
#pragma once

#include <QFuture>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QThreadPool>

#include <future>
#include <memory>
#include <optional>

#include "analyzer/analyzer.h"
#include "analyzer/call_tree.h"
#include "analyzer/list_diff.h"
#include "analyzer/live_set.h"
#include "analyzer/series_set.h"
#include "analyzer/site_chart.h"
#include "analyzer/size_histogram.h"
#include "analyzer/tree_index.h"

namespace memledger::gui {

// The most sites a list of the report (leaks, live at the peak, temporaries) holds in the GUI:
// every leak site with its stack copied was gigabytes for a PyTorch run's 210,000 leak sites.
// The totals are over every site; the trees hold every site.
inline constexpr size_t kListedSites = 1000;

// What the Summary and the Timeline need: read first, so they show before the trees are built.
struct RecordingData {
  std::shared_ptr<analyzer::Recording> rec;  // shared with the jobs that still read it
  // analyzer::reportFirstPart() when opened; its second part (phases, fragmentation,
  // temporaries, patterns, suggestions) is filled in on the GUI thread when it is done
  // (Document::reportCompleted), then `complete` is set. Workers read only the first part.
  analyzer::Report report;
  bool complete = false;
  std::vector<analyzer::NamedSeries> series;
  std::vector<analyzer::Marker> markers;
  // Per series (same order), coarser copies for drawing a wide view: each the series
  // downsampled (analyzer::downsample, the envelope kept) to an eighth of the one before, until
  // under 4096 points. The timeline draws from the finest one with at most 8 points per column.
  std::vector<std::vector<analyzer::Series>> levels;
  int64_t end_ns = 0;  // the time axis' end: the run's duration or the last bucket
};

// Which recording the per-site views show when a second one (B) is open for comparison: the
// open one (A), B, or B − A per site (the trees' costs are then signed deltas).
enum class Show { A, B, Diff };
const char* showName(Show show);  // a | b | diff

// The per-site answers of one time range (the whole run when from/to are empty).
struct RangeData {
  Show show = Show::A;
  // The recording whose sites these are (A or B; B − A: A, with `other` B). Frames in the trees
  // point into them, so they live as long as the trees.
  std::shared_ptr<const RecordingData> shown, other;
  std::optional<int64_t> live_at_ns;  // the peak amounts are what was live then (no range)
  // With a range or live_at: the live set that replaced the whole-run peak (analyzer/live_set.h:
  // per space its instant and how exact). Not available (an older file): the peak is whole-run.
  analyzer::LiveSet live;
  bool temporary_follows = false;  // temporaries are those of the range (version 7 files)
  // B − A: per node the sum of the absolute changes at and below it (a difference flame graph's widths).
  std::vector<analyzer::TreeCost> top_down_change, bottom_up_change;
  bool diff() const { return show == Show::Diff; }
  bool peakFollows() const { return live.available; }
  // The shown recording's tree shapes (built once), whose trees these are (B − A: merged with
  // B's, which the trees' storage keeps).
  std::shared_ptr<const analyzer::TreeIndex> index;
  std::optional<int64_t> from_ns, to_ns;
  std::optional<std::string> space;  // the trees' space (nullopt: every space summed)
  std::vector<std::string> spaces;   // the spaces the sites are in, sorted
  // How many sites have anything in the range.
  size_t site_count = 0;
  analyzer::CallTree top_down, bottom_up;  // bottom_up: no nodes unless a view asked for it
  std::vector<analyzer::SymbolCost> symbols;
  // The range's leaks; the whole run's are the report's own (shared, not copied: 1000 sites with
  // their stacks, 26 MB for a PyTorch run).
  std::shared_ptr<const analyzer::Leaks> leaks_list;
  const analyzer::Leaks& leaks() const {
    static const analyzer::Leaks none;
    return leaks_list ? *leaks_list : none;
  }
  analyzer::SizeHistogram sizes;  // allocation sizes made in the range
  // B − A: the range's leaks and sizes of A (`leaks`, `sizes` above) and of B matched by site
  // (analyzer/list_diff.h), and the two runs' headline numbers; empty otherwise. The leak changes
  // are held apart, as the leaks are: the Leaks view keeps them, not the range's trees.
  std::shared_ptr<const analyzer::ListChanges> leak_changes;
  std::vector<analyzer::SizeBucketChange> size_changes;
  std::vector<analyzer::HeadlineChange> headlines;
  bool ranged() const { return from_ns || to_ns; }
};

class Document : public QObject {
  Q_OBJECT
 public:
  explicit Document(QObject* parent = nullptr);
  ~Document() override;  // cancels and waits for running jobs

  void open(const QString& path);
  // Filters the per-site views to allocations made in [from, to]; nullopt/nullopt: the whole run.
  // A range clears a live-at instant.
  void setRange(std::optional<int64_t> from_ns, std::optional<int64_t> to_ns);
  // The trees' peak amounts become what was live at t (nullopt: back to the peak); clears a range.
  void setLiveAt(std::optional<int64_t> t_ns);
  std::optional<int64_t> liveAt() const { return liveAt_; }
  // A second recording (B) to compare with: opened on a worker, then compareOpened() (or
  // compareFailed()). Every per-site view can then show A, B or B − A (setShow).
  void setCompare(const QString& path);
  std::shared_ptr<const RecordingData> compareData() const { return compare_; }
  void setShow(Show show);
  Show show() const { return show_; }
  // The charts (analyzer/site_chart.h) of the shown recording(s) for a window; the space is the
  // trees' one. A newer request cancels an older one; chartsChanged() when they are in.
  void requestCharts(const analyzer::ChartRequest& request);
  std::shared_ptr<const analyzer::SiteCharts> charts() const { return charts_; }
  bool chartsBusy() const { return chartsBusy_; }
  void cancel();
  // The space the trees show ("" every space; the default "heap", or every space when the
  // recording has no heap sites). Peaks of different spaces never add up: one at a time.
  void setSpace(const QString& space);
  QString space() const { return space_; }

  QString path() const { return path_; }
  std::shared_ptr<const RecordingData> data() const { return data_; }
  std::shared_ptr<const RangeData> range() const { return range_; }
  // Whether a view that shows the trees (top-down, bottom-up, flame graph) is on screen. When
  // none is, a new range lets go of the current range's trees before it makes its own (a PyTorch
  // run's are 50 MB, held beside the new ones while they were made); a tree view shown later
  // shows "building" until the range comes, or has its trees made again when none is coming.
  void setTreesShown(bool shown);
  // Whether a view that shows the bottom-up tree (Bottom-Up, the inverted flame graph) is on
  // screen: only then does a range make it (a PyTorch run's has 700,000 nodes, 47 MB, against
  // the top-down tree's 100,000). Shown when the range has none, the range is made again.
  void setBottomUpShown(bool shown);
  bool busy() const { return busy_; }
  QString error() const { return error_; }
  // Seconds the last open took to the Summary+Timeline, and the last range/tree job took.
  double openSeconds() const { return openSeconds_; }
  double rangeSeconds() const { return rangeSeconds_; }

 signals:
  void progress(const QString& stage, double fraction);
  void opened();        // data() is the new recording's (Summary, Timeline)
  void reportCompleted();  // data()->report has its second part (phases, suggestions, ...)
  void rangeChanged();  // range() holds the trees and leaks of the current range
  // range()'s trees are about to be cleared (setTreesShown): views holding them let go now.
  void treesReleased();
  void failed(const QString& message);  // a one-line message; data() is unchanged
  void busyChanged(bool busy);
  void compareOpened();
  void compareFailed(const QString& message);
  void chartsChanged();

 private:
  void startRange(std::shared_ptr<const RecordingData> data, std::optional<int64_t> from, std::optional<int64_t> to,
                  bool afterOpen);
  void restartRange();  // the current range again (a new space, show or live-at)
  void startCharts();
  void setBusy(bool busy);
  // A job of generation `gen` was cancelled by the user: idle, unless a newer job owns the state.
  static void idleAfterCancel(QPointer<Document> self, uint64_t gen);
  void waitAll();

  QString path_, error_;
  QString space_ = "heap";
  std::shared_ptr<const RecordingData> data_;
  std::shared_ptr<const RangeData> range_;
  std::shared_ptr<RangeData> ownRange_;  // range_, whose trees setTreesShown(false) may drop
  bool treesShown_ = true, treesDropped_ = false, bottomUpShown_ = false;
  std::shared_ptr<analyzer::QueryControl> control_;  // of the newest job
  // The open recording's tree shapes, made once on a job of their own (a range job waits for
  // them; a newer range does not cancel them, a user's Cancel or another file does).
  // B's likewise, made when the comparison opens.
  using IndexFuture = std::shared_future<std::shared_ptr<const analyzer::TreeIndex>>;
  struct IndexJob {
    IndexFuture future;
    std::shared_ptr<analyzer::QueryControl> control;
    void cancel() {
      if (control) control->cancel();
    }
  };
  // `job`'s index of `data`'s recording: the one made or being made, or a new job's (none made
  // yet, or the last one failed or was cancelled).
  IndexFuture ensureIndex(IndexJob& job, const std::shared_ptr<const RecordingData>& data);
  IndexJob index_, compareIndex_;
  uint64_t generation_ = 0;
  bool busy_ = false;
  double openSeconds_ = 0, rangeSeconds_ = 0;
  QList<QFuture<void>> jobs_;
  std::optional<int64_t> liveAt_;
  std::shared_ptr<const RecordingData> compare_;
  Show show_ = Show::A;
  uint64_t compareGeneration_ = 0;
  std::optional<analyzer::ChartRequest> chartRequest_;
  std::shared_ptr<const analyzer::SiteCharts> charts_;
  std::shared_ptr<analyzer::QueryControl> chartControl_;
  uint64_t chartGeneration_ = 0;
  bool chartsBusy_ = false;
  // The analyzer's jobs run on a pool of their own, never Qt's global one: Qt's raster engine
  // hands parts of a paint to the global pool and waits for them, so a global pool busy with a
  // long query stalled every paint of the window until the query ended (seconds).
  QThreadPool pool_;
};

}  // namespace memledger::gui
