#include "gui/fragmentation_view.h"

#include <QApplication>
#include <QClipboard>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QPainter>
#include <QPointer>
#include <QScrollArea>
#include <QShortcut>
#include <QSplitter>
#include <QSvgGenerator>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include <map>

#include "analyzer/format.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
constexpr int kTicks = 10000;
constexpr size_t kLegendSites = 8;

QString siteName(const an::Recording& rec, int64_t stack_id) {
  return QString::fromStdString(an::printable(an::siteText(rec.stack(stack_id))));
}
}  // namespace

FragmentationView::FragmentationView(QWidget* parent)
    : QWidget(parent),
      process_(new QComboBox(this)),
      region_(new QComboBox(this)),
      colour_(new QComboBox(this)),
      progress_(new QProgressBar(this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      message_(new QLabel(this)),
      stats_(new QLabel(this)),
      legend_(new QLabel(this)),
      event_(new QLabel(this)),
      time_(new QLabel(this)),
      map_(new HeapMapWidget(this)),
      chart_(new RatioChart(this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      first_(new QToolButton(this)),
      prev_(new QToolButton(this)),
      next_(new QToolButton(this)),
      last_(new QToolButton(this)),
      details_(new QTextBrowser(this)),
      copy_(new QPushButton(tr("Copy stack"), this)) {
  setObjectName("fragmentation");
  process_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  region_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  region_->setMinimumContentsLength(30);
  colour_->addItems({tr("site"), tr("age")});
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(180);
  progress_->hide();
  cancel_->hide();
  cancel_->setObjectName("cancelRead");
  message_->setWordWrap(true);
  message_->setTextFormat(Qt::RichText);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stats_->setWordWrap(true);
  stats_->setTextFormat(Qt::RichText);
  stats_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  legend_->setWordWrap(true);
  legend_->setTextFormat(Qt::RichText);
  legend_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  event_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  event_->setWordWrap(true);
  slider_->setRange(0, kTicks);
  slider_->setToolTip(tr("The instant shown"));
  first_->setText(QString::fromUtf8("|◀"));
  prev_->setText(QString::fromUtf8("◀"));
  next_->setText(QString::fromUtf8("▶"));
  last_->setText(QString::fromUtf8("▶|"));
  first_->setToolTip(tr("Before the first event (Home)"));
  prev_->setToolTip(tr("One event back (Left)"));
  next_->setToolTip(tr("One event on (Right)"));
  last_->setToolTip(tr("After the last event (End)"));
  details_->setPlaceholderText(tr("Click a block to see its stack."));
  copy_->setEnabled(false);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Process"), this));
  bar->addWidget(process_);
  bar->addWidget(new QLabel(tr("Range"), this));
  bar->addWidget(region_, 1);
  bar->addWidget(new QLabel(tr("Colour by"), this));
  bar->addWidget(colour_);
  bar->addWidget(progress_);
  bar->addWidget(cancel_);

  auto* controls = new QHBoxLayout;
  for (QToolButton* b : {first_, prev_}) controls->addWidget(b);
  controls->addWidget(slider_, 1);
  for (QToolButton* b : {next_, last_}) controls->addWidget(b);
  controls->addWidget(time_);

  auto* left = new QWidget(this);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 0, 0);
  ll->addWidget(map_, 1);
  ll->addLayout(controls);
  ll->addWidget(event_);
  auto* leftSplit = new QSplitter(Qt::Vertical, this);
  leftSplit->addWidget(left);
  leftSplit->addWidget(chart_);
  leftSplit->setStretchFactor(0, 4);
  leftSplit->setStretchFactor(1, 1);

  // Right: the instant's numbers and the legend (scrolling when many sites), then the stack.
  auto* numbers = new QWidget(this);
  auto* nl = new QVBoxLayout(numbers);
  nl->setContentsMargins(2, 0, 2, 0);
  nl->addWidget(stats_);
  nl->addWidget(legend_);
  nl->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(numbers);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  auto* stack = new QWidget(this);
  auto* sl = new QVBoxLayout(stack);
  sl->setContentsMargins(0, 0, 0, 0);
  sl->addWidget(details_, 1);
  sl->addWidget(copy_, 0, Qt::AlignRight);
  auto* right = new QSplitter(Qt::Vertical, this);
  right->addWidget(scroll);
  right->addWidget(stack);
  right->setStretchFactor(0, 3);
  right->setStretchFactor(1, 2);
  right->setSizes({3000, 2000});
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(leftSplit);
  split->addWidget(right);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  right->setMinimumWidth(fontMetrics().horizontalAdvance(QString(38, 'x')));
  split->setSizes({3000, 1000});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  layout->addWidget(message_);
  layout->addWidget(split, 1);

  connect(process_, &QComboBox::activated, this, [this] { fillRegions(process_->currentData().toInt()); });
  connect(region_, &QComboBox::activated, this, [this] { showRegion(region_->currentData().toInt()); });
  connect(colour_, &QComboBox::currentIndexChanged, this, [this](int i) {
    map_->setColouring(i == 1 ? HeapMapWidget::Colouring::Age : HeapMapWidget::Colouring::Site);
    updateLegend();
  });
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (control_) control_->cancel();
  });
  connect(slider_, &QSlider::valueChanged, this, [this](int tick) { requestLayout({timeOfTick(tick), 0, false}); });
  connect(first_, &QToolButton::clicked, this, [this] { showEvents(0); });
  connect(prev_, &QToolButton::clicked, this, [this] { step(-1); });
  connect(next_, &QToolButton::clicked, this, [this] { step(1); });
  connect(last_, &QToolButton::clicked, this, [this] {
    if (history_) showEvents(history_->events.size());
  });
  connect(chart_, &RatioChart::timeClicked, this, &FragmentationView::showTime);
  connect(map_, &HeapMapWidget::blockClicked, this, &FragmentationView::showBlock);
  connect(map_, &HeapMapWidget::viewChanged, this, &FragmentationView::updateLegend);
  connect(copy_, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(stackText_); });
  auto key = [this](QKeySequence k, auto f) {
    auto* s = new QShortcut(k, this);
    s->setContext(Qt::WidgetWithChildrenShortcut);
    connect(s, &QShortcut::activated, this, f);
  };
  key(QKeySequence(Qt::Key_Left), [this] { step(-1); });
  key(QKeySequence(Qt::Key_Right), [this] { step(1); });
  key(QKeySequence(Qt::Key_Home), [this] { showEvents(0); });
  key(QKeySequence(Qt::Key_End), [this] {
    if (history_) showEvents(history_->events.size());
  });
  key(QKeySequence::Copy, [this] {
    if (!stackText_.isEmpty()) QApplication::clipboard()->setText(stackText_);
  });
  message_->setText(tr("Open a recording to see the layout of its memory."));
}

FragmentationView::~FragmentationView() {
  if (control_) control_->cancel();
  for (auto& f : jobs_) f.waitForFinished();
}

void FragmentationView::setData(std::shared_ptr<const RecordingData> data) {
  if (control_) control_->cancel();
  ++generation_;
  data_ = std::move(data);
  regionsRequested_ = false;
  regions_.clear();
  history_.reset();
  layout_.reset();
  pending_.reset();
  process_->clear();
  region_->clear();
  map_->setMap(nullptr, nullptr);
  chart_->setSeries(nullptr, {}, 0, 1);
  stats_->clear();
  legend_->clear();
  event_->clear();
  details_->clear();
  stackText_.clear();
  settled_ = false;
  if (isVisible()) loadRegions();
}

void FragmentationView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (data_ && !regionsRequested_) loadRegions();
}

void FragmentationView::setBusy(const QString& what) {
  settled_ = false;
  progress_->setValue(0);
  progress_->setToolTip(what);
  progress_->show();
  cancel_->show();
}

void FragmentationView::setIdle() {
  progress_->hide();
  cancel_->hide();
}

void FragmentationView::settle() {
  if (layoutRunning_ || pending_ || progress_->isVisible()) return;
  settled_ = true;
  emit settled();
}

// Runs `work` (which returns a value of type R) on a worker under a fresh control that cancels
// the previous job's; `done` gets the value on the GUI thread unless a newer job started since
// (no value: the error's message, or none when the user cancelled).
template <class R, class Work, class Done>
static void runJob(FragmentationView* self, std::shared_ptr<an::QueryControl>& current, uint64_t& generation,
                   QList<QFuture<void>>& jobs, QProgressBar* progress, Work work, Done done) {
  if (current) current->cancel();
  auto control = std::make_shared<an::QueryControl>();
  current = control;
  const uint64_t gen = ++generation;
  QPointer<FragmentationView> guard(self);
  QPointer<QProgressBar> bar(progress);
  control->progress = [bar](double f) {
    if (!bar) return;
    QMetaObject::invokeMethod(bar.data(), [bar, f] {
      if (bar) bar->setValue(int(f * 1000));
    }, Qt::QueuedConnection);
  };
  jobs.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  const uint64_t* live = &generation;
  jobs.append(QtConcurrent::run([guard, control, gen, live, work, done] {
    std::optional<R> value;
    QString error;
    try {
      value = work(*control);
    } catch (const an::Cancelled&) {
      // Cancelled by the user: no value and no error.
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    if (!guard) return;
    QMetaObject::invokeMethod(guard.data(), [guard, gen, live, value = std::move(value), error, done]() mutable {
      if (guard && *live == gen) done(std::move(value), error);
    }, Qt::QueuedConnection);
  }));
}

void FragmentationView::loadRegions() {
  regionsRequested_ = true;
  setBusy(tr("Reading the address ranges"));
  message_->setText(tr("Reading the address ranges of the recording..."));
  auto rec = data_->rec;
  runJob<std::vector<an::MapRegion>>(
      this, control_, generation_, jobs_, progress_, [rec](an::QueryControl& c) { return an::mapRegions(*rec, c); },
      [this](std::optional<std::vector<an::MapRegion>> regions, QString error) {
        setIdle();
        if (!regions) {
          regionsRequested_ = !error.isEmpty();  // cancelled: read again when shown again
          message_->setText(error.isEmpty() ? tr("Cancelled: the address ranges were not read.")
                                            : tr("Cannot read the address ranges: %1").arg(error.toHtmlEscaped()));
          return settle();
        }
        regions_ = std::move(*regions);
        process_->clear();
        if (regions_.empty()) {
          message_->setText(tr("This recording has no allocation rows, so there is nothing to map. By default a "
                               "recording keeps rows only for the blocks live at the end of their process; record "
                               "with <code>memledger record --no-fold</code> for the map at every instant."));
          return settle();
        }
        // Processes with ranges; the one holding the range with the most blocks first.
        size_t best = 0;
        auto preferred = [&](const an::MapRegion& r) { return QString::fromStdString(r.space) == preferredSpace_; };
        for (size_t i = 0; i < regions_.size(); ++i)
          if (std::pair(preferred(regions_[i]), regions_[i].rows) > std::pair(preferred(regions_[best]), regions_[best].rows)) best = i;
        std::map<int64_t, QString> images;
        for (const an::MapRegion& r : regions_) {
          QString command;
          for (const an::Process& p : data_->report.processes)
            if (p.image_id == r.image_id) command = QString::fromStdString(an::printable(p.command));
          images[r.image_id] = tr("pid %1: %2").arg(r.pid).arg(QFontMetrics(font()).elidedText(command, Qt::ElideRight, 300));
        }
        for (const auto& [image, label] : images) process_->addItem(label, qlonglong(image));
        process_->setCurrentIndex(process_->findData(qlonglong(regions_[best].image_id)));
        fillRegions(int(regions_[best].image_id));
      });
}

void FragmentationView::fillRegions(int image) {
  const int best = listRegions(image);
  if (best >= 0) showRegion(best);
}

// Lists the ranges of one process in the chooser; returns the one to show first (-1: none).
int FragmentationView::listRegions(int image) {
  QSignalBlocker block(region_);
  region_->clear();
  int best = -1;
  auto rank = [&](size_t i) {
    return std::pair(QString::fromStdString(regions_[i].space) == preferredSpace_, regions_[i].rows);
  };
  for (size_t i = 0; i < regions_.size(); ++i) {
    if (regions_[i].image_id != image) continue;
    region_->addItem(QString::fromStdString(an::regionText(regions_[i])), int(i));
    if (best < 0 || rank(i) > rank(size_t(best))) best = int(i);
  }
  return best;
}

void FragmentationView::showRegion(int index) {
  if (index < 0 || size_t(index) >= regions_.size() || !data_) return;
  const an::MapRegion region = regions_[size_t(index)];
  if (process_->currentData().toLongLong() != region.image_id) {  // another process's range
    QSignalBlocker block(process_);
    process_->setCurrentIndex(process_->findData(qlonglong(region.image_id)));
    listRegions(int(region.image_id));
  }
  region_->setCurrentIndex(region_->findData(index));
  setBusy(tr("Reading the blocks of %1").arg(QString::fromStdString(region.space)));
  message_->setText(tr("Reading the blocks of %1...").arg(QString::fromStdString(an::regionText(region)).toHtmlEscaped()));
  history_.reset();
  layout_.reset();
  pending_.reset();
  map_->setMap(nullptr, nullptr);
  auto rec = data_->rec;
  struct Loaded {
    std::shared_ptr<const an::HeapHistory> history;
    std::vector<an::FragmentationPoint> rss;
  };
  runJob<Loaded>(
      this, control_, generation_, jobs_, progress_,
      [rec, region](an::QueryControl& c) {
        Loaded out;
        out.history = std::make_shared<const an::HeapHistory>(an::heapHistory(*rec, region, c));
        // The heap's ratio from RSS samples belongs beside a heap range only.
        if (region.space == "heap") out.rss = an::fragmentation(*rec, an::Filter{.pid = region.pid}).series;
        return out;
      },
      [this](std::optional<Loaded> loaded, QString error) {
        setIdle();
        if (!loaded) {
          message_->setText(error.isEmpty() ? tr("Cancelled: choose the range again to read it.")
                                            : tr("Cannot read this range: %1").arg(error.toHtmlEscaped()));
          return settle();
        }
        history_ = loaded->history;
        const an::HeapHistory& h = *history_;
        t0_ = h.image_start_ns;
        t1_ = std::max({h.image_end_ns.value_or(0), h.events.empty() ? 0 : h.events.back().t_ns, t0_ + 1});
        chart_->setSeries(history_, std::move(loaded->rss), t0_, t1_);
        for (QToolButton* b : {first_, prev_, next_, last_}) b->setEnabled(!h.events.empty());
        const int64_t t = h.defaultInstant();
        {
          QSignalBlocker block(slider_);
          slider_->setValue(tickOf(t));
        }
        requestLayout({t, 0, true});  // with the last event's block selected: where to look first
      });
}

int64_t FragmentationView::timeOfTick(int tick) const { return t0_ + int64_t(double(t1_ - t0_) * tick / kTicks); }
int FragmentationView::tickOf(int64_t t) const {
  return int(std::clamp(double(t - t0_) / double(t1_ - t0_), 0.0, 1.0) * kTicks + 0.5);
}

void FragmentationView::showTime(int64_t t) {
  if (!history_) return;
  QSignalBlocker block(slider_);
  slider_->setValue(tickOf(t));
  requestLayout({t, 0, false});
}

void FragmentationView::step(int events) {
  if (!history_ || !layout_) return;
  const int64_t at = int64_t(pending_ && !pending_->t_ns ? pending_->applied : layout_->applied) + events;
  showEvents(size_t(std::clamp<int64_t>(at, 0, int64_t(history_->events.size()))));
}

void FragmentationView::showEvents(size_t applied) {
  if (!history_) return;
  requestLayout({std::nullopt, std::min(applied, history_->events.size()), true});
}

void FragmentationView::requestLayout(Request r) {
  if (!history_) return;
  settled_ = false;
  if (layoutRunning_) {
    pending_ = r;  // only the newest waits
    return;
  }
  startLayout(r);
}

void FragmentationView::startLayout(Request r) {
  layoutRunning_ = true;
  auto history = history_;
  auto rec = data_->rec;
  QPointer<FragmentationView> self(this);
  const uint64_t gen = generation_;
  jobs_.removeIf([](const QFuture<void>& f) { return f.isFinished(); });
  jobs_.append(QtConcurrent::run([self, gen, history, rec, r] {
    auto layout = std::make_shared<const an::MapLayout>(r.t_ns ? history->layoutAt(*r.t_ns) : history->layoutAfter(r.applied));
    // Names of the sites the legend lists and of the last event's block (stacks are read from
    // the recording: here, not on the GUI thread).
    std::vector<std::pair<int64_t, QString>> sites;
    QString eventSite;
    try {
      for (size_t i = 0; i < layout->sites.size() && i < kLegendSites; ++i)
        sites.emplace_back(layout->sites[i].stack_id, siteName(*rec, layout->sites[i].stack_id));
      if (layout->applied > 0)
        eventSite = siteName(*rec, history->blocks[history->events[layout->applied - 1].block].stack_id);
    } catch (const std::exception&) {
      // A damaged stack: the map is still right, only names are missing.
    }
    if (!self) return;
    QMetaObject::invokeMethod(self.data(), [self, gen, layout, sites = std::move(sites), eventSite, r]() mutable {
      if (!self) return;
      self->layoutRunning_ = false;
      if (self->generation_ == gen) self->showLayout(layout, std::move(sites), eventSite, r.selectEvent);
      if (auto next = std::exchange(self->pending_, std::nullopt); next && self->history_) self->startLayout(*next);
      else self->settle();
    }, Qt::QueuedConnection);
  }));
}

bool FragmentationView::exportImage(const QString& path) {
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size());
    svg.setViewBox(rect());
    svg.setTitle("memledger fragmentation map");
    QPainter p(&svg);
    render(&p);
    return p.end();
  }
  return grab().save(path);
}

}  // namespace memledger::gui
