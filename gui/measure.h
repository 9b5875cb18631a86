// `memledger-gui FILE --measure`: the figures of bench/gui_speed.sh, measured in the real window
// (offscreen): seconds from start to an interactive Summary+Timeline and to the call trees, the
// time of range updates (the middle tenth and the middle half of the run, selected as a user
// does; with the CPU time of all threads meanwhile), the longest the GUI thread was blocked in
// those steps (a 1 ms timer's late ticks, which include painting), and the process's peak RSS
// against the file's size. One "key=value" line.
#pragma once

#include <QApplication>
#include <QString>

namespace memledger::gui {

// The application, timing its outermost event dispatches when `timing` is set: the longest is
// how long the GUI thread was busy with one event (a paint, a queued result, a mouse event).
class GuiApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* event) override;
  static inline bool timing = false;
  static inline qint64 maxDispatchNs = 0;
  static inline QString slowest;  // "ClassName/event type" of the longest dispatch
  // The same in the GUI thread's own CPU time: on a loaded machine a dispatch's wall time also
  // counts the time other processes had the core; its CPU time is the work it did.
  static inline qint64 maxDispatchCpuNs = 0;
  static inline QString slowestCpu;

 private:
  int depth_ = 0;
};

class MainWindow;
int measureWindow(MainWindow& window, const QString& file);

}  // namespace memledger::gui
