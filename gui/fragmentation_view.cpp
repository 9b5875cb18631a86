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
#include "gui/leaks_view.h"  // stackHtml

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
constexpr int kTicks = 10000;
constexpr size_t kLegendSites = 8;

QString bytesText(uint64_t b) { return QString::fromStdString(an::formatBytes(int64_t(b))); }
QString countText(int64_t n) { return QString::fromStdString(an::formatCount(n)); }
QString timeText(int64_t t) { return QString::fromStdString(an::formatDuration(t)); }
QString hex(uint64_t a) { return "0x" + QString::number(a, 16); }
// A square of a colour with a thin frame (a colour close to the background still shows).
QString swatch(const QColor& c) {
  return QString("<table border=1 cellspacing=0 cellpadding=0 style=\"border-color:#808080\"><tr><td bgcolor=\"%1\" "
                 "width=14>&nbsp;</td></tr></table>")
      .arg(c.name());
}
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
  if (best >= 0) showRegion(best);
}

void FragmentationView::showRegion(int index) {
  if (index < 0 || size_t(index) >= regions_.size() || !data_) return;
  region_->setCurrentIndex(region_->findData(index));
  const an::MapRegion region = regions_[size_t(index)];
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

void FragmentationView::showLayout(std::shared_ptr<const an::MapLayout> layout, std::vector<std::pair<int64_t, QString>> sites,
                                   QString eventSite, bool selectEvent) {
  layout_ = std::move(layout);
  siteNames_ = std::move(sites);
  const an::HeapHistory& h = *history_;
  const an::MapLayout& l = *layout_;
  map_->setMap(history_, layout_);
  chart_->setCursor(l.t_ns);
  if (selectEvent) {
    QSignalBlocker block(slider_);
    slider_->setValue(tickOf(l.t_ns));
  }
  time_->setText(tr("%1 · event %2 of %3").arg(timeText(l.t_ns), countText(int64_t(l.applied)), countText(int64_t(h.events.size()))));
  if (l.applied == 0) {
    event_->setText(tr("Before the first event of this range."));
  } else {
    const an::MapEvent& e = h.events[l.applied - 1];
    const an::MapBlock& b = h.blocks[e.block];
    const QString where = hex(b.address), when = timeText(e.t_ns);
    event_->setText(e.alloc ? tr("Last event: %1 of %2 at %3 by %4, at %5")
                                  .arg(QString::fromStdString(h.ops[b.op]), bytesText(b.size), where, eventSite, when)
                            : tr("Last event: free of the %1 at %2 that %3 allocated, at %4")
                                  .arg(bytesText(b.size), where, eventSite, when));
  }
  // The coverage of the recording, and whether this instant is exact.
  QString exactness;
  if (l.exact) {
    exactness = tr("<b>Exact at this instant</b>: every block live then has a row.");
  } else if (l.rowless_max) {
    exactness = tr("<b style=\"color:#c0392b\">Not exact at this instant</b>: %1 of %2 live then %3 no row; the gaps "
                   "(drawn in the colour of <i>unknown</i>) may hold them.")
                    .arg(*l.rowless_min == *l.rowless_max ? bytesText(uint64_t(*l.rowless_max))
                                                           : tr("%1 to %2").arg(bytesText(uint64_t(*l.rowless_min)),
                                                                                bytesText(uint64_t(*l.rowless_max))))
                    .arg(QString::fromStdString(h.region.space))
                    .arg(*l.rowless_min == *l.rowless_max ? tr("have") : tr("may have"));
  } else {
    exactness = tr("<b style=\"color:#c0392b\">Not known to be exact at this instant</b>: the gaps (drawn as "
                   "<i>unknown</i>) may hold blocks without a row.");
  }
  message_->setText(QString::fromStdString(an::mapCoverageText(h)).toHtmlEscaped() + "<br>" + exactness);
  // The instant's numbers.
  const bool one = l.holes.size() == 1;
  const QString holes = l.exact ? (one ? tr("hole") : tr("holes")) : (one ? tr("gap") : tr("gaps"));
  stats_->setText(tr("<b>%1</b><br>live %2 in %3 %4<br>free %5 (%6% internal) in %7 %8, largest %9<br>")
                      .arg(QString::fromStdString(an::regionText(h.region)).toHtmlEscaped(), bytesText(l.live_bytes),
                           countText(int64_t(l.live.size())), l.live.size() == 1 ? tr("block") : tr("blocks"),
                           bytesText(l.freeBytes()))
                      .arg(l.internalShare() * 100, 0, 'f', 1)
                      .arg(countText(int64_t(l.holes.size())), holes, bytesText(l.largest_hole)) +
                  tr("free / span %1%, external fragmentation %2%<br>span %3 (%4)")
                      .arg(l.freeRatio() * 100, 0, 'f', 1)
                      .arg(l.externalFragmentation() * 100, 0, 'f', 1)
                      .arg(bytesText(l.span_to - l.span_from),
                           h.region.reserved ? tr("the pool's reserved range") : tr("first to last live block")));
  updateLegend();
  if (selectEvent && l.applied > 0) {
    const uint32_t b = h.events[l.applied - 1].block;
    map_->setSelected(b);
    showBlock(b);
  } else if (auto s = map_->selected()) {
    showBlock(*s);  // the same block, its age at the new instant
  }
}

void FragmentationView::updateLegend() {
  if (!history_ || !layout_) return legend_->clear();
  const an::MapLayout& l = *layout_;
  QString html = "<table cellspacing=2>";
  auto row = [&](const QColor& c, const QString& text) {
    html += QString("<tr><td>%1</td><td>%2</td></tr>").arg(swatch(c), text);
  };
  if (map_->colouring() == HeapMapWidget::Colouring::Site) {
    for (const auto& [id, name] : siteNames_)
      for (const an::MapSite& s : l.sites)
        if (s.stack_id == id)
          row(HeapMapWidget::siteColour(id), tr("%1 · %2 in %3").arg(name.toHtmlEscaped(), bytesText(s.bytes), countText(s.count)));
    if (l.sites.size() > siteNames_.size())
      html += tr("<tr><td></td><td>and %1 other sites</td></tr>").arg(countText(int64_t(l.sites.size() - siteNames_.size())));
  } else {
    row(HeapMapWidget::ageColour(0), tr("young (1 us)"));
    row(HeapMapWidget::ageColour(0.5), tr("middle (log scale)"));
    row(HeapMapWidget::ageColour(1), tr("oldest in view (%1)").arg(timeText(map_->oldestAge())));
  }
  if (l.exact) {
    row(HeapMapWidget::holeColour(), tr("hole: free between live blocks"));
  } else {
    row(map_->unknownColour(), tr("unknown: free, or blocks without a row"));
  }
  if (history_->slack_limit) row(map_->slackColour(), tr("rounding and headers (gaps under %1)").arg(bytesText(history_->slack_limit)));
  if (!history_->region.reserved && l.exact) row(map_->outsideColour(), tr("nothing live (before the first, after the last block)"));
  html += "</table>";
  if (map_->viewFrom() != history_->region.from || map_->viewTo() != history_->region.to)
    html += tr("Zoomed to %1-%2 (Backspace: the whole range)").arg(hex(map_->viewFrom()), hex(map_->viewTo()));
  else
    html += tr("Wheel: zoom; click: a block's stack");
  legend_->setText(html);
}

void FragmentationView::showBlock(std::optional<uint32_t> block) {
  if (!block || !history_ || !layout_ || *block >= history_->blocks.size()) {
    details_->clear();
    stackText_.clear();
    copy_->setEnabled(false);
    return;
  }
  const an::MapBlock b = history_->blocks[*block];
  const QString op = QString::fromStdString(history_->ops[b.op]);
  const int64_t t = layout_->t_ns;
  const bool live = b.t_alloc <= t && (!b.t_free || *b.t_free > t);
  QString head = tr("<b>%1 B at %2</b> (%3)<br>allocated at %4, %5<br>%6<br><br>")
                     .arg(countText(int64_t(b.size)), hex(b.address), op.toHtmlEscaped(), timeText(b.t_alloc),
                          b.t_free ? tr("freed at %1").arg(timeText(*b.t_free)) : tr("never freed (live at the process's end)"),
                          live ? tr("%1 old at this instant").arg(timeText(t - b.t_alloc)) : tr("not live at this instant"));
  const uint64_t gen = ++stackGeneration_;
  details_->setHtml(head + tr("<i>reading the stack...</i>"));
  copy_->setEnabled(false);
  auto rec = data_->rec;
  QPointer<FragmentationView> self(this);
  jobs_.append(QtConcurrent::run([self, rec, gen, head, id = b.stack_id] {
    an::Stack stack;
    try {
      stack = rec->stack(id);
    } catch (const std::exception&) {
    }
    if (!self) return;
    QMetaObject::invokeMethod(self.data(), [self, gen, head, stack] {
      if (!self || self->stackGeneration_ != gen) return;
      QStringList lines;
      for (const an::Frame& f : stack) lines << QString::fromStdString(an::printable(an::frameText(f)));
      self->stackText_ = lines.join('\n');
      self->details_->setHtml(head + stackHtml(stack));
      self->copy_->setEnabled(!stack.empty());
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
