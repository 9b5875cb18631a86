#include "gui/document.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <algorithm>

namespace memledger::gui {

namespace an = memledger::analyzer;

Document::Document(QObject* parent) : QObject(parent) {
  // An open or a range job, the tree shapes' job a range job waits for, and the freeing of old trees.
  pool_.setMaxThreadCount(4);
}

Document::~Document() {
  cancel();
  waitAll();
}

void Document::waitAll() {
  for (auto& f : jobs_) f.waitForFinished();
  jobs_.clear();
}

void Document::cancel() {
  if (control_) control_->cancel();
  if (indexControl_) indexControl_->cancel();  // ensureIndex() starts again when asked
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

Document::IndexFuture Document::ensureIndex() {
  using namespace std::chrono_literals;
  const bool failed = index_.valid() && index_.wait_for(0s) == std::future_status::ready && [&] {
    try {
      index_.get();
      return false;
    } catch (...) {
      return true;
    }
  }();
  if (index_.valid() && !failed) return index_;
  auto promise = std::make_shared<std::promise<std::shared_ptr<const an::TreeIndex>>>();
  index_ = promise->get_future().share();
  auto control = std::make_shared<an::QueryControl>();
  indexControl_ = control;
  wireProgress(*control, QPointer<Document>(this), generation_, &generation_, tr("Building call trees"));
  jobs_.append(QtConcurrent::run(&pool_, [promise, control, rec = data_->rec] {
    try {
      promise->set_value(an::TreeIndex::build(*rec, *control));
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }));
  return index_;
}

void Document::open(const QString& path) {
  cancel();
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
  jobs_.append(QtConcurrent::run(&pool_, [self, gen, control, file] {
    QElapsedTimer timer;
    timer.start();
    std::shared_ptr<RecordingData> out;
    QString message;
    try {
      auto d = std::make_shared<RecordingData>();
      d->rec = std::make_shared<an::Recording>(an::Recording::open(file));
      an::Filter listed;
      listed.top = kListedSites;
      // The first part of the report only: the Summary and the Timeline show before the rest.
      d->report = an::reportFirstPart(*d->rec, listed, *control);
      d->series = an::memorySeries(*d->rec, *control);
      d->markers = an::markers(*d->rec);
      for (const auto& s : d->series) {
        std::vector<an::Series> levels;
        for (size_t n = s.series.points.size() / 8; n >= 4096 / 8 && s.series.points.size() > 4096; n /= 8) {
          if (control->cancelled) throw an::Cancelled();
          an::Curve c = an::downsample(s.series, 0, INT64_MAX, n);
          an::Series level;
          level.exact_peak = s.series.exact_peak;
          level.points.reserve(c.points.size());
          for (const an::CurvePoint& p : c.points) level.points.push_back({p.t_from_ns, p.last, p.max, p.min});
          levels.push_back(std::move(level));
          if (c.points.size() < 4096) break;
        }
        d->levels.push_back(std::move(levels));
      }
      d->end_ns = d->rec->info().duration_ns;
      for (const auto& s : d->series)
        if (!s.series.points.empty()) d->end_ns = std::max(d->end_ns, s.series.points.back().t_ns);
      for (const auto& p : d->report.processes)
        d->end_ns = std::max(d->end_ns, p.end_ns.value_or(p.start_ns));
      if (d->end_ns <= 0) d->end_ns = 1;
      out = std::move(d);
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
          if (self->indexControl_) self->indexControl_->cancel();
          self->data_ = out;
          self->range_.reset();
          self->index_ = {};
          self->openSeconds_ = seconds;
          emit self->opened();
          self->startRange(out, std::nullopt, std::nullopt, true);
        },
        Qt::QueuedConnection);
    if (!out) return;
    // The rest of the report (phases, fragmentation, temporaries, patterns, suggestions) into a
    // report of its own: the views read the published one meanwhile.
    auto rest = std::make_shared<an::Report>();
    rest->filter = out->report.filter;
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

void Document::setRange(std::optional<int64_t> from, std::optional<int64_t> to) {
  if (!data_) return;
  startRange(data_, from, to, false);
}

void Document::setSpace(const QString& space) {
  if (space == space_) return;
  space_ = space;
  if (data_) startRange(data_, range_ ? range_->from_ns : std::nullopt, range_ ? range_->to_ns : std::nullopt, false);
}

void Document::startRange(std::shared_ptr<const RecordingData> data, std::optional<int64_t> from,
                          std::optional<int64_t> to, bool afterOpen) {
  if (!afterOpen) cancel();
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  const uint64_t gen = afterOpen ? generation_ : ++generation_;
  auto control = std::make_shared<an::QueryControl>();
  control_ = control;
  setBusy(true);
  QPointer<Document> self(this);
  wireProgress(*control, self, gen, &generation_, from || to ? tr("Filtering the time range") : tr("Building call trees"));
  const std::string wanted = space_.toStdString();
  IndexFuture indexed = ensureIndex();
  jobs_.append(QtConcurrent::run(&pool_, [self, gen, control, data, from, to, wanted, indexed] {
    QElapsedTimer timer;
    timer.start();
    auto r = std::make_shared<RangeData>();
    r->rec = data->rec;
    r->from_ns = from;
    r->to_ns = to;
    QString message;
    try {
      const an::Recording& rec = *data->rec;
      // The shapes are read once per recording (every site's frames); a range re-costs them.
      while (indexed.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
        if (control->cancelled) throw an::Cancelled();
      std::shared_ptr<const an::TreeIndex> index = indexed.get();
      r->index = index;
      const std::vector<an::TreeCost> costs = index->costs(rec, from, to, *control);
      if (control->cancelled) throw an::Cancelled();
      r->costs = index->siteCosts(costs);
      r->spaces = index->spaces();
      if (!wanted.empty() && std::binary_search(r->spaces.begin(), r->spaces.end(), wanted)) r->space = wanted;
      an::TreeIndex::Trees trees = index->trees(costs, r->space);
      r->top_down = std::move(trees.top_down);
      r->bottom_up = std::move(trees.bottom_up);
      r->symbols = std::move(trees.symbols);
      r->top_down.t_from_ns = r->bottom_up.t_from_ns = from;
      r->top_down.t_to_ns = r->bottom_up.t_to_ns = to;
      if (control->cancelled) throw an::Cancelled();
      an::Filter f;
      f.t_from_ns = from;
      f.t_to_ns = to;
      f.top = kListedSites;
      r->leaks = from || to ? an::leaks(rec, f) : data->report.leaks;
      if (control->cancelled) throw an::Cancelled();
      r->sizes = an::sizeHistogram(rec, r->costs, from, to, 10);  // the range's costs, no site read again
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
          self->rangeSeconds_ = seconds;
          emit self->rangeChanged();
          // The old trees hold millions of nodes: once the views let go of them, freeing them is
          // a worker's job, not a frame's.
          if (old && old.use_count() == 1)
            (void)QtConcurrent::run(&self->pool_, [old = std::move(old)]() mutable { old.reset(); });
        },
        Qt::QueuedConnection);
  }));
}

}  // namespace memledger::gui
