// memledger-gui [FILE] [--compare FILE2] [--screenshot OUT.png [--view NAME] [--range A:B]] [--dark]
// With --screenshot it opens FILE headless-capable (QT_QPA_PLATFORM=offscreen), waits for the
// recording and the range's trees, writes the view as PNG and exits: 0 written, 2 bad usage or
// an unreadable recording (its one-line message on stderr; the window showing it is still written).
#include <QApplication>
#include <QDir>
#include <QSettings>
#include <QTimer>

#include <malloc.h>

#include <cstdio>
#include <functional>

#include "analyzer/format.h"
#include "gui/charts_view.h"
#include "gui/compare_view.h"
#include "gui/fragmentation_view.h"
#include "gui/main_window.h"
#include "gui/measure.h"
#include "gui/theme.h"
#include "gui/timeline_widget.h"

namespace {
const char* kUsage =
    "usage: memledger-gui [FILE] [--compare FILE2] [--screenshot OUT.png [--view NAME] [--range A:B]]\n"
    "       memledger-gui FILE --measure   (bench/gui_speed.sh: open, range and GUI-thread times)\n"
    "       [--space heap|mmap|device:N|...|all]   the space the trees show (default heap), and the\n"
    "                                             space of the range the fragmentation map shows first\n"
    "       [--at TIME]          the trees' peak column is what was live at TIME (\"1.5s\")\n"
    "       [--show a|b|diff]    with --compare: what the per-site views show (default diff)\n"
    "       [--dark]   a dark theme (also MEMLEDGER_GUI_THEME=dark)\n"
    "       [--chart consumed|allocations|allocated|temporary] [--group function|site]   the Charts view\n"
    "  NAME: summary, timeline, flamegraph, charts, bottom-up, top-down, caller-callee, leaks, sizes,\n"
    "        suggestions, compare (FILE2 against FILE, with --compare), fragmentation\n"
    "  A:B: a time range as in `memledger report --time` (\"1s:2.5s\", \"100ms:\")\n";
}

int main(int argc, char** argv) {
  // A range of a big recording makes and drops vectors of tens of MB (a cost per site and per tree
  // node: a PyTorch run has 500,000 sites, 10^6 nodes a tree). glibc maps those and returns them
  // on free, or trims them off the heap's top, so each range faulted them in again: a quarter of
  // a range's CPU on torch_mlp (its trees 68 -> 36 ms, sizes 50 -> 28-40 ms). Kept in the process
  // instead, at a cost in peak RSS (torch_mlp: 1.21 -> 1.34-1.36 GiB: what open freed is reused,
  // not returned).
  // One arena for every thread: a range's jobs run on pool threads and threads of their own, each
  // of which glibc gave an arena; what one range freed in one arena was no use to the next
  // range's thread in another, so each range faulted in fresh memory and every arena kept its
  // own high-water mark. Branch guimem, torch_mlp: peak RSS 1100 -> 855-865 MiB, a 50% range
  // about 330 -> 270 ms CPU (load 2.5-3); the trees not slower. With big blocks mapped again
  // (M_MMAP_THRESHOLD 16 MiB, M_TRIM_THRESHOLD 64 MiB) it was 793 MiB, at 300-330 ms CPU.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // No fast bins: in the one arena, the small blocks a worker freed (a previous range's trees)
  // sat in fast bins until the next large malloc anywhere merged them all, often on the GUI
  // thread: malloc_consolidate was 11% of its samples on a PyTorch run and 5 ms of one 14 ms
  // repaint. Without them a free merges its block at once, on the thread that frees it (the
  // per-thread tcache still serves small churn); the process's malloc+free share 1.9 -> 1.6%.
  mallopt(M_MXFAST, 0);
  memledger::gui::GuiApplication app(argc, argv);
  QApplication::setOrganizationName("memledger");
  QApplication::setApplicationName("memledger-gui");
  QStringList args = QApplication::arguments().mid(1);
  QString file, screenshot, viewName = "summary", range, space, compare, at, show = "diff", chart, group;
  bool spaceGiven = false;
  bool measure = false;
  bool dark = qgetenv("MEMLEDGER_GUI_THEME") == "dark";
  for (int i = 0; i < args.size(); ++i) {
    const QString& a = args[i];
    auto value = [&](QString* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--screenshot") {
      if (!value(&screenshot)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--view") {
      if (!value(&viewName)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--range") {
      if (!value(&range)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--space") {
      if (!value(&space)) return std::fputs(kUsage, stderr), 2;
      spaceGiven = true;
    } else if (a == "--dark") {
      dark = true;
    } else if (a == "--at") {
      if (!value(&at)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--show") {
      if (!value(&show)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--chart") {
      if (!value(&chart)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--group") {
      if (!value(&group)) return std::fputs(kUsage, stderr), 2;
    } else if (a == "--measure") {
      measure = true;
    } else if (a == "--compare") {
      if (!value(&compare)) return std::fputs(kUsage, stderr), 2;
    } else if (a.startsWith("-")) {
      std::fprintf(stderr, "memledger-gui: unknown option '%s'\n%s", qPrintable(a), kUsage);
      return 2;
    } else if (file.isEmpty()) {
      file = a;
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  if (dark) memledger::gui::applyDarkTheme(app);
  using memledger::gui::MainWindow;
  if ((!screenshot.isEmpty() && (file.isEmpty() || !MainWindow::viewNames().contains(viewName))) ||
      (!compare.isEmpty() && file.isEmpty())) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  namespace an = memledger::analyzer;
  using memledger::gui::Show;
  std::optional<int64_t> liveAt;
  if (!at.isEmpty() && !(liveAt = an::parseDuration(at.toStdString()))) {
    std::fprintf(stderr, "memledger-gui: bad time '%s' (e.g. 1.5s)\n", qPrintable(at));
    return 2;
  }
  const std::optional<an::ChartKind> chartKind = an::parseChartKind(chart.isEmpty() ? "consumed" : chart.toStdString());
  if (!chartKind || (!group.isEmpty() && group != "function" && group != "site") ||
      (show != "a" && show != "b" && show != "diff")) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Show showWhat = show == "a" ? Show::A : show == "b" ? Show::B : Show::Diff;
  std::optional<memledger::analyzer::TimeRange> timeRange;
  if (!range.isEmpty()) {
    timeRange = memledger::analyzer::parseTimeRange(range.toStdString());
    if (!timeRange) {
      std::fprintf(stderr, "memledger-gui: bad time range '%s' (A:B, e.g. 1s:2.5s)\n", qPrintable(range));
      return 2;
    }
  }
  if (!screenshot.isEmpty() || measure) {
    // A screenshot or a measurement neither reads nor changes the user's saved layout.
    QSettings::setDefaultFormat(QSettings::IniFormat);
    QSettings::setPath(QSettings::IniFormat, QSettings::UserScope, QDir::tempPath() + "/memledger-gui-screenshot");
  }
  MainWindow window;
  if (!screenshot.isEmpty()) window.resize(1400, 950);
  window.show();
  if (measure) {
    if (file.isEmpty()) return std::fputs(kUsage, stderr), 2;
    window.resize(1400, 950);
    return memledger::gui::measureWindow(window, file);
  }
  if (spaceGiven) {
    window.document()->setSpace(space == "all" ? QString() : space);
    window.fragmentationView()->setPreferredSpace(space);
  }
  if (!file.isEmpty()) window.openFile(file);
  if (screenshot.isEmpty()) return app.exec();

  // The shot is taken once every step asked for is shown: the range or the live-at time, the
  // comparison (its table, and B or B − A in the per-site views), the charts.
  window.chartsView()->setKind(*chartKind);
  if (group == "site") window.chartsView()->setGroup(an::ChartGroup::Site);
  bool rangeApplied = !timeRange, atApplied = !liveAt;
  bool compareStarted = compare.isEmpty(), compared = compare.isEmpty(), compareOpened = compare.isEmpty();
  bool showApplied = compare.isEmpty(), shooting = false;
  int status = 0;
  std::function<void()> grab = [&] {
    QTimer::singleShot(50, &window, [&] {
      QWidget* target = viewName == "timeline" ? window.view("timeline") : static_cast<QWidget*>(&window);
      if (!target->grab().save(screenshot)) {
        std::fprintf(stderr, "memledger-gui: cannot write '%s'\n", qPrintable(screenshot));
        status = 2;
      }
      if (status == 2 && !window.document()->error().isEmpty())
        std::fprintf(stderr, "%s\n", qPrintable(window.document()->error()));
      if (!window.compareView()->error().isEmpty()) {
        std::fprintf(stderr, "memledger-gui: %s\n", qPrintable(window.compareView()->error()));
        status = 2;
      }
      app.exit(status);
    });
  };
  std::function<void()> shoot = [&] {
    if (shooting) return;
    shooting = true;
    window.showView(viewName);
    // A view whose trees the range did not make (the bottom-up tree) has them made now: the shot
    // waits for them.
    if (window.document()->busy() && !status) {
      QObject::connect(&window, &MainWindow::ready, &window, [&] { grab(); }, Qt::SingleShotConnection);
      return;
    }
    // The fragmentation map reads its ranges when first shown: the shot waits for its layout.
    if (auto* frag = window.fragmentationView(); viewName == "fragmentation" && !frag->isSettled() && !status) {
      QObject::connect(frag, &memledger::gui::FragmentationView::settled, &window, [&] { grab(); },
                       Qt::SingleShotConnection);
      return;
    }
    // The charts are asked for when their view shows: the shot waits for them.
    if (viewName == "charts" && !status && window.document()->data()) {
      QObject::connect(window.document(), &memledger::gui::Document::chartsChanged, &window, [&] { grab(); });
      window.chartsView()->requestNow();
      return;
    }
    grab();
  };
  // The next step once the document is idle and every view shows its range.
  std::function<void()> next = [&] {
    if (window.showingError()) status = 2;
    if (status) return shoot();
    if (window.document()->busy()) return;  // its ready() follows
    if (!rangeApplied) {
      rangeApplied = true;
      window.timeline()->setSelection(timeRange->from_ns, timeRange->to_ns);
      window.document()->setRange(timeRange->from_ns, timeRange->to_ns);
      return;
    }
    if (!atApplied) {
      atApplied = true;
      window.showLiveAt(liveAt);
      return;
    }
    if (!compareStarted) {
      compareStarted = true;
      window.compareWith(compare);
      return;
    }
    if (!compared || !compareOpened) return;
    if (!showApplied) {
      showApplied = true;
      if (window.document()->show() != showWhat) {
        window.setShow(showWhat);
        return;
      }
    }
    shoot();
  };
  QObject::connect(window.compareView(), &memledger::gui::CompareView::compared, &window, [&] {
    compared = true;
    if (!window.compareView()->error().isEmpty()) status = 2;
    next();
  });
  QObject::connect(window.document(), &memledger::gui::Document::compareFailed, &window, [&] {
    status = 2;
    shoot();
  });
  QObject::connect(window.document(), &memledger::gui::Document::compareOpened, &window, [&] { compareOpened = true; });
  QObject::connect(&window, &MainWindow::ready, &window, [&] { next(); });
  QTimer::singleShot(120000, &app, [&] {
    std::fputs("memledger-gui: timed out waiting for the recording\n", stderr);
    app.exit(2);
  });
  return app.exec();
}
