// The Charts view, a time range's own peak and temporaries, the live set at a chosen time, and a
// comparison shown in every per-site view, on real recordings: samples/three_phases.c (100, 300
// and 50 MiB from ramp(), one phase after another), demo_leaky_peaky.c (build_index holds 64 MiB;
// leaks of 768 B from load_config and 20 KiB from fill_cache), ci_leaky.c (leak 10 x 1000 B from
// ci_leak_block, or hold 4000000 B in ci_hold_peak).
#include <QMouseEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "analyzer/format.h"
#include "analyzer/tree_diff.h"
#include "gui/call_tree_model.h"
#include "gui/call_tree_view.h"
#include "gui/caller_callee_view.h"
#include "gui/charts_view.h"
#include "gui/compare_view.h"
#include "gui/change_models.h"
#include "gui/flame_graph.h"
#include "gui/leaks_view.h"
#include "gui/main_window.h"
#include "gui/sizes_view.h"
#include "gui/summary_view.h"
#include "gui/timeline_widget.h"
#include "gui_test_util.h"

namespace an = memledger::analyzer;
using namespace memledger::gui;
using memledger::gui::testing::kBuild;
using memledger::gui::testing::programStacks;
using memledger::gui::testing::waitRange;

namespace {
constexpr int64_t kMiB = 1 << 20;

const an::ChartSeries* seriesOf(const an::Chart& c, const std::string& label) {
  for (const auto& s : c.series)
    if (s.label == label) return &s;
  return nullptr;
}

// A series' last value; INT64_MIN when the chart has no such series (the comparison then fails).
int64_t lastOf(const an::Chart& c, const std::string& label) {
  const an::ChartSeries* s = seriesOf(c, label);
  return s && !s->values.empty() ? s->values.back() : INT64_MIN;
}

// Opens `file` in the window and waits for its trees.
bool openAndWait(MainWindow& w, const QString& file) {
  QSignalSpy ready(&w, &MainWindow::ready);
  w.openFile(file);
  return QTest::qWaitFor([&] { return ready.count() > 0; }, 60000) && !w.showingError();
}

// Waits for the document's charts after `action` asked for them.
template <class F>
bool chartsAfter(Document* doc, F action) {
  QSignalSpy charts(doc, &Document::chartsChanged);
  action();
  return QTest::qWaitFor([&] { return charts.count() > 0; }, 60000);
}

// A left-button drag on a widget from a to b.
void drag(QWidget* w, QPoint a, QPoint b) {
  QTest::mousePress(w, Qt::LeftButton, {}, a);
  QMouseEvent move(QEvent::MouseMove, b, w->mapToGlobal(b), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w, &move);
  QTest::mouseRelease(w, Qt::LeftButton, {}, b);
}
}  // namespace

class GuiChartsTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString demo_, three_, leak_, peak_;

 private slots:
  void initTestCase() {
    if (!QFile::exists(kBuild + "/bin/memledger") || !QFile::exists(kBuild + "/samples/three_phases"))
      QSKIP("needs build/bin/memledger and build/samples (build the memledger and memledger_samples targets)");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir_.filePath("settings"));
    demo_ = dir_.filePath("demo.db");
    three_ = dir_.filePath("three.db");
    leak_ = dir_.filePath("ci_leak10.db");
    peak_ = dir_.filePath("ci_peak.db");
    QVERIFY(testing::recordSample("demo_leaky_peaky", demo_));
    QVERIFY(testing::recordSample("three_phases", three_));
    QVERIFY(testing::recordSample("ci_leaky", leak_, {"leak", "10"}));
    QVERIFY(testing::recordSample("ci_leaky", peak_, {"peak", "4000000"}));
  }

  // The Charts view of three_phases: ramp on top of every chart; zoomed on the heap's peak (the
  // timeline's zoom, which the chart follows) ramp holds its 300 blocks; a drag over phase 2 on
  // the chart selects it for every view, with its start, end and delta.
  void chartsFollowTheTimeline() {
    MainWindow w;
    w.resize(1400, 950);
    w.show();
    QVERIFY(openAndWait(w, three_));
    ChartsView* view = w.chartsView();
    QVERIFY(chartsAfter(w.document(), [&] { QVERIFY(w.showView("charts")); }));
    ChartCanvas* c = view->canvas();
    auto charts = c->charts();
    QVERIFY(charts);
    // About one point per pixel of the plot, never more.
    QVERIFY(charts->t_ns.size() <= size_t(c->plotRect().width()) + 2);
    const an::ChartSeries* allocs = seriesOf((*charts)[an::ChartKind::Allocations], "ramp");
    QVERIFY(allocs);
    QCOMPARE(allocs->values.back(), 450LL);
    QCOMPARE(lastOf((*charts)[an::ChartKind::Allocated], "ramp"), 471859200LL);
    QCOMPARE((*charts)[an::ChartKind::Consumed].series.front().label, std::string("ramp"));

    // Zoom the timeline onto the peak: the chart asks for that window, finer than a bucket.
    const an::Peak& peak = w.document()->data()->report.peak;
    const int64_t bucket = w.document()->data()->rec->info().bucket_ns;
    QVERIFY(chartsAfter(w.document(), [&] { w.timeline()->setView(peak.time_ns - 2 * bucket, peak.time_ns + 4 * bucket); }));
    charts = c->charts();
    QCOMPARE(charts->from_ns, peak.time_ns - 2 * bucket);
    QVERIFY(charts->interval_ns < bucket);
    // Two buckets after the peak (inside the 5 ms pause): ramp's 300 blocks, nothing else.
    const size_t k = charts->pointAt(peak.time_ns + 2 * bucket + bucket / 2);
    QVERIFY(seriesOf((*charts)[an::ChartKind::Consumed], "ramp"));
    QCOMPARE(seriesOf((*charts)[an::ChartKind::Consumed], "ramp")->values[k], 314572800LL);
    QCOMPARE((*charts)[an::ChartKind::Consumed].total[k], 314572800LL);
    c->setKind(an::ChartKind::Consumed);
    QStringList hover = c->valuesAt(peak.time_ns + 2 * bucket + bucket / 2);
    QVERIFY2(hover.contains("ramp 300.0 MiB"), qPrintable(hover.join(", ")));
    QVERIFY(hover.contains("total 300.0 MiB"));
    QVERIFY(!c->grab().isNull());
    QVERIFY(c->pointsDrawn() > 0);

    // Back to the whole run; a drag over phase 2 on the chart: the range of every view.
    const an::Phase& p2 = w.document()->data()->report.phases.at(1);
    QVERIFY(chartsAfter(w.document(), [&] { w.timeline()->setView(0, w.document()->data()->end_ns + 1); }));
    c->setKind(an::ChartKind::Allocations);
    QSignalSpy changed(w.document(), &Document::rangeChanged);
    const int y = int(c->plotRect().center().y());
    drag(c, QPoint(int(c->xOf(p2.start_ns)) + 1, y), QPoint(int(c->xOf(p2.end_ns)) - 1, y));
    QVERIFY(QTest::qWaitFor([&] { return changed.count() > 0; }, 60000));
    auto range = w.document()->range();
    QVERIFY(range->ranged());
    QVERIFY(w.timeline()->selection().has_value());
    QStringList delta = c->selectionText();
    QVERIFY2(!delta.isEmpty() && delta.filter(QRegularExpression("^ramp: 100 \u2192 400 \\(\u0394 \\+300\\)$")).size() == 1,
             qPrintable(delta.join(" | ")));
    // The selection's own peak in the trees: ramp's 300 MiB.
    QCOMPARE(programStacks(range->top_down, an::TreeMetric::Peak, {"phase"}),
             (std::set<std::string>{"main;phase;ramp 314572800"}));

    // PNG and SVG of the chart.
    w.showView("charts");
    QString svg = dir_.filePath("chart.svg"), png = dir_.filePath("chart.png");
    QVERIFY(w.exportView(svg));
    QVERIFY(w.exportView(png));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("ramp"));
    QVERIFY(!QImage(png).isNull());
  }

  // A range's truth in the trees: phase 1's peak is its own 100 MiB (not the run's 300), and the
  // header and the note say so; its temporaries are its own (1 of the run's 3).
  void rangePeakInTheTrees() {
    Document doc;
    doc.open(three_);
    QVERIFY(waitRange(doc));
    const auto& phases = doc.data()->report.phases;
    QCOMPARE(int(phases.size()), 3);
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Peak, {"phase"}),
             (std::set<std::string>{"main;phase;ramp 314572800"}));
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Temporary, {"phase"}),
             (std::set<std::string>{"main;phase;ramp 3"}));
    const int64_t expect[] = {100 * kMiB, 300 * kMiB, 50 * kMiB};
    for (int i : {0, 2}) {
      doc.setRange(phases[size_t(i)].start_ns, phases[size_t(i)].end_ns - 1);
      QVERIFY(waitRange(doc));
      const RangeData& r = *doc.range();
      QVERIFY(r.peakFollows());
      QVERIFY(r.temporary_follows);
      QCOMPARE(programStacks(r.top_down, an::TreeMetric::Peak, {"phase"}),
               (std::set<std::string>{"main;phase;ramp " + std::to_string(expect[i])}));
      QCOMPARE(r.live.space("heap")->peak_bytes, expect[i]);
      QVERIFY(r.live.space("heap")->exact);
      QCOMPARE(costHeader(kPeakColumn, &r), QString("Peak in selection"));
      QVERIFY2(rangeNote(&r).contains("exact"), qPrintable(rangeNote(&r)));
      // Its temporaries: the phase's last block, freed before anything else was allocated.
      QCOMPARE(programStacks(r.top_down, an::TreeMetric::Temporary, {"phase"}),
               (std::set<std::string>{"main;phase;ramp 1"}));
    }
  }

  // The live set at a chosen time: a click on the timeline at the peak shows ramp's 300 MiB in
  // the peak column ("Live at ..."); at the end of demo_leaky_peaky, its leaks.
  void liveAtAChosenTime() {
    MainWindow w;
    w.resize(1400, 950);
    w.show();
    QVERIFY(openAndWait(w, three_));
    TimelineWidget* t = w.timeline();
    const an::Peak& peak = w.document()->data()->report.peak;
    const int64_t bucket = w.document()->data()->rec->info().bucket_ns;
    t->setView(peak.time_ns - 20 * bucket, peak.time_ns + 20 * bucket);
    QSignalSpy changed(w.document(), &Document::rangeChanged);
    const QPoint at(int(std::ceil(t->xOf(peak.time_ns + 2 * bucket))), int(t->plotRect().center().y()));
    QTest::mouseClick(t, Qt::LeftButton, {}, at);
    QVERIFY(QTest::qWaitFor([&] { return changed.count() > 0; }, 60000));
    auto r = w.document()->range();
    QVERIFY(r->live_at_ns.has_value());
    QVERIFY(std::abs(*r->live_at_ns - (peak.time_ns + 2 * bucket)) <= (t->viewTo() - t->viewFrom()) / 100);
    QCOMPARE(programStacks(r->top_down, an::TreeMetric::Peak, {"phase"}), (std::set<std::string>{"main;phase;ramp 314572800"}));
    auto* topDown = static_cast<CallTreeView*>(w.view("top-down"));
    QVERIFY(topDown->model()->headerData(kPeakColumn, Qt::Horizontal).toString().startsWith("Live at "));
    auto* flame = static_cast<FlameGraphView*>(w.view("flamegraph"));
    QVERIFY(flame->findChild<QComboBox*>()->itemText(0).startsWith("live at "));
    // Esc on the timeline: back to the whole run's peak.
    QSignalSpy back(w.document(), &Document::rangeChanged);
    w.showLiveAt(std::nullopt);
    QVERIFY(QTest::qWaitFor([&] { return back.count() > 0; }, 60000));
    QVERIFY(!w.document()->range()->live_at_ns);

    // demo_leaky_peaky after the run: the leaks, nothing of build_index.
    Document doc;
    doc.open(demo_);
    QVERIFY(waitRange(doc));
    doc.setLiveAt(doc.data()->end_ns);
    QVERIFY(waitRange(doc));
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Peak, {"build_index", "load_config", "fill_cache"}),
             (std::set<std::string>{"main;fill_cache 20480", "main;load_config 768"}));
    // ... and at the end of the "index" phase: load_config's 768 B only.
    doc.setLiveAt(doc.data()->report.phases.at(2).start_ns);
    QVERIFY(waitRange(doc));
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Peak, {"build_index", "load_config", "fill_cache"}),
             (std::set<std::string>{"main;load_config 768"}));
  }

  // ci_leaky leak 10 (A) against ci_leaky peak 4000000 (B): once compared, the trees, caller/
  // callee, the flame graph and the charts show B − A; A and B one at a time on request.
  void compareInEveryView() {
    MainWindow w;
    w.resize(1400, 950);
    w.show();
    QVERIFY(openAndWait(w, leak_));
    QSignalSpy opened(w.document(), &Document::compareOpened);
    QSignalSpy compared(w.compareView(), &CompareView::compared);
    QSignalSpy ready(&w, &MainWindow::ready);
    QVERIFY(w.compareWith(peak_));
    QVERIFY(QTest::qWaitFor([&] { return opened.count() > 0 && compared.count() > 0; }, 60000));
    QVERIFY(QTest::qWaitFor([&] { return w.document()->range()->diff(); }, 60000));
    w.showView("bottom-up");  // its tree is made when a view shows it
    QVERIFY(QTest::qWaitFor([&] {
      return !w.document()->busy() && w.document()->range()->diff() && !w.document()->range()->bottom_up.nodes.empty();
    }, 60000));
    const RangeData& r = *w.document()->range();
    // The timeline marks both runs' heap peaks: A's filled, B's an outline ("B heap peak ...").
    TimelineWidget* timeline = w.timeline();
    timeline->grab();
    const TimelineWidget::PeakMark *peakA = nullptr, *peakB = nullptr;
    for (const auto& m : timeline->peakMarks())
      if (m.series == "heap") (m.compared ? peakB : peakA) = &m;
    QVERIFY(peakA && peakB);
    QCOMPARE(peakA->bytes, w.document()->data()->report.peak.bytes);
    QCOMPARE(peakB->bytes, w.document()->compareData()->report.peak.bytes);
    QCOMPARE(peakB->t_ns, w.document()->compareData()->report.peak.time_ns);
    QVERIFY(peakB->bytes >= 4000000 && peakA->bytes < 4000000);  // ci_hold_peak's 4 MB block in B only
    const std::set<std::string> program{"ci_leak_block", "ci_hold_peak"};
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Leaked, program, true),
             (std::set<std::string>{"main;ci_leak_block -10000"}));
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Peak, program, true),
             (std::set<std::string>{"main;ci_hold_peak 4000000", "main;ci_leak_block -10000"}));
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Count, program, true),
             (std::set<std::string>{"main;ci_hold_peak 1", "main;ci_leak_block -10"}));
    // The bottom-up tree's columns are deltas: signed, growth red, shrink blue, headers "Δ ...".
    auto* bottomUp = static_cast<CallTreeView*>(w.view("bottom-up"));
    CostFilterProxy* proxy = bottomUp->proxy();
    QModelIndex hold, leak;
    for (int row = 0; row < proxy->rowCount(); ++row) {
      QString name = proxy->index(row, kSymbolColumn).data().toString();
      if (name == "ci_hold_peak") hold = proxy->index(row, kPeakColumn);
      if (name == "ci_leak_block") leak = proxy->index(row, kLeakedColumn);
    }
    QVERIFY(hold.isValid() && leak.isValid());
    QCOMPARE(hold.data(Qt::UserRole).toLongLong(), 4000000LL);
    QCOMPARE(hold.data().toString(), QString("+3.81 MiB"));
    QCOMPARE(hold.data(Qt::ForegroundRole).value<QColor>(), deltaColor(1));
    QCOMPARE(leak.data(Qt::UserRole).toLongLong(), -10000LL);
    QCOMPARE(leak.data().toString(), QString("-9.77 KiB"));
    QCOMPARE(leak.data(Qt::ForegroundRole).value<QColor>(), deltaColor(-1));
    QCOMPARE(proxy->headerData(kPeakColumn, Qt::Horizontal).toString(), QString::fromUtf8("\u0394 Peak"));
    // Caller/callee: main's callees with their changes.
    const an::SymbolCost* main = nullptr;
    for (const auto& s : r.symbols)
      if (s.symbol == "main") main = &s;
    QVERIFY(main);
    QCOMPARE(main->callees.at("ci_leak_block").leaked, -10000LL);
    QCOMPARE(main->callees.at("ci_hold_peak").peak, 4000000LL);
    // The flame graph of the allocated changes: widths by the size of the changes, growth red.
    auto* flame = static_cast<FlameGraphView*>(w.view("flamegraph"));
    w.showView("flamegraph");
    flame->setMetric(an::TreeMetric::Allocated);
    FlameGraphCanvas* canvas = flame->canvas();
    canvas->grab();
    QVERIFY(canvas->changes());
    double holdWidth = 0, leakWidth = 0;
    for (const auto& b : canvas->boxes()) {
      const std::string& sym = canvas->tree()->symbol(b.node);
      if (sym == "ci_hold_peak") holdWidth = b.rect.width();
      if (sym == "ci_leak_block") leakWidth = b.rect.width();
    }
    QVERIFY(holdWidth > 0.98 * canvas->width() * 4000000.0 / 4010064.0 - 2);
    QVERIFY2(leakWidth > 0, "the shrink beside the growth is drawn");
    QVERIFY(canvas->tooltipFor(0).contains(QString::fromUtf8("B \u2212 A allocated")));
    // The charts of B − A: ci_hold_peak +4000000 allocated, ci_leak_block -10000 by the end.
    QVERIFY(chartsAfter(w.document(), [&] { w.showView("charts"); }));
    auto charts = w.chartsView()->canvas()->charts();
    QVERIFY(charts->diff);
    QCOMPARE(lastOf((*charts)[an::ChartKind::Allocated], "ci_hold_peak"), 4000000LL);
    QCOMPARE(lastOf((*charts)[an::ChartKind::Allocated], "ci_leak_block"), -10000LL);
    QCOMPARE(lastOf((*charts)[an::ChartKind::Consumed], "ci_leak_block"), -10000LL);
    w.chartsView()->setKind(an::ChartKind::Allocated);
    QVERIFY(w.chartsView()->canvas()->valuesAt(charts->t_ns.back()).contains("ci_hold_peak +3.81 MiB"));

    // Leaks: the table's rows are the changes per site (ci_leak_block's ten blocks gone).
    auto* leaks = static_cast<LeaksView*>(w.view("leaks"));
    w.showView("leaks");
    QCOMPARE(leaks->table()->model()->rowCount(), 1);
    QCOMPARE(leaks->changes()->index(0, LeakChangesModel::kStatus).data().toString(), QString("gone"));
    QCOMPARE(leaks->changes()->index(0, LeakChangesModel::kDeltaBytes).data(Qt::UserRole).toLongLong(), -10000LL);
    QCOMPARE(leaks->changes()->index(0, LeakChangesModel::kDeltaCount).data(Qt::UserRole).toLongLong(), -10LL);
    QVERIFY(leaks->changes()->index(0, LeakChangesModel::kSite).data().toString().startsWith("ci_leak_block"));
    QVERIFY(leaks->note()->text().contains(QString::fromUtf8("B \u2212 A: -9.77 KiB leaked in -10 blocks")));
    // Sizes: A's and B's bars per bucket; the 512 B bucket lost ten blocks, the 2 MiB one gained one.
    auto* sizes = static_cast<SizesView*>(w.view("sizes"));
    w.showView("sizes");
    SizeBars* bars = sizes->bars();
    QCOMPARE(bars->buckets(), int(r.size_changes.size()));
    int lost = -1, gained = -1;
    for (int i = 0; i < bars->buckets(); ++i) {
      if (r.size_changes[size_t(i)].from == 512) lost = i;
      if (r.size_changes[size_t(i)].from == 2097152) gained = i;
    }
    QVERIFY(lost >= 0 && gained >= 0);
    QCOMPARE(r.size_changes[size_t(lost)].count_a - r.size_changes[size_t(lost)].count_b, 10);
    QVERIFY(bars->barRectA(lost).height() > 10 * bars->barRect(lost).height() / 2);  // A's 10 blocks, B's none
    QCOMPARE(bars->selected(), lost);  // the largest change is shown first
    QCOMPARE(sizes->sites()->topLevelItem(0)->text(1), QString("-10"));
    QVERIFY(sizes->sites()->topLevelItem(0)->text(0).startsWith("ci_leak_block"));
    bars->select(gained);
    QCOMPARE(sizes->sites()->topLevelItem(0)->text(1), QString("+1"));
    QCOMPARE(sizes->sites()->topLevelItem(0)->text(4), QString("new"));
    // Summary: both runs' numbers and their changes, the largest leak change named.
    const QString summary = SummaryView::html(*w.document()->data(), &r);
    QVERIFY(summary.contains(QString::fromUtf8("B \u2212 A")));
    QVERIFY(summary.contains("ci_leaky peak 4000000"));
    QVERIFY(summary.contains("-9.77 KiB"));
    QVERIFY(summary.contains("ci_leak_block (ci_leaky.c:16)"));
    bool allocations = false;
    for (const auto& h : r.headlines)
      if (h.name == "Allocations") allocations = h.b - h.a == -9;  // A: 10 leaked + buffer + scratch; B: hold + the two
    QVERIFY(allocations);
    // The timeline draws B's curves (dashed) over A's.
    w.timeline()->grab();
    QVERIFY(std::count(w.timeline()->compareDrawn().begin(), w.timeline()->compareDrawn().end(), QString("heap")) == 1);

    // A alone, then B alone, in the same views (and their charts).
    QSignalSpy shown(w.document(), &Document::rangeChanged);
    QVERIFY(chartsAfter(w.document(), [&] { w.setShow(Show::A); }));
    QVERIFY(QTest::qWaitFor([&] { return shown.count() > 0 && !w.document()->busy(); }, 60000));
    QCOMPARE(programStacks(w.document()->range()->top_down, an::TreeMetric::Leaked, program),
             (std::set<std::string>{"main;ci_leak_block 10000"}));
    QVERIFY(!w.chartsView()->canvas()->charts()->diff);
    shown.clear();
    w.setShow(Show::B);
    QVERIFY(QTest::qWaitFor([&] { return shown.count() > 0 && !w.document()->busy(); }, 60000));
    QCOMPARE(w.document()->range()->show, Show::B);
    QCOMPARE(programStacks(w.document()->range()->top_down, an::TreeMetric::Peak, program),
             (std::set<std::string>{"main;ci_hold_peak 4000000"}));
    // B's Summary is B's run, not A's numbers beside B's lists.
    auto* summaryView = static_cast<SummaryView*>(w.view("summary"));
    w.showView("summary");
    QVERIFY(summaryView->toPlainText().contains("ci_leaky peak 4000000"));
    QVERIFY(!summaryView->toPlainText().contains("ci_leaky leak 10"));
  }

  // `--screenshot --view charts` (and the chart's kind), `--at`, `--compare --show`.
  void screenshots() {
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    const QString out = dir_.filePath("charts.png");
    p.start(kBuild + "/bin/memledger-gui", {three_, "--screenshot", out, "--view", "charts", "--chart", "allocated"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QImage(out).size(), QSize(1400, 950));
    p.start(kBuild + "/bin/memledger-gui", {demo_, "--screenshot", out, "--view", "top-down", "--at", "10s"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    p.start(kBuild + "/bin/memledger-gui",
            {leak_, "--compare", peak_, "--show", "diff", "--screenshot", out, "--view", "flamegraph"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    p.start(kBuild + "/bin/memledger-gui", {three_, "--screenshot", out, "--view", "charts", "--chart", "nonsense"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 2);
  }
};

QTEST_MAIN(GuiChartsTest)
#include "gui_charts_test.moc"
