#include "gui/measure.h"

#include <sys/resource.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <cstdio>

#include "gui/main_window.h"
#include "gui/timeline_widget.h"

namespace memledger::gui {

namespace {
// Runs the event loop until `done` or 300 s; false on timeout.
template <class F>
bool waitFor(F done) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > 300000) return false;
    QApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
  }
  return true;
}
}  // namespace

int measureWindow(MainWindow& window, const QString& file) {
  // The GUI thread's longest block: the largest gap between ticks of a 1 ms timer, minus 1 ms.
  QElapsedTimer clock;
  clock.start();
  qint64 lastTick = clock.nsecsElapsed(), maxGap = 0;
  QTimer ticker;
  ticker.setTimerType(Qt::PreciseTimer);
  QObject::connect(&ticker, &QTimer::timeout, [&] {
    qint64 now = clock.nsecsElapsed();
    maxGap = std::max(maxGap, now - lastTick);
    lastTick = now;
  });
  ticker.start(1);

  Document* doc = window.document();
  bool opened = false, failed = false;
  int ranges = 0;
  QObject::connect(doc, &Document::opened, [&] { opened = true; });
  QObject::connect(doc, &Document::failed, [&] { failed = true; });
  QObject::connect(doc, &Document::rangeChanged, [&] { ++ranges; });
  QElapsedTimer t;
  t.start();
  window.openFile(file);
  if (!waitFor([&] { return opened || failed; }) || failed) {
    std::fprintf(stderr, "memledger-gui: %s\n", qPrintable(doc->error()));
    return 2;
  }
  window.timeline()->repaint();  // the timeline drawn: interactive
  double interactive = t.nsecsElapsed() / 1e9;
  if (!waitFor([&] { return ranges >= 1 || failed; }) || failed) return 2;
  double trees = t.nsecsElapsed() / 1e9;

  const int64_t end = doc->data()->end_ns;
  double rangeMs[2] = {0, 0};
  int i = 0;
  for (auto [a, b] : {std::pair{end * 45 / 100, end * 55 / 100}, std::pair{end / 4, end * 3 / 4}}) {
    int before = ranges;
    QElapsedTimer r;
    r.start();
    window.timeline()->setSelection(a, b);
    doc->setRange(a, b);
    if (!waitFor([&] { return ranges > before || failed; }) || failed) return 2;
    window.repaint();  // every view shown with the range's data
    rangeMs[i++] = r.nsecsElapsed() / 1e6;
  }
  ticker.stop();
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double rssMiB = double(ru.ru_maxrss) / 1024.0;
  const double fileMiB = double(QFileInfo(file).size()) / (1024.0 * 1024.0);
  std::printf(
      "interactive_s=%.3f trees_s=%.3f range_10pct_ms=%.1f range_50pct_ms=%.1f gui_max_block_ms=%.1f "
      "peak_rss_mib=%.1f file_mib=%.1f allocations=%lld sites=%zu\n",
      interactive, trees, rangeMs[0], rangeMs[1], std::max<qint64>(0, maxGap - 1000000) / 1e6, rssMiB, fileMiB,
      static_cast<long long>(doc->data()->report.totals.allocations), doc->range()->costs.size());
  return 0;
}

}  // namespace memledger::gui
