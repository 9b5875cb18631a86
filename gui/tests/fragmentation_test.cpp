// The Fragmentation view on real recordings (QT_QPA_PLATFORM=offscreen): samples/heap_holes, whose
// program prints the addresses it got, recorded with every block and with the default rows;
// samples/fragmenting (200,000 blocks); samples/pool_arena (a reserved pool); the fake caching
// device allocator of tests/cupti; and /bin/true (no rows at all). What the view shows is checked:
// the blocks, holes and numbers of an instant, the colours of holes and unknown gaps under their
// addresses, a click giving the right site's stack (and Copy stack), the slider, the step buttons
// and keys changing the layout, the message of a recording without rows for freed blocks, the
// export and the --screenshot command line.
#include <QApplication>
#include <QClipboard>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <map>

#include "gui/fragmentation_view.h"
#include "gui/main_window.h"

namespace an = memledger::analyzer;
using namespace memledger::gui;

namespace {
const QString kBuild = MEMLEDGER_BINARY_DIR;
constexpr int64_t kMs = 1000000;

// How far two colours are apart (per channel, the largest difference).
int distance(QColor a, QColor b) {
  return std::max({std::abs(a.red() - b.red()), std::abs(a.green() - b.green()), std::abs(a.blue() - b.blue())});
}
}  // namespace

class FragmentationTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString holes_, holesLeaks_;
  // heap_holes' "small I 0xADDR" lines, of the recording with every block and of the default one.
  std::map<QString, std::map<int, uint64_t>> printed_, printedLeaks_;
  static void parse(const QString& err, std::map<QString, std::map<int, uint64_t>>& out) {
    for (const QString& line : err.split('\n')) {
      const QStringList f = line.split(' ');
      if (f.size() == 3 && (f[0] == "small" || f[0] == "large")) out[f[0]][f[1].toInt()] = f[2].toULongLong(nullptr, 16);
    }
  }

  // `memledger record OPTIONS -- PROGRAM` (a sample's name, or a path); the program's stderr in *err.
  QString record(const QString& program, const QStringList& options, const QString& name, QString* err = nullptr) {
    const QString out = dir_.filePath(name + ".db");
    QProcess p;
    p.start(kBuild + "/bin/memledger", QStringList{"record", "-o", out, "--force"} + options + QStringList{"--"} +
                                           QStringList{program.startsWith('/') ? program : kBuild + "/samples/" + program});
    if (!p.waitForFinished(180000) || p.exitCode() != 0) return {};
    if (err) *err = QString::fromLocal8Bit(p.readAllStandardError());
    return out;
  }

  // A window with `path` open and the Fragmentation view shown and settled.
  static bool openAt(MainWindow& w, const QString& path, const QString& space = {}) {
    w.resize(1400, 950);
    w.show();
    w.activateWindow();  // the view's keys are shortcuts of the active window
    if (!QTest::qWaitForWindowActive(&w)) return false;
    if (!space.isEmpty()) w.fragmentationView()->setPreferredSpace(space);
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFile(path);
    if (!QTest::qWaitFor([&] { return ready.count() > 0; }, 120000)) return false;
    w.showView("fragmentation");
    return settle(w.fragmentationView());
  }
  static bool settle(FragmentationView* v) { return QTest::qWaitFor([v] { return v->isSettled(); }, 120000); }

  static int64_t marker(const MainWindow& w, const std::string& name) {
    for (const an::Marker& m : w.document()->data()->markers)
      if (m.name == name) return m.t_ns;
    return -1;
  }
  static QColor pixel(HeapMapWidget* map, uint64_t address) {
    return map->grab().toImage().pixelColor(map->pointOf(address).toPoint());
  }

 private slots:
  void initTestCase() {
    if (!QFile::exists(kBuild + "/bin/memledger") || !QFile::exists(kBuild + "/samples/heap_holes"))
      QSKIP("needs build/bin/memledger and build/samples (build the memledger and memledger_samples targets)");
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, dir_.filePath("settings"));
    QString err;
    holes_ = record("heap_holes", {"--no-fold"}, "heap_holes", &err);
    QVERIFY2(!holes_.isEmpty(), "recording heap_holes failed");
    parse(err, printed_);
    QCOMPARE(printed_["small"].size(), size_t(64));
    holesLeaks_ = record("heap_holes", {}, "heap_holes_leaks", &err);
    QVERIFY(!holesLeaks_.isEmpty());
    parse(err, printedLeaks_);
    QCOMPARE(printedLeaks_["small"].size(), size_t(64));
  }

  // Every block recorded: the 32 blocks and 31 holes of 4032 B shown first, exact, holes red under
  // their addresses, a click on a block giving make_blocks' stack.
  void holesShownAndClicked() {
    MainWindow w;
    QVERIFY(openAt(w, holes_));
    FragmentationView* v = w.fragmentationView();
    const auto& small = printed_["small"];
    QVERIFY(v->regionBox()->currentText().startsWith("heap 0x" + QString::number(small.at(0), 16)));
    QVERIFY(v->regionBox()->currentText().endsWith("72 blocks)"));
    // Shown first: the last larger block still live (analyzer_heap_map_test.cpp), with its stack.
    QCOMPARE(v->layout()->applied, v->history()->events.size() - 1);
    QCOMPARE(v->layout()->live.size(), size_t(33));
    QVERIFY(QTest::qWaitFor([v] { return v->selectedStack().startsWith("make_larger ("); }, 10000));
    // After the last event: the 32 blocks and their 31 holes.
    v->showEvents(v->history()->events.size());
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(32));
    QCOMPARE(v->layout()->holes.size(), size_t(31));
    QVERIFY2(v->statistics().contains("live 125.0 KiB in 32 blocks"), qPrintable(v->statistics()));
    QVERIFY2(v->statistics().contains("free 122.1 KiB (0.0% internal) in 31 holes, largest 3.94 KiB"), qPrintable(v->statistics()));
    QVERIFY2(v->message().contains("Exact at this instant"), qPrintable(v->message()));
    QVERIFY(v->message().contains("Every block has a row"));

    HeapMapWidget* map = v->map();
    // A hole (the freed block 2) is red; a live block has its site's colour.
    QVERIFY(distance(pixel(map, small.at(2) + 2000), HeapMapWidget::holeColour()) < 8);
    const an::HeapHistory& h = *v->history();
    const an::MapBlock& five = h.blocks[*h.blockAt(*v->layout(), small.at(5), small.at(5) + 1)];
    QVERIFY(distance(pixel(map, small.at(5) + 2000), HeapMapWidget::siteColour(five.stack_id)) < 8);

    QTest::mouseClick(map, Qt::LeftButton, {}, map->pointOf(small.at(5) + 2000).toPoint());
    QVERIFY(map->selected());
    QCOMPARE(h.blocks[*map->selected()].address, small.at(5));
    QVERIFY2(QTest::qWaitFor([v] { return v->selectedStack().startsWith("make_blocks (heap_holes.c:"); }, 10000),
             qPrintable(v->selectedStack()));
    QVERIFY(v->selectedStack().contains("\nmain (heap_holes.c:"));
    QVERIFY2(v->details().contains("4,000 B at 0x" + QString::number(small.at(5), 16)), qPrintable(v->details()));
    QVERIFY(v->details().contains("never freed"));
    QVERIFY(v->copyButton()->isEnabled());
    v->copyButton()->click();
    QCOMPARE(QApplication::clipboard()->text(), v->selectedStack());
    // A click in a hole selects nothing.
    QTest::mouseClick(map, Qt::LeftButton, {}, map->pointOf(small.at(2) + 2000).toPoint());
    QVERIFY(!map->selected());

    // Colour by age: the same block, another colour.
    const QColor site = pixel(map, small.at(5) + 2000);
    v->colourBox()->setCurrentIndex(1);
    QVERIFY(distance(pixel(map, small.at(5) + 2000), site) > 20);
    QVERIFY(distance(pixel(map, small.at(2) + 2000), HeapMapWidget::holeColour()) < 8);

    QVERIFY(w.exportView(dir_.filePath("frag.png")));
    QVERIFY(!QImage(dir_.filePath("frag.png")).isNull());
    QVERIFY(w.exportView(dir_.filePath("frag.svg")));
    QFile svg(dir_.filePath("frag.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly) && svg.readAll().contains("<svg"));
  }

  // The time slider and the step buttons and keys change the layout.
  void sliderAndSteps() {
    MainWindow w;
    QVERIFY(openAt(w, holes_));
    FragmentationView* v = w.fragmentationView();
    const size_t events = v->history()->events.size();
    QCOMPARE(events, size_t(72 * 2 - 32));

    v->showTime(marker(w, "allocated") + 10 * kMs);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(64));
    QVERIFY(v->layout()->holes.empty());
    QCOMPARE(v->slider()->value(), v->tickOf(marker(w, "allocated") + 10 * kMs));
    const size_t at = v->layout()->applied;
    QCOMPARE(at, size_t(64));

    v->step(1);  // punch's first free: block 0, before every live block
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->applied, at + 1);
    QCOMPARE(v->layout()->live.size(), size_t(63));
    QVERIFY2(v->eventText().contains("free of the 3.91 KiB at 0x" + QString::number(printed_["small"].at(0), 16)),
             qPrintable(v->eventText()));
    QVERIFY(v->eventText().contains("make_blocks"));
    QVERIFY(v->map()->selected());  // stepping selects the event's block
    v->step(1);  // block 2: the first hole
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->holes.size(), size_t(1));
    v->step(-2);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(64));

    // The slider, dragged across the run: the last position wins (the others are dropped).
    for (int tick = 0; tick <= 10000; tick += 250) v->slider()->setValue(tick);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->applied, events);
    v->slider()->setValue(v->tickOf(marker(w, "larger") + 10 * kMs));
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(40));

    // Keys: Home, Right, End, Left.
    v->map()->setFocus();
    QTest::keyClick(v->map(), Qt::Key_Home);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->applied, size_t(0));
    QVERIFY(v->layout()->live.empty());
    QTest::keyClick(v->map(), Qt::Key_Right);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(1));
    QTest::keyClick(v->map(), Qt::Key_End);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->applied, events);
    QTest::keyClick(v->map(), Qt::Key_Left);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->applied, events - 1);
  }

  // The default rows (leaks only): the view says what it can show, exact at the end; mid-run it
  // names the bytes without a row and draws the gaps as unknown, not as holes.
  void leakRowsOnlySayWhatTheyCannotShow() {
    MainWindow w;
    QVERIFY(openAt(w, holesLeaks_));
    FragmentationView* v = w.fragmentationView();
    QVERIFY2(v->message().contains("keeps rows only for the blocks live at the end of their process"), qPrintable(v->message()));
    QVERIFY(v->message().contains("memledger record --no-fold"));
    QVERIFY(v->message().contains("Exact at this instant"));  // shown first: the process's end
    QCOMPARE(v->layout()->holes.size(), size_t(31));

    v->showTime(marker(w, "allocated") + 10 * kMs);
    QVERIFY(settle(v));
    QVERIFY2(v->message().contains("Not exact at this instant</b>: 125.0 KiB of heap live then have no row"),
             qPrintable(v->message()));
    QVERIFY(v->statistics().contains("31 gaps"));
    const QColor gap = pixel(v->map(), printedLeaks_["small"].at(2) + 2000);
    QVERIFY(distance(gap, v->map()->unknownColour()) < 8);
    QVERIFY(distance(gap, HeapMapWidget::holeColour()) > 60);
  }

  // 200,000 blocks: the map, its numbers, and the time one full repaint takes (printed, not
  // asserted: tests are not timed).
  void fragmentingEveryBlock() {
    const QString path = record("fragmenting", {"--no-fold"}, "fragmenting");
    QVERIFY(!path.isEmpty());
    MainWindow w;
    QElapsedTimer t;
    t.start();
    QVERIFY(openAt(w, path));
    const qint64 shown = t.elapsed();
    FragmentationView* v = w.fragmentationView();
    QCOMPARE(v->history()->blocks.size(), size_t(300001));
    QVERIFY2(v->statistics().contains("in 99,999 holes, largest 1016 B"), qPrintable(v->statistics()));
    QVERIFY(v->layout()->exact);
    v->map()->grab();
    auto drawn = [&](HeapMapWidget::Colouring c) {  // drawn again from the layout
      v->map()->setColouring(c == HeapMapWidget::Colouring::Age ? HeapMapWidget::Colouring::Site : HeapMapWidget::Colouring::Age);
      v->map()->setColouring(c);
      t.restart();
      v->map()->grab();
      return t.elapsed();
    };
    const qint64 site = drawn(HeapMapWidget::Colouring::Site), age = drawn(HeapMapWidget::Colouring::Age);
    qInfo("fragmenting --no-fold: map shown %lld ms after open; the map drawn from its layout in %lld ms by site, "
          "%lld ms by age", shown, site, age);

    // Cancel while the range is read: nothing half-read is shown, and choosing it again reads it.
    const int index = v->regionBox()->currentData().toInt();
    v->showRegion(index);
    QVERIFY(!v->isSettled());
    QPushButton* cancel = v->findChild<QPushButton*>("cancelRead");
    QVERIFY(cancel && cancel->isVisible());
    cancel->click();
    QVERIFY(settle(v));
    QVERIFY2(v->message().startsWith("Cancelled"), qPrintable(v->message()));
    QVERIFY(!v->history());
    QVERIFY(!cancel->isVisible());
    v->showRegion(index);
    QVERIFY(settle(v));
    QCOMPARE(v->history()->blocks.size(), size_t(300001));
  }

  // A reserved pool: its free ends count as free; stepped to its half-free state.
  void poolReservedRange() {
    const QString path = record("pool_arena", {"--no-fold"}, "pool_arena");
    QVERIFY(!path.isEmpty());
    MainWindow w;
    QVERIFY(openAt(w, path, "pool:tensors"));
    FragmentationView* v = w.fragmentationView();
    QVERIFY2(v->regionBox()->currentText().startsWith("pool:tensors 0x"), qPrintable(v->regionBox()->currentText()));
    v->showEvents(24);
    QVERIFY(settle(v));
    QVERIFY2(v->statistics().contains("live 32.0 MiB in 8 blocks"), qPrintable(v->statistics()));
    QVERIFY(v->statistics().contains("in 1 hole, largest 32.0 MiB"));
    QVERIFY(v->statistics().contains("free / span 50.0%"));
    QVERIFY(v->statistics().contains("the pool's reserved range"));
  }

  // Device memory through the CUDA collector (the fake driver): segment0 of the caching allocator,
  // stepped from empty.
  void deviceSegmentStepped() {
    const QString app = kBuild + "/tests/fakecupti/fake_caching_app";
    if (!QFile::exists(app)) QSKIP("needs the CUDA collector's fake caching app (built with CUPTI's headers)");
    const QString path = record(app, {"--no-fold"}, "caching");
    QVERIFY(!path.isEmpty());
    MainWindow w;
    QVERIFY(openAt(w, path, "pool:segment0"));
    FragmentationView* v = w.fragmentationView();
    QVERIFY2(v->statistics().contains("free 10.0 MiB (0.0% internal) in 4 holes, largest 4.00 MiB"), qPrintable(v->statistics()));
    QVERIFY(v->statistics().contains("external fragmentation 60.0%"));
    v->showEvents(0);
    QVERIFY(settle(v));
    QVERIFY(v->layout()->live.empty());
    QVERIFY(v->statistics().contains("in 1 hole, largest 20.0 MiB"));
    for (int i = 0; i < 3; ++i) {
      v->step(1);
      QVERIFY(settle(v));
    }
    QCOMPARE(v->layout()->live.size(), size_t(3));
    QVERIFY2(v->eventText().startsWith("Last event: pool_alloc of 2.00 MiB at 0x7f5000400000"), qPrintable(v->eventText()));
    // The device's own range: the two cudaMalloc'ed segments.
    int device = -1;
    for (size_t i = 0; i < v->regions().size(); ++i)
      if (v->regions()[i].space == "device:0") device = int(i);
    QVERIFY(device >= 0);
    v->showRegion(device);
    QVERIFY(settle(v));
    QCOMPARE(v->layout()->live.size(), size_t(2));
    QVERIFY(v->statistics().contains("live 28.0 MiB in 2 blocks"));
  }

  // A recording without any row: the view says why it shows nothing.
  void noRowsNoMap() {
    const QString path = record("/bin/true", {}, "true");
    QVERIFY(!path.isEmpty());
    MainWindow w;
    QVERIFY(openAt(w, path));
    FragmentationView* v = w.fragmentationView();
    QVERIFY(v->regions().empty());
    // Its key: Ctrl+0 (the tenth view).
    w.showView("summary");
    QVERIFY(!v->isVisible());
    QTest::keyClick(&w, Qt::Key_0, Qt::ControlModifier);
    QVERIFY(v->isVisible());
    QVERIFY2(v->message().contains("no allocation rows"), qPrintable(v->message()));
    QVERIFY(v->message().contains("--no-fold"));
  }

  void screenshotCommandLine() {
    const QString out = dir_.filePath("shot.png");
    QProcess p;
    p.start(kBuild + "/bin/memledger-gui", {holes_, "--screenshot", out, "--view", "fragmentation"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    QImage shot(out);
    QVERIFY(!shot.isNull());
    QCOMPARE(shot.width(), 1400);
  }
};

QTEST_MAIN(FragmentationTest)
#include "fragmentation_test.moc"
