// The GUI on real recordings: sample programs with known truth (samples/) are recorded by the
// built `memledger`, opened by the GUI's Document and MainWindow offscreen, and what each view
// shows is checked: the trees as collapsed stacks ("main;build_index 67108864"), the models under
// QAbstractItemModelTester, the timeline's peak marker and phases, a time-range selection made
// with the mouse, the flame graph, bad files, and the --screenshot command line.
#include <QAbstractItemModelTester>
#include <QFile>
#include <QProcess>
#include <QCheckBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <sqlite3.h>

#include <cmath>
#include <set>

#include "gui/call_tree_model.h"
#include "gui/call_tree_view.h"
#include "gui/flame_graph.h"
#include "gui/leaks_view.h"
#include "gui/compare_view.h"
#include "gui/main_window.h"
#include "gui/sizes_view.h"
#include "analyzer/format.h"
#include "gui/summary_view.h"
#include "gui/theme.h"
#include "gui/timeline_widget.h"
#include "gui_test_util.h"

namespace an = memledger::analyzer;
using namespace memledger::gui;
using memledger::gui::testing::kBuild;
using memledger::gui::testing::programStacks;

class GuiTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString demo_, three_;

  QString record(const QString& sample, bool compress = true, const QStringList& programArgs = {}, const QString& name = {}) {
    QString out = dir_.filePath((name.isEmpty() ? sample : name) + (compress ? ".db" : ".plain.db"));
    QStringList args{"record", "-o", out, "--force"};
    if (!compress) args << "--no-compress";
    args << "--" << kBuild + "/samples/" + sample << programArgs;
    QProcess p;
    p.start(kBuild + "/bin/memledger", args);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) return {};
    return out;
  }

  // Waits until the document has published the range data (or failed).
  static bool waitRange(Document& doc) {
    QSignalSpy range(&doc, &Document::rangeChanged), failed(&doc, &Document::failed);
    return QTest::qWaitFor([&] { return range.count() > 0 || failed.count() > 0; }, 60000) && failed.isEmpty();
  }

 private slots:
  void initTestCase() {
    if (!QFile::exists(kBuild + "/bin/memledger") || !QFile::exists(kBuild + "/samples/demo_leaky_peaky"))
      QSKIP("needs build/bin/memledger and build/samples (build the memledger and memledger_samples targets)");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir_.filePath("settings"));
    demo_ = record("demo_leaky_peaky");
    three_ = record("three_phases");
    QVERIFY2(!demo_.isEmpty() && !three_.isEmpty(), "recording the samples failed");
  }

  // demo_leaky_peaky: build_index holds 64 x 1 MiB at the peak, load_config leaks 3 x 256 B,
  // fill_cache 20 x 1 KiB (samples/demo_leaky_peaky.c).
  void treesAsCollapsedStacks() {
    Document doc;
    doc.setBottomUpShown(true);
    doc.open(demo_);
    QVERIFY(waitRange(doc));
    const RangeData& r = *doc.range();
    const std::set<std::string> program{"build_index", "load_config", "fill_cache"};
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Peak, program),
             (std::set<std::string>{"main;build_index 67108864", "main;load_config 768"}));
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Leaked, program),
             (std::set<std::string>{"main;fill_cache 20480", "main;load_config 768"}));
    QCOMPARE(programStacks(r.top_down, an::TreeMetric::Count, program),
             (std::set<std::string>{"main;build_index 64", "main;fill_cache 20", "main;load_config 3"}));
    // The root adds up to the report's own totals.
    QCOMPARE(r.top_down.nodes[0].total.leaked, doc.data()->report.leaks.bytes);
    QCOMPARE(r.top_down.nodes[0].total.allocated, doc.data()->report.totals.allocated_bytes);
    QCOMPARE(r.bottom_up.nodes[0].total.count, r.top_down.nodes[0].total.count);
  }

  // The bottom-up tree is made only while a view that shows it is on screen (Bottom-Up, the
  // inverted flame graph); shown later, the range is made again with it.
  void bottomUpOnlyWhenShown() {
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(demo_);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0 && !w.document()->busy(); }, 60000));
    Document* doc = w.document();
    QVERIFY(!doc->range()->top_down.nodes.empty());
    QVERIFY(doc->range()->bottom_up.nodes.empty());  // the Summary is on screen
    w.showView("flamegraph");
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy(); }, 60000));
    QVERIFY(doc->range()->bottom_up.nodes.empty());  // an icicle of the top-down tree
    QCheckBox* invert = nullptr;
    for (QCheckBox* c : w.view("flamegraph")->findChildren<QCheckBox*>())
      if (c->text().contains("Inverted")) invert = c;
    QVERIFY(invert);
    invert->setChecked(true);
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy() && !doc->range()->bottom_up.nodes.empty(); }, 60000));
    const RangeData& r = *doc->range();
    QCOMPARE(r.bottom_up.nodes[0].total.count, r.top_down.nodes[0].total.count);
    const std::vector<std::string> up = an::collapsedStacks(r.bottom_up, an::TreeMetric::Peak);
    QVERIFY(std::any_of(up.begin(), up.end(), [](const std::string& l) {
      return l.rfind("build_index;main;", 0) == 0 && l.ends_with(" 67108864");  // 64 x 1 MiB, innermost first
    }));
    // Off screen again: the next range makes none; the Bottom-Up view asks for it once more.
    w.showView("summary");
    doc->setRange(std::nullopt, doc->data()->end_ns / 2);
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy() && doc->range()->ranged(); }, 60000));
    QVERIFY(doc->range()->bottom_up.nodes.empty());
    w.showView("bottom-up");
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy() && !doc->range()->bottom_up.nodes.empty(); }, 60000));
    QVERIFY(doc->range()->ranged());  // the same range, with the tree
    auto* view = static_cast<CallTreeView*>(w.view("bottom-up"));
    QVERIFY(QTest::qWaitFor([&] { return view->tree()->model()->rowCount() > 0; }, 10000));
  }

  // samples/mmap_leak.c: map_regions leaks 98304 B of mmap; the trees show one space at a time.
  void treesOfOneSpace() {
    QString mmap = record("mmap_leak");
    QVERIFY(!mmap.isEmpty());
    Document doc;
    doc.open(mmap);
    QVERIFY(waitRange(doc));
    QCOMPARE(doc.range()->space.value_or(""), std::string("heap"));
    QCOMPARE(doc.range()->spaces, (std::vector<std::string>{"heap", "mmap"}));
    QVERIFY(programStacks(doc.range()->top_down, an::TreeMetric::Leaked, {"map_regions"}).empty());
    doc.setSpace("mmap");
    QVERIFY(waitRange(doc));
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Leaked, {"map_regions"}),
             (std::set<std::string>{"main;map_regions 98304"}));
    QCOMPARE(doc.range()->top_down.nodes[0].total.peak, 196608LL);  // 3 x 64 KiB at the mmap peak
    doc.setSpace("");
    QVERIFY(waitRange(doc));
    QVERIFY(!doc.range()->space);
  }

  // samples/leak_kinds.c list: a lost list head (definite 32 B) whose two nodes are indirect
  // (64 B): the Leaks table shows the exit scan's kinds per site.
  void leaksShowTheirKinds() {
    QString list = record("leak_kinds", true, {"list"}, "leak_kinds_list");
    QVERIFY(!list.isEmpty());
    Document doc;
    doc.open(list);
    QVERIFY(waitRange(doc));
    LeaksModel model;
    model.setLeaks(doc.range()->leaks_list);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.index(0, LeaksModel::kBytes).data(Qt::UserRole).toLongLong(), 96LL);
    QCOMPARE(model.index(0, LeaksModel::kLeakKinds).data().toString(), QString("definite 32 B, indirect 64 B"));
  }

  void modelsUnderTester() {
    Document doc;
    doc.setBottomUpShown(true);  // as the Bottom-Up view on screen asks
    doc.open(demo_);
    QVERIFY(waitRange(doc));
    for (an::TreeDirection d : {an::TreeDirection::TopDown, an::TreeDirection::BottomUp}) {
      CallTreeModel model(d);
      QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
      model.setRange(doc.range());
      CostFilterProxy proxy;
      proxy.setSourceModel(&model);
      QAbstractItemModelTester proxyTester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
      proxy.sort(kPeakColumn, Qt::DescendingOrder);
      if (d == an::TreeDirection::BottomUp) {
        // Bottom-up: the allocating functions at the top level, the largest peak first.
        QModelIndex first = proxy.index(0, kSymbolColumn);
        QCOMPARE(first.data().toString(), QString("build_index"));
        QCOMPARE(proxy.index(0, kPeakColumn).data(Qt::UserRole).toLongLong(), 67108864LL);
        QCOMPARE(proxy.index(0, kPeakColumn).data().toString(), QString("64.0 MiB"));
        QCOMPARE(proxy.index(0, 0, first).data().toString(), QString("main"));  // called by main
      }
      proxy.setFilters("fill_cache", {}, {});
      QVERIFY(proxy.rowCount() >= 1);
      proxy.setFilters({}, "demo_leaky_peaky.c", {});
      QVERIFY(proxy.rowCount() >= 1);
      proxy.setFilters("no_such_function", {}, {});
      QCOMPARE(proxy.rowCount(), 0);
      model.setRange(nullptr);
    }
  }

  // three_phases: 100, 300, 50 MiB from ramp(); phase 2's range holds only its 300 blocks.
  void rangeFiltersTrees() {
    Document doc;
    doc.open(three_);
    QVERIFY(waitRange(doc));
    const auto& phases = doc.data()->report.phases;
    QCOMPARE(int(phases.size()), 3);
    auto ramp = programStacks(doc.range()->top_down, an::TreeMetric::Allocated, {"phase"});
    QVERIFY2(ramp.count("main;phase;ramp 471859200"), "the whole run allocates 450 MiB in ramp()");
    doc.setRange(phases[1].start_ns, phases[1].end_ns - 1);
    QVERIFY(waitRange(doc));
    QVERIFY(doc.range()->ranged());
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Allocated, {"phase"}),
             (std::set<std::string>{"main;phase;ramp 314572800"}));
    QCOMPARE(programStacks(doc.range()->top_down, an::TreeMetric::Count, {"phase"}),
             (std::set<std::string>{"main;phase;ramp 300"}));
    qInfo("range update: %.1f ms", doc.rangeSeconds() * 1000);
  }

  void windowShowsSummaryTimelineAndSelection() {
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(demo_);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
    QVERIFY(!w.showingError());
    auto data = w.document()->data();
    // Summary: the numbers of the report, the process's exit.
    QString html = SummaryView::html(*data, w.document()->range().get());
    QVERIFY(html.contains("64.0 MiB"));
    QVERIFY(html.contains("exit 0"));
    QVERIFY(html.contains("24.8 KiB in 24 blocks"));
    // Suggestions with their evidence in words and units, not as JSON.
    QVERIFY(!data->report.suggestions.empty());
    QVERIFY(html.contains(QString::fromStdString(an::formatEvidence(data->report.suggestions[0].evidence)).toHtmlEscaped()));
    QVERIFY(!html.contains("{\"") && !html.contains("{&quot;"));
    // Timeline: the heap's exact peak marked where it is, the three marker phases shaded.
    TimelineWidget* t = w.timeline();
    t->grab();  // paints
    const TimelineWidget::PeakMark* heap = nullptr;
    for (const auto& m : t->peakMarks())
      if (m.series == "heap") heap = &m;
    QVERIFY(heap);
    QCOMPARE(heap->bytes, data->report.peak.bytes);
    QCOMPARE(heap->t_ns, data->report.peak.time_ns);
    QVERIFY(std::abs(heap->at.x() - t->xOf(heap->t_ns)) < 0.5);
    QStringList bands;
    for (const auto& b : t->phaseBands()) bands << b.name;
    QCOMPARE(bands, (QStringList{"load", "index", "serve"}));
    QVERIFY(t->pointsDrawn() <= size_t(t->plotRect().width()) * 2 * data->series.size());
    // Jump to the heap peak: the view is centred on it.
    QVERIFY(t->jumpToPeak("heap"));
    QVERIFY(std::abs((t->viewFrom() + t->viewTo()) / 2 - data->report.peak.time_ns) < (t->viewTo() - t->viewFrom()) / 50);

    // Leaks view before and after selecting the "load" phase with the mouse.
    auto* leaks = static_cast<LeaksView*>(w.view("leaks"));
    QCOMPARE(leaks->model()->rowCount(), int(data->report.leaks.sites.size()));
    const an::Phase& load = data->report.phases[0];
    int64_t pad = (load.end_ns - load.start_ns) / 2 + 1;
    t->setView(load.start_ns - pad, load.end_ns + pad);
    QSignalSpy changed(w.document(), &Document::rangeChanged);
    QPoint a(int(t->xOf(load.start_ns - pad / 2)), int(t->plotRect().center().y()));
    QPoint b(int(t->xOf(load.end_ns)), a.y());
    QTest::mousePress(t, Qt::LeftButton, {}, a);
    QMouseEvent move(QEvent::MouseMove, b, t->mapToGlobal(b), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(t, &move);
    QTest::mouseRelease(t, Qt::LeftButton, {}, b);
    QVERIFY(t->selection().has_value());
    QVERIFY(QTest::qWaitFor([&] { return changed.count() > 0; }, 60000));
    QVERIFY(w.document()->range()->ranged());
    // Off screen, the Leaks view takes the range when it is shown or asked for, not before: a
    // range costs the GUI thread only the visible view's update.
    QCOMPARE(leaks->model()->rowCount(), int(data->report.leaks.sites.size()));
    QCOMPARE(w.view("leaks"), static_cast<QWidget*>(leaks));
    QCOMPARE(leaks->model()->rowCount(), 1);
    QCOMPARE(leaks->model()->index(0, LeaksModel::kBytes).data(Qt::UserRole).toLongLong(), 768LL);
    QVERIFY(leaks->model()->index(0, LeaksModel::kSite).data().toString().startsWith("load_config"));
    QVERIFY(tableCsv(*leaks->model()).contains(",768,3,malloc,"));
    qInfo("open %.3f s, range %.1f ms", w.document()->openSeconds(), w.document()->rangeSeconds() * 1000);
  }

  void flameGraph() {
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(demo_);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
    w.showView("flamegraph");
    auto* view = static_cast<FlameGraphView*>(w.view("flamegraph"));
    FlameGraphCanvas* c = view->canvas();
    view->setMetric(an::TreeMetric::Peak);
    c->grab();
    const an::CallTree* tree = c->tree();
    QVERIFY(tree);
    double widest = 0;
    for (const auto& b : c->boxes())
      if (tree->symbol(b.node) == "build_index") widest = std::max(widest, b.rect.width());
    // 64 MiB of the 64.0 MiB (+768 B) live at the peak: build_index spans the whole width.
    QVERIFY(widest > 0.99 * c->width());
    view->setMetric(an::TreeMetric::Leaked);
    c->setSearch("fill_cache");
    c->grab();
    QCOMPARE(c->matchedCost(), 20480LL);
    QVERIFY(c->tooltipFor(0).contains("leaked"));
    // Zoom into fill_cache: it becomes the full-width frame.
    for (const auto& b : c->boxes())
      if (b.match) c->zoomTo(b.node);
    c->grab();
    QCOMPARE(tree->symbol(c->zoomNode()), std::string("fill_cache"));
    QString svg = dir_.filePath("flame.svg");
    QVERIFY(view->exportImage(svg));
    QFile f(svg);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.readAll().contains("fill_cache"));
  }

  // A newer open cancels the older one: only the newest recording is published; a cancel
  // leaves the document idle with nothing half-published.
  // demo_leaky_peaky allocates 3 x 256 B (load_config), 20 x 1 KiB (fill_cache) and 64 x 1 MiB
  // (build_index): the Sizes view shows those bars with their sites; a click on one lists it.
  void sizesHistogram() {
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(demo_);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
    QVERIFY(w.showView("sizes"));
    auto* view = static_cast<SizesView*>(w.view("sizes"));
    const an::SizeHistogram& h = w.document()->range()->sizes;
    auto bucketOf = [&](uint64_t from) {
      for (size_t i = 0; i < h.buckets.size(); ++i)
        if (h.buckets[i].from == from) return int(i);
      return -1;
    };
    auto topSite = [&](int bucket) { return QString::fromStdString(an::siteText(h.buckets[size_t(bucket)].sites.at(0).stack)); };
    const int b256 = bucketOf(256), b1k = bucketOf(1024), b1m = bucketOf(1 << 20);
    QVERIFY(b256 >= 0 && b1k >= 0 && b1m >= 0);
    QCOMPARE(h.buckets[size_t(b1m)].count, 64);  // nothing else of 1-2 MiB
    QCOMPARE(h.buckets[size_t(b1m)].bytes, 64LL << 20);
    QVERIFY(h.buckets[size_t(b256)].count >= 3);
    QVERIFY(h.buckets[size_t(b1k)].count >= 20);
    QVERIFY(topSite(b1m).startsWith("build_index"));
    QCOMPARE(h.buckets[size_t(b1m)].sites[0].count, 64);
    QCOMPARE(h.estimated_count, 0);
    // The bucket of most blocks first (1 MiB, unless the runtime made more small ones).
    view->grab();
    QVERIFY(view->bars()->selected() >= 0);
    // A click on the 1 KiB bar lists fill_cache's 20 blocks and its stack.
    QRect bar = view->bars()->barRect(b1k);
    QVERIFY(bar.isValid());
    QTest::mouseClick(view->bars(), Qt::LeftButton, {}, bar.center());
    QCOMPARE(view->bars()->selected(), b1k);
    QVERIFY(view->sites()->topLevelItemCount() >= 1);
    bool found = false;
    for (int i = 0; i < view->sites()->topLevelItemCount(); ++i) {
      QTreeWidgetItem* item = view->sites()->topLevelItem(i);
      if (item->text(0).startsWith("fill_cache")) {
        found = true;
        QCOMPARE(item->text(1), QString("20"));
        QCOMPARE(item->text(2), QString("20.0 KiB"));
        view->sites()->setCurrentItem(item);
      }
    }
    QVERIFY(found);
    QVERIFY(view->stack()->toPlainText().contains("fill_cache"));
    QVERIFY(view->stack()->toPlainText().contains("main"));
    // A time range of the "load" phase: only load_config's 256 B blocks of the program's own.
    const an::Phase& load = w.document()->data()->report.phases[0];
    QSignalSpy changed(w.document(), &Document::rangeChanged);
    w.document()->setRange(load.start_ns, load.end_ns - 1);  // the next phase starts at end_ns
    QVERIFY(QTest::qWaitFor([&] { return changed.count() > 0; }, 60000));
    const an::SizeHistogram& r = w.document()->range()->sizes;
    int64_t mib = 0, config = 0;
    for (const auto& b : r.buckets) {
      mib += b.from == (1 << 20) ? b.count : 0;
      for (const auto& site : b.sites)
        if (b.from == 256 && an::siteText(site.stack).rfind("load_config", 0) == 0) config += site.count;
    }
    QCOMPARE(mib, 0);
    QCOMPARE(config, 3);  // exact from site_buckets, though the file has rows only for leaks
  }

  // ci_leaky leaking 10 x 1000 B (A) against ci_leaky holding a 4 MB peak (B): ci_leak_block is
  // gone (-10000 B leaked), ci_hold_peak new (+4000000 B at the peak), in the table and the
  // difference flame graph; `memledger diff` finds the same.
  void compareTwoRecordings() {
    const QString a = record("ci_leaky", true, {"leak", "10"}, "ci_leak10"), b = record("ci_leaky", true, {"peak", "4000000"}, "ci_peak");
    QVERIFY(!a.isEmpty() && !b.isEmpty());
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(a);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
    CompareView* view = w.compareView();
    QSignalSpy compared(view, &CompareView::compared);
    QVERIFY(w.compareWith(b));
    QVERIFY(QTest::qWaitFor([&] { return compared.count() > 0; }, 60000));
    QVERIFY2(view->error().isEmpty(), qPrintable(view->error()));
    QCOMPARE(w.view("compare"), static_cast<QWidget*>(view));
    QAbstractItemModelTester tester(view->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    int leakRow = -1, peakRow = -1;
    for (int r = 0; r < view->model()->rowCount(); ++r) {
      const QString site = view->model()->index(r, CompareModel::kSite).data().toString();
      if (site.startsWith("ci_leak_block")) leakRow = r;
      if (site.startsWith("ci_hold_peak")) peakRow = r;
    }
    QVERIFY(leakRow >= 0 && peakRow >= 0);
    auto cell = [&](int r, int c) { return view->model()->index(r, c).data(Qt::UserRole).toLongLong(); };
    QCOMPARE(view->model()->index(leakRow, CompareModel::kStatus).data().toString(), QString("gone"));
    QCOMPARE(cell(leakRow, CompareModel::kLeaked), -10000LL);
    QCOMPARE(cell(leakRow, CompareModel::kCount), -10LL);
    QCOMPARE(view->model()->index(peakRow, CompareModel::kStatus).data().toString(), QString("new"));
    QCOMPARE(cell(peakRow, CompareModel::kPeak), 4000000LL);
    QCOMPARE(cell(peakRow, CompareModel::kAllocated), 4000000LL);
    // Sorted by the peak's change, largest growth first: the table's first row is ci_hold_peak.
    QVERIFY(view->table()->model()->index(0, CompareModel::kSite).data().toString().startsWith("ci_hold_peak"));
    // The same sites as the analyzer's diff (what `memledger diff` prints).
    QCOMPARE(view->model()->rowCount(), int(view->diff()->sites.size()));
    // Flame graph of the peak's change: ci_hold_peak +4000000 under main; of the leaks: -10000.
    auto node = [&](const QString& prefix) -> const DiffFlame::Node* {
      for (const auto& n : view->flame()->nodes())
        if (n.name.startsWith(prefix)) return &n;
      return nullptr;
    };
    view->flame()->setDiff(view->diff(), DiffFlame::Metric::Peak);
    QVERIFY(node("ci_hold_peak"));
    QCOMPARE(node("ci_hold_peak")->delta, 4000000LL);
    QVERIFY(node("main") && node("main")->absolute >= 4000000 + 10000 - 64);
    view->flame()->setDiff(view->diff(), DiffFlame::Metric::Leaked);
    QVERIFY(node("ci_leak_block"));
    QCOMPARE(node("ci_leak_block")->delta, -10000LL);
    QVERIFY(!node("ci_hold_peak"));
    QVERIFY(!view->flame()->grab().isNull());
    // CSV export of the table.
    QString csv = tableCsv(*view->model());
    QVERIFY(csv.contains(",gone,"));
  }

  void newerRequestWinsAndCancelIsClean() {
    Document doc;
    doc.open(demo_);
    doc.open(three_);
    QVERIFY(waitRange(doc));
    QCOMPARE(doc.data()->report.phases.size(), size_t(3));  // three_phases, not the demo
    QVERIFY(QTest::qWaitFor([&] { return !doc.busy(); }, 60000));
    doc.setRange(0, 1000000);
    doc.setRange(std::nullopt, std::nullopt);
    QVERIFY(waitRange(doc));
    QVERIFY(!doc.range()->ranged());
    Document cancelled;
    cancelled.open(three_);
    cancelled.cancel();
    QVERIFY(QTest::qWaitFor([&] { return !cancelled.busy(); }, 60000));
    QVERIFY(cancelled.error().isEmpty());
  }

  // With no tree view on screen a new range lets go of the current range's trees before making
  // its own (a tree view keeps them); a tree view shown after a cancelled range has them made again.
  void treesLetGoWhenNoTreeViewIsShown() {
    MainWindow w;
    w.resize(1300, 900);
    w.show();
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(three_);
    QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
    Document* doc = w.document();
    const auto phases = doc->data()->report.phases;
    QCOMPARE(int(phases.size()), 3);
    w.showView("bottom-up");  // the run's trees made again with the bottom-up one
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy() && !doc->range()->bottom_up.nodes.empty(); }, 60000));
    std::shared_ptr<const RangeData> kept = doc->range();
    doc->setRange(phases[0].start_ns, phases[0].end_ns - 1);
    QVERIFY(!kept->top_down.nodes.empty() && !kept->bottom_up.nodes.empty());  // on screen: kept
    QVERIFY(waitRange(*doc));
    w.showView("summary");
    std::shared_ptr<const RangeData> first = doc->range();
    QVERIFY(!first->bottom_up.nodes.empty());
    doc->setRange(phases[1].start_ns, phases[1].end_ns - 1);
    QVERIFY(first->top_down.nodes.empty() && first->bottom_up.nodes.empty());  // gone before the new ones
    QVERIFY(!first->symbols.empty());  // the Summary's "Most allocations" stays
    doc->cancel();
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy(); }, 60000));
    w.showView("bottom-up");
    QVERIFY(QTest::qWaitFor([&] { return !doc->busy() && !doc->range()->bottom_up.nodes.empty(); }, 60000));
    // The first phase again (made again after the cancel), or the second (it came before the cancel).
    const bool second = doc->range()->from_ns == phases[1].start_ns;
    QCOMPARE(programStacks(doc->range()->top_down, an::TreeMetric::Count, {"phase"}),
             (std::set<std::string>{second ? "main;phase;ramp 300" : "main;phase;ramp 100"}));
    auto* view = static_cast<CallTreeView*>(w.view("bottom-up"));
    QVERIFY(QTest::qWaitFor([&] { return view->tree()->model()->rowCount() > 0; }, 10000));
  }

  void badFilesGiveAMessage() {
    QString junk = dir_.filePath("junk.db");
    {
      QFile f(junk);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray(4096, 'x'));
    }
    for (const auto& [path, expect] : std::vector<std::pair<QString, QString>>{
             {junk, "is not a memledger recording"}, {dir_.filePath("missing.db"), "cannot open"}}) {
      MainWindow w;
      w.show();
      QSignalSpy ready(&w, &MainWindow::ready);
      w.openFile(path);
      QVERIFY(QTest::qWaitFor([&] { return ready.count() > 0; }, 60000));
      QVERIFY(w.showingError());
      QVERIFY2(w.message().contains(expect), qPrintable(w.message()));
    }
    // A recording whose recorder never finished (killed, or still writing): shown, and said so.
    QString plain = record("demo_leaky_peaky", false);
    QVERIFY(!plain.isEmpty());
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(plain.toUtf8().constData(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "UPDATE meta SET value = '0' WHERE key = 'complete'", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    Document doc;
    doc.open(plain);
    QVERIFY(waitRange(doc));
    QVERIFY(!doc.data()->report.recording.complete);
    QVERIFY(SummaryView::html(*doc.data(), doc.range().get()).contains("This recording is incomplete"));
  }

  // Text, links and the coloured amounts read on both themes (WCAG: 4.5:1 for text, 3:1 for the
  // curves); a dark, HiDPI screenshot is twice the size and dark where the Summary is.
  void darkThemeAndHiDpi() {
    auto luminance = [](const QColor& c) {
      auto f = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
      return 0.2126 * f(c.redF()) + 0.7152 * f(c.greenF()) + 0.0722 * f(c.blueF());
    };
    auto contrast = [&](const QColor& a, const QColor& b) {
      double x = luminance(a), y = luminance(b);
      return (std::max(x, y) + 0.05) / (std::min(x, y) + 0.05);
    };
    QVERIFY(!isDark(QApplication::palette()));
    QVERIFY(isDark(darkPalette()));
    for (const QPalette& pal : {QApplication::palette(), darkPalette()}) {
      const QColor base = pal.color(QPalette::Base);
      for (const QColor& text : {pal.color(QPalette::Text), pal.color(QPalette::Link), growthColor(pal),
                                 shrinkColor(pal), warningColor(pal)})
        QVERIFY2(contrast(text, base) >= 4.5, qPrintable(text.name() + " on " + base.name()));
      for (const char* series : {"heap", "mmap", "rss"})
        QVERIFY2(contrast(TimelineWidget::seriesColor(series), base) >= 3.0, series);
    }
    QString out = dir_.filePath("dark.png");
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_SCALE_FACTOR", "2");
    p.setProcessEnvironment(env);
    p.start(kBuild + "/bin/memledger-gui", {three_, "--dark", "--screenshot", out, "--view", "summary"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QImage img(out);
    QCOMPARE(img.size(), QSize(2800, 1900));
    // Below the timeline dock, at the Summary's lower right (past its text): the dark base.
    QCOMPARE(img.pixelColor(img.width() - 40, img.height() - 200).name(), darkPalette().color(QPalette::Base).name());
  }

  void screenshotCommandLine() {
    QString out = dir_.filePath("flame.png");
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(kBuild + "/bin/memledger-gui", {three_, "--screenshot", out, "--view", "flamegraph", "--range", "100ms:340ms"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QImage img(out);
    QCOMPARE(img.size(), QSize(1400, 950));
    // Unreadable: exit 2 with the analyzer's one-line message.
    p.start(kBuild + "/bin/memledger-gui", {dir_.filePath("missing.db"), "--screenshot", dir_.filePath("err.png")});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(p.readAll().contains("cannot open"));
    // `memledger gui` runs memledger-gui with the same arguments.
    QString viaCli = dir_.filePath("via-cli.png");
    p.start(kBuild + "/bin/memledger", {"gui", demo_, "--screenshot", viaCli, "--view", "leaks"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(QFile::exists(viaCli));
    p.start(kBuild + "/bin/memledger-gui", {three_, "--screenshot", out, "--view", "nonsense"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 2);
  }
};

QTEST_MAIN(GuiTest)
#include "gui_test.moc"
