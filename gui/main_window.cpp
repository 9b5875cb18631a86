#include "gui/main_window.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QMenuBar>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTableView>
#include <QToolButton>
#include <QUrl>
#include <QUrlQuery>
#include <QVBoxLayout>

#include <cstdio>
#include <ctime>
#include <tuple>

#include "analyzer/format.h"
#include "gui/call_tree_view.h"
#include "gui/caller_callee_view.h"
#include "gui/charts_view.h"
#include "gui/flame_graph.h"
#include "gui/leaks_view.h"
#include "gui/sizes_view.h"
#include "gui/compare_view.h"
#include "gui/fragmentation_view.h"
#include "gui/summary_view.h"
#include "gui/timeline_widget.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      doc_(new Document(this)),
      pages_(new QStackedWidget(this)),
      message_(new QLabel(this)),
      tabs_(new QTabWidget(this)),
      timeline_(new TimelineWidget(this)),
      timelineStatus_(new QLabel(this)),
      summary_(new SummaryView(this)),
      topDown_(new CallTreeView(an::TreeDirection::TopDown, this)),
      bottomUp_(new CallTreeView(an::TreeDirection::BottomUp, this)),
      callerCallee_(new CallerCalleeView(this)),
      flame_(new FlameGraphView(this)),
      leaks_(new LeaksView(this)),
      sizes_(new SizesView(this)),
      compare_(new CompareView(this)),
      charts_(new ChartsView(doc_, this)),
      fragmentation_(new FragmentationView(this)),
      suggestions_(new SuggestionsView(this)),
      progress_(new QProgressBar(this)),
      cancel_(new QPushButton(tr("Cancel"), this)),
      status_(new QLabel(this)) {
  setWindowTitle("memledger");
  setAcceptDrops(true);
  message_->setAlignment(Qt::AlignCenter);
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->setText(tr("Open a memledger recording (File → Open, or drop a file here)."));
  pages_->addWidget(message_);
  pages_->addWidget(tabs_);
  setCentralWidget(pages_);

  tabs_->addTab(summary_, tr("&Summary"));
  tabs_->addTab(flame_, tr("&Flame Graph"));
  tabs_->addTab(charts_, tr("C&harts"));
  tabs_->addTab(bottomUp_, tr("&Bottom-Up"));
  tabs_->addTab(topDown_, tr("&Top-Down"));
  tabs_->addTab(callerCallee_, tr("&Caller/Callee"));
  tabs_->addTab(leaks_, tr("&Leaks"));
  tabs_->addTab(sizes_, tr("Si&zes"));
  tabs_->addTab(suggestions_, tr("S&uggestions"));
  tabs_->addTab(compare_, tr("Co&mpare"));
  tabs_->addTab(fragmentation_, tr("Fra&gmentation"));
  connect(tabs_, &QTabWidget::currentChanged, this, [this] {
    QWidget* w = tabs_->currentWidget();
    doc_->setTreesShown(w == topDown_ || w == bottomUp_ || w == flame_);
    doc_->setBottomUpShown(w == bottomUp_ || (w == flame_ && flame_->inverted()));
    bringUpToDate(w);
  });
  connect(flame_, &FlameGraphView::invertedChanged, this, [this](bool on) {
    if (tabs_->currentWidget() == flame_) doc_->setBottomUpShown(on);
  });
  doc_->setTreesShown(false);  // the Summary first
  // The tree views (off screen) let go of trees about to be cleared; shown, they take the range
  // again (without trees: "building" until the next one comes).
  connect(doc_, &Document::treesReleased, this, [this] {
    topDown_->setRange(nullptr);
    bottomUp_->setRange(nullptr);
    flame_->setRange(nullptr);
    stale_.insert({topDown_, bottomUp_, flame_});
  });

  // The timeline dock, above every view.
  auto* dock = new QDockWidget(tr("Timeline"), this);
  dock->setObjectName("timelineDock");
  auto* panel = new QWidget(dock);
  auto* bar = new QHBoxLayout;
  auto* peakButton = new QToolButton(panel);
  peakButton->setText(tr("Jump to peak"));
  peakButton->setPopupMode(QToolButton::InstantPopup);
  peakMenu_ = new QMenu(peakButton);
  peakButton->setMenu(peakMenu_);
  auto* resetZoom = new QToolButton(panel);
  resetZoom->setText(tr("Whole run"));
  auto* clearSel = new QToolButton(panel);
  clearSel->setText(tr("Clear selection"));
  bar->addWidget(peakButton);
  bar->addWidget(resetZoom);
  bar->addWidget(clearSel);
  space_ = new QComboBox(panel);
  space_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  space_->setToolTip(tr("The space the call trees, the flame graph and caller/callee show: a peak is per space"));
  bar->addWidget(new QLabel(tr("Trees of"), panel));
  bar->addWidget(space_);
  show_ = new QComboBox(panel);
  show_->addItem(tr("A (this recording)"), int(Show::A));
  show_->addItem(tr("B (compared)"), int(Show::B));
  show_->addItem(tr("B \u2212 A"), int(Show::Diff));
  show_->setEnabled(false);
  show_->setToolTip(tr("With a comparison open (File \u2192 Compare with...): what the trees, the flame graph and "
                       "the charts show, A, B or B \u2212 A per function (Ctrl+Alt+A / B / D)"));
  bar->addWidget(new QLabel(tr("Show"), panel));
  bar->addWidget(show_);
  bar->addWidget(timelineStatus_, 1);
  auto* pl = new QVBoxLayout(panel);
  pl->setContentsMargins(2, 2, 2, 2);
  pl->addLayout(bar);
  pl->addWidget(timeline_, 1);
  dock->setWidget(panel);
  addDockWidget(Qt::TopDockWidgetArea, dock);
  timelineStatus_->setText(tr("Drag to select a time range; wheel to zoom; right-drag to pan."));
  connect(resetZoom, &QToolButton::clicked, this, [this] { timeline_->setView(0, INT64_MAX / 2); });
  connect(clearSel, &QToolButton::clicked, this, [this] {
    timeline_->setSelection(std::nullopt, std::nullopt);
    doc_->setRange(std::nullopt, std::nullopt);
  });
  connect(timeline_, &TimelineWidget::hoverText, timelineStatus_, &QLabel::setText);
  connect(timeline_, &TimelineWidget::rangeSelected, doc_, &Document::setRange);
  connect(space_, &QComboBox::activated, this, [this] { doc_->setSpace(space_->currentData().toString()); });
  connect(show_, &QComboBox::activated, this, [this] { setShow(Show(show_->currentData().toInt())); });
  connect(timeline_, &TimelineWidget::timeClicked, this, [this](int64_t t) { showLiveAt(t); });
  connect(timeline_, &TimelineWidget::viewChanged, charts_, &ChartsView::setView);
  connect(charts_, &ChartsView::timeClicked, this, [this](int64_t t) { showLiveAt(t); });
  connect(charts_, &ChartsView::rangeSelected, this, [this](std::optional<int64_t> from, std::optional<int64_t> to) {
    timeline_->setSelection(from, to);
    timeline_->setLiveAt(std::nullopt);
    doc_->setRange(from, to);
  });
  connect(charts_, &ChartsView::hoverText, timelineStatus_, &QLabel::setText);
  connect(doc_, &Document::compareOpened, this, [this] {
    timeline_->setCompare(doc_->compareData());
    show_->setEnabled(true);
    setShow(Show::Diff);  // asked to compare: every per-site view shows the differences
    compare_->compare(doc_->data()->rec, doc_->compareData()->rec);
  });
  connect(doc_, &Document::compareFailed, this, [this](const QString& msg) {
    status_->setText(msg);
    compare_->fail(msg);
  });

  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  progress_->hide();
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, doc_, &Document::cancel);
  connect(doc_, &Document::progress, this, [this](const QString& stage, double f) {
    status_->setText(stage);
    progress_->setValue(int(f * 1000));
  });
  connect(doc_, &Document::busyChanged, this, [this](bool busy) {
    progress_->setVisible(busy);
    cancel_->setVisible(busy);
    if (!busy) progress_->setValue(0);
  });
  connect(doc_, &Document::opened, this, &MainWindow::onOpened);
  connect(doc_, &Document::rangeChanged, this, &MainWindow::onRange);
  connect(doc_, &Document::reportCompleted, this, [this] {
    updateSummary();
    suggestions_->setData(doc_->data());
    timeline_->refresh();  // the phases
  });
  connect(doc_, &Document::failed, this, [this](const QString& msg) {
    if (!doc_->data()) {
      message_->setText(tr("<b>Cannot show this recording</b><br><br>%1").arg(msg.toHtmlEscaped()));
      pages_->setCurrentIndex(0);
    }
    status_->setText(msg);
    emit ready();
  });
  connect(summary_, &SummaryView::linkActivated, this, &MainWindow::followLink);
  connect(suggestions_, &SuggestionsView::showFunction, this, [this](const QString& symbol) {
    showView("caller-callee");
    callerCallee_->selectSymbol(symbol);
  });
  buildMenus();

  QSettings settings;
  resize(1280, 860);
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
}

MainWindow::~MainWindow() = default;

QStringList MainWindow::viewNames() {
  return {"summary", "timeline", "flamegraph", "charts", "bottom-up", "top-down", "caller-callee", "leaks", "sizes",
          "suggestions", "compare", "fragmentation"};
}

QWidget* MainWindow::view(const QString& name) const {
  QWidget* w = viewWidget(name);
  bringUpToDate(w);
  return w;
}

QWidget* MainWindow::viewWidget(const QString& name) const {
  if (name == "summary") return summary_;
  if (name == "timeline") return timeline_;
  if (name == "flamegraph") return flame_;
  if (name == "charts") return charts_;
  if (name == "bottom-up") return bottomUp_;
  if (name == "top-down") return topDown_;
  if (name == "caller-callee") return callerCallee_;
  if (name == "leaks") return leaks_;
  if (name == "sizes") return sizes_;
  if (name == "compare") return compare_;
  if (name == "fragmentation") return fragmentation_;
  if (name == "suggestions") return suggestions_;
  return nullptr;
}

bool MainWindow::showView(const QString& name) {
  QWidget* w = viewWidget(name);
  if (!w) return false;
  if (w != timeline_) tabs_->setCurrentWidget(w);
  return true;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, [this] {
    QString path = QFileDialog::getOpenFileName(this, tr("Open recording"), {}, tr("Recordings (*.db *.memledger);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
  });
  file->addAction(tr("&Compare with..."), this, [this] {
    QString path = QFileDialog::getOpenFileName(this, tr("Compare with recording"), {}, tr("Recordings (*.db *.memledger);;All files (*)"));
    if (!path.isEmpty() && !compareWith(path)) status_->setText(tr("Open a recording first, then compare another with it"));
  });
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  updateRecent({});
  file->addAction(tr("&Export view..."), QKeySequence(tr("Ctrl+E")), this, [this] {
    QString path = QFileDialog::getSaveFileName(this, tr("Export view"), {},
                                                tr("PNG image (*.png);;SVG image (*.svg);;CSV table (*.csv)"));
    if (!path.isEmpty() && !exportView(path)) status_->setText(tr("Could not write %1").arg(path));
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  // Ctrl+1..9, then Ctrl+0 for the tenth, in tab order; the Charts have their own key (and Alt+H).
  for (int i = 0, n = 0; i < tabs_->count(); ++i) {
    QKeySequence key = tabs_->widget(i) == charts_ ? QKeySequence(tr("Ctrl+Shift+C"))
                       : n < 10                    ? QKeySequence(QString("Ctrl+%1").arg((n + 1) % 10))
                                                   : QKeySequence();
    if (tabs_->widget(i) != charts_) ++n;
    viewMenu->addAction(tabs_->tabText(i).remove('&'), key, this, [this, i] { tabs_->setCurrentIndex(i); });
  }
  viewMenu->addSeparator();
  for (auto [show, key, text] : {std::tuple{Show::A, "Ctrl+Alt+A", tr("Show A")}, std::tuple{Show::B, "Ctrl+Alt+B", tr("Show B")},
                                 std::tuple{Show::Diff, "Ctrl+Alt+D", tr("Show B \u2212 A")}})
    viewMenu->addAction(text, QKeySequence(QString(key)), this, [this, show = show] {
      if (doc_->compareData()) setShow(show);
      else status_->setText(tr("Compare with a second recording first (File \u2192 Compare with...)"));
    });
  viewMenu->addAction(tr("Whole-run peak (no live-at time)"), QKeySequence(tr("Ctrl+Shift+L")), this,
                      [this] { showLiveAt(std::nullopt); });
  viewMenu->addAction(tr("Clear time selection"), QKeySequence(tr("Ctrl+Shift+A")), this, [this] {
    timeline_->setSelection(std::nullopt, std::nullopt);
    doc_->setRange(std::nullopt, std::nullopt);
  });
}

void MainWindow::updateRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("recentFiles").toStringList();
  if (!path.isEmpty()) {
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > 10) recent.removeLast();
    settings.setValue("recentFiles", recent);
  }
  recentMenu_->clear();
  for (const QString& r : recent) recentMenu_->addAction(r, this, [this, r] { openFile(r); });
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::openFile(const QString& path) {
  QString abs = QFileInfo(path).absoluteFilePath();
  setWindowTitle(QString("memledger - %1").arg(QFileInfo(path).fileName()));
  status_->setText(tr("Opening %1").arg(abs));
  if (!doc_->data()) {
    message_->setText(tr("Reading %1 ...").arg(abs.toHtmlEscaped()));
    pages_->setCurrentIndex(0);
  }
  doc_->open(abs);
}

void MainWindow::onOpened() {
  auto data = doc_->data();
  show_->setCurrentIndex(0);
  show_->setEnabled(false);
  timeline_->setLiveAt(std::nullopt);
  updateRecent(doc_->path());
  pages_->setCurrentIndex(1);
  timeline_->setData(data);
  timeline_->setCompare(nullptr);
  summary_->setData(data, nullptr);
  suggestions_->setData(data);
  fragmentation_->setData(data);
  peakMenu_->clear();
  for (const auto& s : data->series) {
    if (!s.series.exact_peak) continue;
    QString name = QString::fromStdString(s.name);
    peakMenu_->addAction(tr("%1: %2 at %3").arg(name, QString::fromStdString(an::formatBytes(s.series.exact_peak->bytes)),
                                                 QString::fromStdString(an::formatDuration(s.series.exact_peak->t_ns))),
                         this, [this, name] { timeline_->jumpToPeak(name); });
  }
  status_->setText(tr("Opened in %1 s%2").arg(doc_->openSeconds(), 0, 'f', 2)
                       .arg(data->report.recording.complete ? QString() : tr(" - incomplete recording (recorder killed or still running)")));
}

void MainWindow::showLiveAt(std::optional<int64_t> t) {
  timeline_->setSelection(std::nullopt, std::nullopt);
  timeline_->setLiveAt(t);
  if (t) doc_->setLiveAt(t);
  else doc_->setRange(std::nullopt, std::nullopt);
}

void MainWindow::setShow(Show show) {
  if (!doc_->compareData()) show = Show::A;
  show_->setCurrentIndex(std::max(0, show_->findData(int(show))));
  doc_->setShow(show);
}

void MainWindow::onRange() {
  auto range = doc_->range();
  timeline_->setLiveAt(range->live_at_ns);
  space_->clear();
  space_->addItem(tr("all spaces"), QString());
  for (const auto& s : range->spaces) space_->addItem(QString::fromStdString(s), QString::fromStdString(s));
  space_->setCurrentIndex(std::max(0, space_->findData(QString::fromStdString(range->space.value_or("")))));
  // MEMLEDGER_GUI_TIMING=1: how long each view takes to take the new data (GUI thread).
  static const bool timing = qEnvironmentVariableIsSet("MEMLEDGER_GUI_TIMING");
  QElapsedTimer t;
  t.start();
  QStringList times;
  auto cpuNs = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  };
  qint64 cpu = cpuNs();
  auto lap = [&](const char* what) {
    if (timing)
      times << QString("%1 %2 ms (cpu %3)").arg(what).arg(t.nsecsElapsed() / 1e6, 0, 'f', 1).arg((cpuNs() - cpu) / 1e6, 0, 'f', 1);
    t.restart();
    cpu = cpuNs();
  };
  stale_ = {summary_, topDown_, bottomUp_, callerCallee_, flame_, leaks_, sizes_};
  // The views off screen let go of the previous range (they take this one when shown): its trees
  // are freed now, on a worker (Document), not kept beside the new ones (a PyTorch run's trees
  // are about 100 MB). The Leaks view holds only its list.
  QWidget* shown = tabs_->currentWidget();
  if (shown != summary_) summary_->setData(doc_->data(), nullptr);
  for (CallTreeView* v : {topDown_, bottomUp_})
    if (shown != v) v->setRange(nullptr);
  if (shown != callerCallee_) callerCallee_->setRange(nullptr);
  if (shown != flame_) flame_->setRange(nullptr);
  if (shown != sizes_) sizes_->setRange(nullptr);
  lap("release");
  bringUpToDate(shown);
  lap(qPrintable(tabs_->currentWidget()->objectName()));
  if (timing) std::fprintf(stderr, "memledger-gui: %s\n", qPrintable(times.join(", ")));
  status_->setText(range->ranged() || range->live_at_ns || range->diff()
                       ? rangeNote(range.get()) + tr(" (%1 ms)").arg(doc_->rangeSeconds() * 1000, 0, 'f', 0)
                                   : tr("Opened in %1 s; call trees in %2 s")
                                         .arg(doc_->openSeconds(), 0, 'f', 2)
                                         .arg(doc_->rangeSeconds(), 0, 'f', 2));
  emit ready();
}

void MainWindow::updateSummary() const {
  auto range = doc_->range();
  summary_->setData(range && range->shown ? range->shown : doc_->data(), range);
}

void MainWindow::bringUpToDate(QWidget* w) const {
  if (!stale_.erase(w)) return;
  auto range = doc_->range();
  if (w == summary_) updateSummary();
  else if (w == topDown_) topDown_->setRange(range);
  else if (w == bottomUp_) bottomUp_->setRange(range);
  else if (w == callerCallee_) callerCallee_->setRange(range);
  else if (w == flame_) flame_->setRange(range);
  else if (w == leaks_) leaks_->setRange(range);
  else if (w == sizes_) sizes_->setRange(range);
}

void MainWindow::followLink(const QString& link) {
  QUrl url(link);
  if (link.startsWith("peak:")) {
    timeline_->jumpToPeak(link.mid(5));
    return;
  }
  if (link.startsWith("view:")) {
    QString rest = link.mid(5);
    QString name = rest.section('?', 0, 0);
    showView(name);
    QString metric = QUrlQuery(rest.section('?', 1)).queryItemValue("metric");
    if (auto m = an::parseTreeMetric(metric.toStdString()); m && name == "flamegraph") flame_->setMetric(*m);
  }
}

bool MainWindow::exportView(const QString& path) {
  QWidget* current = tabs_->currentWidget();
  if (path.endsWith(".csv", Qt::CaseInsensitive)) {
    const QAbstractItemModel* model = nullptr;
    if (current == leaks_) model = leaks_->model();
    else if (current == compare_) model = compare_->model();
    else if (current == callerCallee_) model = callerCallee_->table()->model();
    if (!model) return false;
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    return f.write(tableCsv(*model).toUtf8()) >= 0;
  }
  if (current == flame_) return flame_->exportImage(path);
  if (current == charts_) return charts_->exportImage(path);
  if (current == fragmentation_) return fragmentation_->exportImage(path);
  return grab().save(path);
}

bool MainWindow::compareWith(const QString& path) {
  if (doc_->path().isEmpty()) return false;
  compare_->comparing(doc_->path(), path);
  doc_->setCompare(path);  // then every per-site view can show B and B − A, and the table comes
  tabs_->setCurrentWidget(compare_);
  return true;
}

void MainWindow::closeEvent(QCloseEvent* e) {
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  doc_->cancel();
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.first().isLocalFile()) openFile(urls.first().toLocalFile());
}

}  // namespace memledger::gui
