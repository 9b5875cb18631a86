// The dark theme (`memledger-gui --dark`, or MEMLEDGER_GUI_THEME=dark): Qt's Fusion style with a
// dark palette. Every view takes its colours from the palette (base, text, highlight, link,
// placeholder), so one palette serves them all; series and flame colours are chosen to read on
// both backgrounds.
#pragma once

#include <QPalette>

class QApplication;

namespace memledger::gui {

QPalette darkPalette();
// Fusion with darkPalette(); also sets the link colours of rich text (the Summary's links).
void applyDarkTheme(QApplication& app);
// Whether the palette in effect is dark (its window background darker than its text).
bool isDark(const QPalette& palette);
// Text colours that read on the palette's base: growth (red), shrink (blue), a warning (red).
QColor growthColor(const QPalette& palette);
QColor shrinkColor(const QPalette& palette);
QColor warningColor(const QPalette& palette);

}  // namespace memledger::gui
