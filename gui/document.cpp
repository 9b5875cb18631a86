#include "gui/document.h"
#include "gui/document_jobs.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>


namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
// The document's jobs run at a lower CPU priority than the GUI thread (nice +5 on the worker
// thread; threads they start inherit it): on 2 cores a range's three or four workers took the
// GUI thread's core often enough that its 9-11 ms events lasted 20-25 ms of wall time.
template <typename F>
auto runJob(QThreadPool* pool, F&& f) {
  return QtConcurrent::run(pool, [f = std::forward<F>(f)]() mutable {
    static thread_local bool lowered = false;
    if (!lowered) {
      lowered = true;
      setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), std::min(getpriority(PRIO_PROCESS, 0) + 5, 19));
    }
    return f();
  });
}
}  // namespace

Document::Document(QObject* parent) : QObject(parent) {
  // An open or a range job, the tree shapes' job a range job waits for, and the freeing of old trees.
  pool_.setMaxThreadCount(4);
}

Document::~Document() {
  cancel();
  if (chartControl_) chartControl_->cancel();
  waitAll();
}

void Document::waitAll() {
  for (auto& f : jobs_) f.waitForFinished();
  jobs_.clear();
}

void Document::cancel() {
  if (control_) control_->cancel();
  index_.cancel();  // ensureIndex() starts again when asked
  compareIndex_.cancel();
}


// Cancelled by the user (not by a newer request, which owns the busy state now): idle.
void Document::idleAfterCancel(QPointer<Document> self, uint64_t gen) {
  if (!self) return;
  QMetaObject::invokeMethod(
      self.data(),
      [self, gen] {
        if (self && self->generation_ == gen) self->setBusy(false);
      },
      Qt::QueuedConnection);
}

void Document::setBusy(bool busy) {
  if (busy_ == busy) return;
  busy_ = busy;
  emit busyChanged(busy);
}

namespace {
// The control's progress, posted to the GUI thread (the analyzer calls it on the worker).
void wireProgress(an::QueryControl& control, QPointer<Document> doc, uint64_t gen, const uint64_t* current,
                  QString stage) {
  control.progress = [doc, gen, current, stage](double f) {
    if (!doc) return;
    QMetaObject::invokeMethod(
        doc.data(),
        [doc, gen, current, stage, f] {
          if (doc && *current == gen) emit doc->progress(stage, f);
        },
        Qt::QueuedConnection);
  };
}
}  // namespace

Document::IndexFuture Document::ensureIndex(IndexJob& job, const std::shared_ptr<const RecordingData>& data) {
  using namespace std::chrono_literals;
  const IndexFuture& index = job.future;
  const bool failed = index.valid() && index.wait_for(0s) == std::future_status::ready && [&] {
    try {
      index.get();
      return false;
    } catch (...) {
      return true;
    }
  }();
  if (index.valid() && !failed) return index;
  auto promise = std::make_shared<std::promise<std::shared_ptr<const an::TreeIndex>>>();
  job.future = promise->get_future().share();
  auto control = std::make_shared<an::QueryControl>();
  job.control = control;
  wireProgress(*control, QPointer<Document>(this), generation_, &generation_, tr("Building call trees"));
  jobs_.append(runJob(&pool_, [promise, control, rec = data->rec] {
    try {
      promise->set_value(an::TreeIndex::build(*rec, *control));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }));
  return job.future;
}

void Document::open(const QString& path) {
  cancel();
  ++compareGeneration_;  // a comparison still loading was with the old recording
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  const uint64_t gen = ++generation_;
  auto control = std::make_shared<an::QueryControl>();
  control_ = control;
  path_ = path;
  error_.clear();
  setBusy(true);
  QPointer<Document> self(this);
  wireProgress(*control, self, gen, &generation_, tr("Reading %1").arg(QFileInfo(path).fileName()));
  const std::string file = path.toStdString();
  jobs_.append(runJob(&pool_, [self, gen, control, file] {
    QElapsedTimer timer;
    timer.start();
    std::shared_ptr<RecordingData> out;
    QString message;
    try {
      // The first part of the report only: the Summary and the Timeline show before the rest.
      out = loadRecording(file, *control, true, true);
    } catch (const an::Cancelled&) {
      idleAfterCancel(self, gen);
      return;
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    double seconds = timer.nsecsElapsed() / 1e9;
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, out, message, seconds] {
          if (!self || self->generation_ != gen) return;
          if (!out) {
            self->error_ = message;
            self->setBusy(false);
            emit self->failed(message);
            return;
          }
          self->index_.cancel();
          self->compareIndex_.cancel();
          self->data_ = out;
          self->range_.reset();
          self->ownRange_.reset();
          self->treesDropped_ = false;
          self->index_ = {};
          self->compareIndex_ = {};
          self->liveAt_.reset();
          self->compare_.reset();
          self->show_ = Show::A;
          self->charts_.reset();
          ++self->chartGeneration_;  // charts of the old recording still on the way are dropped
          if (self->chartControl_) self->chartControl_->cancel();
          self->chartsBusy_ = false;
          self->openSeconds_ = seconds;
          // What every range reads (every site with its activity, which each range's peak and
          // every chart replays; the leaked blocks): made now, beside the call trees' shapes,
          // not by the first range.
          self->jobs_.append(runJob(&self->pool_, [rec = out->rec] {
            try {
              an::prepareRanges(*rec);
            } catch (...) {  // the range that needs it reads it again and reports the error
            }
          }));
          emit self->opened();  // the Charts view asks for the new recording's charts
          self->startRange(out, std::nullopt, std::nullopt, true);
        },
        Qt::QueuedConnection);
    if (!out) return;
    // The rest of the report (phases, fragmentation, temporaries, patterns, suggestions) into a
    // report of its own: the views read the published one meanwhile.
    auto rest = std::make_shared<an::Report>();
    rest->filter = out->report.filter;
    rest->rule_leaks = std::shared_ptr<const an::Leaks>(out, &out->report.leaks);  // its 1000 sites: leaks() not run again
    try {
      an::reportSecondPart(*out->rec, *rest, *control);
    } catch (const an::Cancelled&) {
      return;
    } catch (const std::exception& e) {
      rest.reset();
      message = QString::fromStdString(e.what());
    }
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, out, rest, message] {
          if (!self || self->data_ != out) return;
          if (!rest) {
            emit self->failed(message);
            return;
          }
          // On the GUI thread, the one that reads these parts (workers read only the first part).
          an::Report& r = out->report;
          r.phases = std::move(rest->phases);
          r.fragmentation = std::move(rest->fragmentation);
          r.temporaries = std::move(rest->temporaries);
          r.patterns = std::move(rest->patterns);
          r.suggestions = std::move(rest->suggestions);
          out->complete = true;
          emit self->reportCompleted();
        },
        Qt::QueuedConnection);
  }));
}

void Document::setTreesShown(bool shown) {
  treesShown_ = shown;
  if (shown && treesDropped_ && !busy_) restartRange();  // dropped, and no range is coming (cancelled)
}

void Document::setBottomUpShown(bool shown) {
  bottomUpShown_ = shown;
  // A range on the way without it asks again when it comes.
  if (shown && range_ && range_->bottom_up.nodes.empty() && !busy_) restartRange();
}

void Document::setRange(std::optional<int64_t> from, std::optional<int64_t> to) {
  if (!data_) return;
  liveAt_.reset();
  startRange(data_, from, to, false);
}

void Document::restartRange() {
  if (data_) startRange(data_, range_ ? range_->from_ns : std::nullopt, range_ ? range_->to_ns : std::nullopt, false);
}

void Document::setSpace(const QString& space) {
  if (space == space_) return;
  space_ = space;
  restartRange();
  if (chartRequest_) startCharts();
}

void Document::setLiveAt(std::optional<int64_t> t) {
  if (!data_) return;
  liveAt_ = t;
  startRange(data_, std::nullopt, std::nullopt, false);
}

void Document::setShow(Show show) {
  if (!compare_) show = Show::A;
  if (show == show_) return;
  show_ = show;
  restartRange();
  if (chartRequest_) startCharts();
}

void Document::setCompare(const QString& path) {
  if (!data_) return;
  const uint64_t gen = ++compareGeneration_;
  QPointer<Document> self(this);
  const std::string file = path.toStdString();
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  jobs_.append(runJob(&pool_, [self, gen, file] {
    std::shared_ptr<RecordingData> out;
    QString message;
    try {
      an::QueryControl control;
      out = loadRecording(file, control, false);
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, out, message] {
          if (!self || self->compareGeneration_ != gen) return;
          if (!out) {
            emit self->compareFailed(message);
            return;
          }
          self->compareIndex_.cancel();
          self->compareIndex_ = {};
          self->compare_ = out;
          (void)self->ensureIndex(self->compareIndex_, out);  // B's tree shapes, for B and B − A
          emit self->compareOpened();
          if (self->show_ != Show::A) {
            self->restartRange();
            if (self->chartRequest_) self->startCharts();
          }
        },
        Qt::QueuedConnection);
  }));
}

const char* showName(Show show) {
  switch (show) {
    case Show::A: return "a";
    case Show::B: return "b";
    case Show::Diff: return "diff";
  }
  return "";
}

void Document::requestCharts(const an::ChartRequest& request) {
  chartRequest_ = request;
  if (data_) startCharts();
}

void Document::startCharts() {
  if (chartControl_) chartControl_->cancel();
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  const uint64_t gen = ++chartGeneration_;
  auto control = std::make_shared<an::QueryControl>();
  chartControl_ = control;
  an::ChartRequest req = *chartRequest_;
  req.space = space_.isEmpty() ? std::nullopt : std::optional<std::string>(space_.toStdString());
  const Show show = compare_ ? show_ : Show::A;
  std::shared_ptr<const RecordingData> a = data_, b = compare_;
  chartsBusy_ = true;
  QPointer<Document> self(this);
  jobs_.append(runJob(&pool_, [self, gen, control, req, show, a, b] {
    std::shared_ptr<an::SiteCharts> out;
    try {
      if (show == Show::Diff) out = std::make_shared<an::SiteCharts>(an::diffCharts(*a->rec, *b->rec, req, *control));
      else out = std::make_shared<an::SiteCharts>(an::siteCharts(show == Show::B ? *b->rec : *a->rec, req, *control));
    } catch (const an::Cancelled&) {
      return;
    } catch (const std::exception&) {
      out.reset();  // a damaged file: the views already say what failed
    }
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, out] {
          if (!self || self->chartGeneration_ != gen) return;
          self->chartsBusy_ = false;
          if (!out) return;
          self->charts_ = out;
          emit self->chartsChanged();
        },
        Qt::QueuedConnection);
  }));
}

void Document::startRange(std::shared_ptr<const RecordingData> data, std::optional<int64_t> from,
                          std::optional<int64_t> to, bool afterOpen) {
  // The older range only: the tree shapes' jobs go on (this range waits for them).
  if (!afterOpen && control_) control_->cancel();
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  if (!treesShown_ && ownRange_ && !treesDropped_) {
    // No view shows them: gone before the new ones are made (a few large blocks: freed at once).
    emit treesReleased();
    ownRange_->top_down = {};
    ownRange_->bottom_up = {};
    ownRange_->top_down_change = std::vector<an::TreeCost>();  // `= {}` would keep the memory
    ownRange_->bottom_up_change = std::vector<an::TreeCost>();
    treesDropped_ = true;
  }
  const uint64_t gen = afterOpen ? generation_ : ++generation_;
  auto control = std::make_shared<an::QueryControl>();
  control_ = control;
  setBusy(true);
  QPointer<Document> self(this);
  wireProgress(*control, self, gen, &generation_, from || to ? tr("Filtering the time range") : tr("Building call trees"));
  RangeRequest request;
  request.a = data;
  request.b = compare_;
  request.show = compare_ ? show_ : Show::A;
  request.from = from;
  request.to = to;
  request.live_at = from || to ? std::nullopt : liveAt_;
  request.space = space_.toStdString();
  request.bottom_up = bottomUpShown_;
  request.index = ensureIndex(index_, data);  // the tree shapes: the job waits for them
  if (compare_) request.index_b = ensureIndex(compareIndex_, compare_);
  jobs_.append(runJob(&pool_, [self, gen, control, request] {
    QElapsedTimer timer;
    timer.start();
    std::shared_ptr<RangeData> r;
    QString message;
    try {
      r = computeRange(request, *control);
    } catch (const an::Cancelled&) {
      idleAfterCancel(self, gen);
      return;
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    double seconds = timer.nsecsElapsed() / 1e9;
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, gen, r, message, seconds] {
          if (!self || self->generation_ != gen) return;
          self->setBusy(false);
          if (!message.isEmpty()) {
            self->error_ = message;
            emit self->failed(message);
            return;
          }
          std::shared_ptr<const RangeData> old = std::exchange(self->range_, r);
          self->ownRange_ = r;
          self->treesDropped_ = false;
          self->rangeSeconds_ = seconds;
          emit self->rangeChanged();
          // Made without the bottom-up tree while a view that shows it came on screen.
          if (self->bottomUpShown_ && r->bottom_up.nodes.empty()) self->restartRange();
          // The old trees hold millions of nodes: once the views let go of them, freeing them is
          // a worker's job, not a frame's.
          if (old && old.use_count() == 1)
            (void)runJob(&self->pool_, [old = std::move(old)]() mutable { old.reset(); });
        },
        Qt::QueuedConnection);
  }));
}

}  // namespace memledger::gui
