#include "gui/document.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include <set>

namespace memledger::gui {

namespace an = memledger::analyzer;

Document::Document(QObject* parent) : QObject(parent) {}

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
  jobs_.append(QtConcurrent::run([self, gen, control, file] {
    QElapsedTimer timer;
    timer.start();
    std::shared_ptr<RecordingData> out;
    QString message;
    try {
      auto d = std::make_shared<RecordingData>();
      d->rec = std::make_shared<an::Recording>(an::Recording::open(file));
      d->report = an::report(*d->rec, {}, *control);
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
          self->data_ = out;
          self->range_.reset();
          self->openSeconds_ = seconds;
          emit self->opened();
          self->startRange(out, std::nullopt, std::nullopt, true);
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
  jobs_.append(QtConcurrent::run([self, gen, control, data, from, to, wanted] {
    QElapsedTimer timer;
    timer.start();
    auto r = std::make_shared<RangeData>();
    r->from_ns = from;
    r->to_ns = to;
    QString message;
    try {
      const an::Recording& rec = *data->rec;
      r->costs = an::siteCosts(rec, from, to, *control);
      if (control->cancelled) throw an::Cancelled();
      std::set<std::string> spaces;
      for (const auto& c : r->costs) spaces.insert(c.space);
      r->spaces.assign(spaces.begin(), spaces.end());
      if (!wanted.empty() && spaces.count(wanted)) r->space = wanted;
      const an::SiteFrames frames = an::siteFrames(rec, r->costs);
      r->top_down = an::buildCallTree(r->costs, frames, an::TreeDirection::TopDown, r->space);
      r->bottom_up = an::buildCallTree(r->costs, frames, an::TreeDirection::BottomUp, r->space);
      r->top_down.t_from_ns = r->bottom_up.t_from_ns = from;
      r->top_down.t_to_ns = r->bottom_up.t_to_ns = to;
      if (control->cancelled) throw an::Cancelled();
      r->symbols = an::callerCallee(r->costs, frames, r->space);
      an::Filter f;
      f.t_from_ns = from;
      f.t_to_ns = to;
      r->leaks = from || to ? an::leaks(rec, f) : data->report.leaks;
      if (control->cancelled) throw an::Cancelled();
      r->sizes = an::sizeHistogram(rec, f, 10, r->costs);  // the range's costs, not read again
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
            (void)QtConcurrent::run([old = std::move(old)]() mutable { old.reset(); });
        },
        Qt::QueuedConnection);
  }));
}

}  // namespace memledger::gui
