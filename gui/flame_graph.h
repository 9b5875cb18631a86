// The flame graph: a custom painted widget over a call tree (analyzer/call_tree.h). Flame (root
// at the bottom) or icicle (root at the top); the bottom-up tree gives the inverted graph.
// Boxes under the cost threshold or narrower than a pixel are pruned before painting (hotspot's
// way); text is skipped in narrow boxes; the tooltip is built on hover only. A click zooms into a
// frame (its ancestors stay drawn full width), Backspace or a click on an ancestor goes back.
#pragma once

#include <QComboBox>
#include <QWidget>

#include "gui/document.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;

namespace memledger::gui {

class FlameGraphCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit FlameGraphCanvas(QWidget* parent = nullptr);
  void setTree(std::shared_ptr<const RangeData> range, bool bottomUp);
  void setMetric(analyzer::TreeMetric metric);
  void setIcicle(bool icicle);
  void setSearch(const QString& text);
  void setThreshold(double percent);  // of the zoomed root's cost
  void zoomTo(int32_t node);          // 0: the whole tree
  int32_t zoomNode() const { return zoom_; }
  const analyzer::CallTree* tree() const;
  analyzer::TreeMetric metric() const { return metric_; }
  // B − A (a comparison shown as its difference): per node the changes at and below it; else null.
  const std::vector<analyzer::TreeCost>* changes() const;
  // What a box's width stands for: the node's cost, or (B − A) the size of the changes below it.
  int64_t widthCost(int32_t node) const;

  struct Box {
    int32_t node = 0;
    QRectF rect;
    bool match = false;
  };
  const std::vector<Box>& boxes() const { return boxes_; }  // as last laid out
  int64_t matchedCost() const { return matchedCost_; }      // cost of the outermost matching boxes
  QString tooltipFor(int32_t node) const;

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  QSize sizeHint() const override { return {900, 500}; }

 private:
  void layoutBoxes();
  const Box* boxAt(QPointF p) const;

  std::shared_ptr<const RangeData> range_;
  bool bottomUp_ = false, icicle_ = true;
  analyzer::TreeMetric metric_ = analyzer::TreeMetric::Peak;
  QString search_;
  double threshold_ = 0.1;
  int32_t zoom_ = 0;
  std::vector<Box> boxes_;
  int64_t matchedCost_ = 0;
  bool dirty_ = true;
};

class FlameGraphView : public QWidget {
  Q_OBJECT
 public:
  explicit FlameGraphView(QWidget* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  void setMetric(analyzer::TreeMetric metric);
  FlameGraphCanvas* canvas() const { return canvas_; }
  bool exportImage(const QString& path);  // .png or .svg by the suffix
  bool inverted() const;  // shows the bottom-up tree

 signals:
  void invertedChanged(bool inverted);

 private:
  void rebuild();
  std::shared_ptr<const RangeData> range_;
  FlameGraphCanvas* canvas_;
  QComboBox* metric_;
  QCheckBox *inverted_, *icicle_;
  QLineEdit* search_;
  QDoubleSpinBox* threshold_;
  QLabel* note_ = nullptr;  // what the boxes mean for this range (B − A, live at, a selection's peak)
};

}  // namespace memledger::gui
