// The painted map of an address range at one instant (the Fragmentation view): the range wraps
// row by row, left to right, each pixel the bytes it stands for; live blocks coloured by site or
// by age, holes red (or, where the layout is not exact, the colour of "unknown"), the allocator's
// slack grey. A pixel holding several things is their mix by bytes, so a crowd of small holes
// shows as a red tint; drawing is one pass over the visible blocks and the pixels, never an item
// per block. Wheel zooms the address range, Backspace/Esc goes back to the whole region, a click
// selects the block under the pointer (the block covering most of that pixel's bytes).
// Beside it, RatioChart: the region's free share over time and the heap's RSS-based ratio.
#pragma once

#include <QImage>
#include <QWidget>

#include <memory>
#include <optional>

#include "analyzer/analyzer.h"
#include "analyzer/heap_map.h"

namespace memledger::gui {

class HeapMapWidget : public QWidget {
  Q_OBJECT
 public:
  enum class Colouring { Site, Age };
  explicit HeapMapWidget(QWidget* parent = nullptr);
  void setMap(std::shared_ptr<const analyzer::HeapHistory> history, std::shared_ptr<const analyzer::MapLayout> layout);
  void setColouring(Colouring colouring);
  Colouring colouring() const { return colouring_; }
  void setSelected(std::optional<uint32_t> block);
  std::optional<uint32_t> selected() const { return selected_; }
  // The address range drawn: the whole region unless zoomed.
  void setView(uint64_t from, uint64_t to);
  void resetView();
  uint64_t viewFrom() const { return from_; }
  uint64_t viewTo() const { return to_; }
  // Where an address is drawn (the centre of its pixel), and the bytes a point stands for.
  QPointF pointOf(uint64_t address) const;
  std::optional<std::pair<uint64_t, uint64_t>> bytesAt(QPointF point) const;
  // Colours: a site's (stable across instants: from its stack id), an age's, and the fixed ones.
  static QColor siteColour(int64_t stack_id);
  static QColor ageColour(double share);  // 0 youngest .. 1 oldest
  static QColor holeColour() { return QColor(215, 48, 39); }
  QColor unknownColour() const;
  QColor slackColour() const;
  QColor outsideColour() const;
  int64_t oldestAge() const { return oldest_; }  // of the live blocks in view, for the legend
  QSize sizeHint() const override { return {800, 420}; }
  QSize minimumSizeHint() const override { return {300, 160}; }

 signals:
  void blockClicked(std::optional<uint32_t> block);
  void hoverText(const QString& text);
  void viewChanged();

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void keyPressEvent(QKeyEvent*) override;

 private:
  struct Grid {
    QRectF plot;         // logical pixels
    int rows = 0;
    double rowBytes = 0;  // bytes per row
    double rowHeight = 0;
  };
  Grid grid() const;
  void rasterize();
  std::shared_ptr<const analyzer::HeapHistory> history_;
  std::shared_ptr<const analyzer::MapLayout> layout_;
  Colouring colouring_ = Colouring::Site;
  std::optional<uint32_t> selected_;
  uint64_t from_ = 0, to_ = 0;
  int64_t oldest_ = 0;
  QImage image_;
  bool dirty_ = true;
};

// The free share of the region over time (from its rows) and, for the heap, 1 - live/resident
// from the RSS samples; a cursor at the instant shown; a click picks an instant.
class RatioChart : public QWidget {
  Q_OBJECT
 public:
  explicit RatioChart(QWidget* parent = nullptr);
  // `rowsExact`: the region's series holds every block (else it is drawn dashed and says so).
  void setSeries(std::shared_ptr<const analyzer::HeapHistory> history, std::vector<analyzer::FragmentationPoint> rss,
                 int64_t from_ns, int64_t to_ns);
  void setCursor(int64_t t_ns);
  int64_t timeAt(double x) const;
  double xOf(int64_t t_ns) const;
  QSize sizeHint() const override { return {800, 150}; }
  QSize minimumSizeHint() const override { return {200, 90}; }

 signals:
  void timeClicked(int64_t t_ns);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;

 private:
  QRectF plot() const;
  std::shared_ptr<const analyzer::HeapHistory> history_;
  std::vector<analyzer::FragmentationPoint> rss_;
  int64_t from_ = 0, to_ = 1, cursor_ = 0;
};

}  // namespace memledger::gui
