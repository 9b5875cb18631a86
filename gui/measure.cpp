#include "gui/measure.h"

#include <sys/resource.h>
#include <time.h>

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
qint64 threadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
qint64 monotonicNs() {  // perf record -k CLOCK_MONOTONIC stamps its samples with this clock
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
// Every thread's: a range's work is mostly on the workers.
qint64 processCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

bool GuiApplication::notify(QObject* receiver, QEvent* event) {
  if (!timing || depth_ > 0) {
    ++depth_;
    bool r = QApplication::notify(receiver, event);
    --depth_;
    return r;
  }
  QElapsedTimer t;
  t.start();
  const qint64 cpu0 = threadCpuNs();
  const int type = int(event->type());  // the event may be gone after the dispatch
  const QString name = receiver ? receiver->metaObject()->className() : "?";
  ++depth_;
  bool r = QApplication::notify(receiver, event);
  --depth_;
  const qint64 cpu = threadCpuNs() - cpu0;
  if (t.nsecsElapsed() > maxDispatchNs) {
    maxDispatchNs = t.nsecsElapsed();
    slowest = QString("%1/%2").arg(name).arg(type);
  }
  static const double logMs = qEnvironmentVariableIntValue("MEMLEDGER_GUI_EVENTS");
  if (logMs > 0 && cpu / 1e6 >= logMs)
    std::fprintf(stderr, "memledger-gui: event %s/%d %.1f ms cpu, %.1f ms wall, ended at %.6f s (CLOCK_MONOTONIC)\n",
                 qPrintable(name), type, cpu / 1e6, t.nsecsElapsed() / 1e6, monotonicNs() / 1e9);
  if (cpu > maxDispatchCpuNs) {
    maxDispatchCpuNs = cpu;
    slowestCpu = QString("%1/%2").arg(name).arg(type);
  }
  return r;
}

namespace {
// Runs the event loop until `done` or 300 s; false on timeout.
template <class F>
bool waitFor(F done) {
  QElapsedTimer t;
  t.start();
  while (!done()) {
    if (t.elapsed() > 300000) return false;
    // Blocks until an event comes (the 1 ms ticker at least). The overload with a time limit
    // drops WaitForMoreEvents and returns at once when nothing is pending: the loop then spun,
    // and on a 2-core machine took a core from the workers it was timing.
    QApplication::processEvents(QEventLoop::WaitForMoreEvents);
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
  GuiApplication::timing = true;

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
  double rangeMs[2] = {0, 0}, rangeCpuMs[2] = {0, 0};
  int i = 0;
  for (auto [a, b] : {std::pair{end * 45 / 100, end * 55 / 100}, std::pair{end / 4, end * 3 / 4}}) {
    int before = ranges;
    QElapsedTimer r;
    r.start();
    const qint64 cpu0 = processCpuNs();
    window.timeline()->setSelection(a, b);
    doc->setRange(a, b);
    if (!waitFor([&] { return ranges > before || failed; }) || failed) return 2;
    window.repaint();  // every view shown with the range's data (timed as one event below)
    rangeCpuMs[i] = (processCpuNs() - cpu0) / 1e6;
    rangeMs[i++] = r.nsecsElapsed() / 1e6;
  }
  // Every view shown in turn after the last range (each takes the range then, and paints): the
  // longest, in wall and CPU time.
  double showMs = 0, showCpuMs = 0;
  QString slowestView;
  for (const char* v : {"flamegraph", "bottom-up", "top-down", "caller-callee", "leaks", "sizes", "summary"}) {
    QElapsedTimer s;
    s.start();
    const qint64 cpu0 = threadCpuNs();
    window.showView(v);
    window.repaint();
    double ms = s.nsecsElapsed() / 1e6, cpuMs = (threadCpuNs() - cpu0) / 1e6;
    if (doc->busy()) {
      // The view asked for a tree the range did not make (bottom-up): it comes before the next
      // view, and that repaint is timed too (the memory is then that of every view seen).
      if (!waitFor([&] { return !doc->busy() || failed; }) || failed) return 2;
      s.restart();
      const qint64 again = threadCpuNs();
      window.repaint();
      ms = std::max(ms, s.nsecsElapsed() / 1e6);
      cpuMs = std::max(cpuMs, (threadCpuNs() - again) / 1e6);
    }
    if (qEnvironmentVariableIsSet("MEMLEDGER_GUI_TIMING"))
      std::fprintf(stderr, "memledger-gui: show %s %.1f ms (cpu %.1f)\n", v, ms, cpuMs);
    if (cpuMs > showCpuMs) slowestView = v;
    showMs = std::max(showMs, ms);
    showCpuMs = std::max(showCpuMs, cpuMs);
  }
  // One paint of the timeline alone at the whole run and zoomed to a tenth: its share of a frame.
  double paintMs = 0;
  for (auto [a, b] : {std::pair<int64_t, int64_t>{0, end + 1}, std::pair<int64_t, int64_t>{end / 3, end / 3 + end / 10}}) {
    window.timeline()->setView(a, b);
    QElapsedTimer p;
    p.start();
    window.timeline()->repaint();
    paintMs = std::max(paintMs, p.nsecsElapsed() / 1e6);
  }
  ticker.stop();
  GuiApplication::timing = false;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  const double rssMiB = double(ru.ru_maxrss) / 1024.0;
  const double fileMiB = double(QFileInfo(file).size()) / (1024.0 * 1024.0);
  std::printf(
      "interactive_s=%.3f trees_s=%.3f range_10pct_ms=%.1f range_50pct_ms=%.1f range_10pct_cpu_ms=%.1f range_50pct_cpu_ms=%.1f gui_max_event_ms=%.1f gui_max_timer_gap_ms=%.1f "
      "slowest_event=%s gui_max_event_cpu_ms=%.1f slowest_cpu_event=%s view_show_ms=%.1f view_show_cpu_ms=%.1f slowest_view=%s timeline_paint_ms=%.1f peak_rss_mib=%.1f file_mib=%.1f allocations=%lld sites=%zu\n",
      interactive, trees, rangeMs[0], rangeMs[1], rangeCpuMs[0], rangeCpuMs[1], GuiApplication::maxDispatchNs / 1e6, std::max<qint64>(0, maxGap - 1000000) / 1e6, qPrintable(GuiApplication::slowest),
      GuiApplication::maxDispatchCpuNs / 1e6, qPrintable(GuiApplication::slowestCpu), showMs, showCpuMs,
      qPrintable(slowestView), paintMs, rssMiB, fileMiB,
      static_cast<long long>(doc->data()->report.totals.allocations), doc->range()->site_count);
  return 0;
}

}  // namespace memledger::gui
