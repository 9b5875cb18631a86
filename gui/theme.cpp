#include "gui/theme.h"

#include <QApplication>
#include <QStyleFactory>

namespace memledger::gui {

QPalette darkPalette() {
  const QColor window(0x2d, 0x2f, 0x33), base(0x1f, 0x21, 0x24), text(0xe8, 0xea, 0xed), dim(0x8a, 0x8f, 0x98);
  const QColor highlight(0x3d, 0x7e, 0xd8), link(0x7a, 0xb4, 0xff);
  QPalette p;
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3d, 0x42));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, dim);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x36, 0x39, 0x3e));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Light, QColor(0x45, 0x48, 0x4e));
  p.setColor(QPalette::Midlight, QColor(0x3a, 0x3d, 0x42));
  p.setColor(QPalette::Mid, QColor(0x25, 0x27, 0x2a));
  p.setColor(QPalette::Dark, QColor(0x1a, 0x1b, 0x1e));
  p.setColor(QPalette::Shadow, Qt::black);
  p.setColor(QPalette::Highlight, highlight);
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Link, link);
  p.setColor(QPalette::LinkVisited, QColor(0xc0, 0x9c, 0xff));
  for (QPalette::ColorRole r : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, r, dim);
  p.setColor(QPalette::Disabled, QPalette::Highlight, QColor(0x50, 0x53, 0x58));
  return p;
}

void applyDarkTheme(QApplication& app) {
  app.setStyle(QStyleFactory::create("Fusion"));
  app.setPalette(darkPalette());
}

bool isDark(const QPalette& palette) {
  return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

QColor growthColor(const QPalette& palette) { return isDark(palette) ? QColor(0xff, 0x7a, 0x6b) : QColor(190, 40, 30); }
QColor shrinkColor(const QPalette& palette) { return isDark(palette) ? QColor(0x7a, 0xaa, 0xff) : QColor(30, 90, 190); }
QColor warningColor(const QPalette& palette) { return isDark(palette) ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc0, 0x39, 0x2b); }

}  // namespace memledger::gui
