// Charts: heaptrack_gui's Consumed, Allocations, Allocated and Temporary charts over memledger's
// per-site activity (analyzer/site_chart.h): a total line plus the top-N functions (or sites)
// stacked over time; with a comparison open and B − A shown, each one's change as a line around
// zero (growth above, shrink below). The chart follows the timeline's zoom (each zoom asks the
// analyzer, on a worker, for about one point per pixel of the visible window) and its selection;
// hover shows the time and every series' value; a drag selects a time range (start, end and
// delta of every series, and the range of every view); a click asks for the live set at that
// time (the trees' "live at"). Keys 1-4 switch the chart; PNG/SVG export.
#pragma once

#include <QWidget>

#include <memory>
#include <optional>
#include <tuple>

#include "gui/document.h"

class QButtonGroup;
class QComboBox;
class QLabel;
class QSpinBox;
class QTimer;

namespace memledger::gui {

class ChartCanvas : public QWidget {
  Q_OBJECT
 public:
  explicit ChartCanvas(QWidget* parent = nullptr);
  void setCharts(std::shared_ptr<const analyzer::SiteCharts> charts);
  void setKind(analyzer::ChartKind kind);
  void setView(int64_t from, int64_t to);  // [from, to), the timeline's
  void setSelection(std::optional<std::pair<int64_t, int64_t>> selection);
  void setLiveAt(std::optional<int64_t> t);
  std::shared_ptr<const analyzer::SiteCharts> charts() const { return charts_; }
  analyzer::ChartKind kind() const { return kind_; }
  const analyzer::Chart* chart() const;
  QRectF plotRect() const;
  double xOf(int64_t t) const;
  int64_t timeAt(double x) const;
  // The text of a value of this chart ("1.5 MiB", "1,234"; signed for B − A).
  QString valueText(int64_t v) const;
  // "label value" per series (total first) at the point at or before t, as the hover shows them.
  QStringList valuesAt(int64_t t) const;
  // The selection's start, end and delta per series (total first), as the legend shows them.
  QStringList selectionText() const;
  size_t pointsDrawn() const { return pointsDrawn_; }

 signals:
  void rangeSelected(std::optional<int64_t> from, std::optional<int64_t> to);
  void timeClicked(int64_t t);
  void hoverText(const QString& text);
  void kindRequested(analyzer::ChartKind kind);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void leaveEvent(QEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  QSize sizeHint() const override { return {900, 420}; }

 private:
  int legendColumns() const;
  double legendHeight() const;  // the legend's rows above the plot
  QFont legendFont() const;
  std::shared_ptr<const analyzer::SiteCharts> charts_;
  analyzer::ChartKind kind_ = analyzer::ChartKind::Consumed;
  int64_t v0_ = 0, v1_ = 1;
  std::optional<std::pair<int64_t, int64_t>> selection_;
  std::optional<int64_t> liveAt_, hover_;
  bool dragging_ = false;
  double dragX_ = 0;
  int64_t dragT_ = 0;
  size_t pointsDrawn_ = 0;
};

class ChartsView : public QWidget {
  Q_OBJECT
 public:
  explicit ChartsView(Document* doc, QWidget* parent = nullptr);
  ChartCanvas* canvas() const { return canvas_; }
  void setKind(analyzer::ChartKind kind);
  void setGroup(analyzer::ChartGroup group);
  // The window the chart covers (the timeline's view); a request follows shortly.
  void setView(int64_t from, int64_t to);
  bool exportImage(const QString& path);  // .png or .svg by the suffix
  // Asks the Document for the charts of the current window now (no wait).
  void requestNow();

 signals:
  void rangeSelected(std::optional<int64_t> from, std::optional<int64_t> to);
  void timeClicked(int64_t t);
  void hoverText(const QString& text);

 protected:
  void showEvent(QShowEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  void onRange();
  void updateCaption();
  bool toEnd() const;  // the window reaches the end of the run
  Document* doc_;
  ChartCanvas* canvas_;
  QButtonGroup* kinds_;
  QComboBox* group_;
  QSpinBox* top_;
  QLabel* caption_;
  QTimer* debounce_;
  int64_t from_ = 0, to_ = INT64_MAX;
  std::optional<std::tuple<int64_t, int64_t, size_t, size_t, int>> last_;  // the last request
};

}  // namespace memledger::gui
