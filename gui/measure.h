// `memledger-gui FILE --measure`: the figures of bench/gui_speed.sh, measured in the real window
// (offscreen): seconds from start to an interactive Summary+Timeline and to the call trees, the
// time of range updates (the middle tenth and the middle half of the run, selected as a user
// does), the longest the GUI thread was blocked in those steps (a 1 ms timer's late ticks, which
// include painting), and the process's peak RSS against the file's size. One "key=value" line.
#pragma once

#include <QString>

namespace memledger::gui {

class MainWindow;
int measureWindow(MainWindow& window, const QString& file);

}  // namespace memledger::gui
