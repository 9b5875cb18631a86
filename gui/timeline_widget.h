// The timeline docked above every view: heap, mmap, RSS and each device/pool series as
// min-max envelopes with their last values, phases shaded and named, markers, the exact peak of
// each series marked. Wheel zooms around the cursor, a right (or shift+left) drag pans, a left
// drag selects a time range (rangeSelected), a click picks an instant (timeClicked: the live set
// then), a double click shows the whole run again.
//
// Each paint asks analyzer::downsample() for two points per pixel column of the visible range,
// so a series of millions of buckets costs one linear pass, never a point per bucket drawn.
#pragma once

#include <QPixmap>
#include <QWidget>

#include <memory>
#include <optional>
#include <set>

#include "gui/document.h"

namespace memledger::gui {

class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);

  void setData(std::shared_ptr<const RecordingData> data);
  // A compared recording (B): its series drawn as dashed lines over A's, at the same time since
  // each one's start (the time axis reaches the longer run's end); nullptr: none.
  void setCompare(std::shared_ptr<const RecordingData> b);
  // The visible interval [from, to) in ns since the start.
  void setView(int64_t from, int64_t to);
  int64_t viewFrom() const { return v0_; }
  int64_t viewTo() const { return v1_; }
  void setSelection(std::optional<int64_t> from, std::optional<int64_t> to);  // no signal
  // The instant the trees' live set is of (a dashed line), or none.
  void setLiveAt(std::optional<int64_t> t);
  std::optional<std::pair<int64_t, int64_t>> selection() const { return sel_; }
  // Centres the view on a series' exact peak, a tenth of the run wide (or as wide as now if less).
  bool jumpToPeak(const QString& series);
  void setSeriesVisible(const QString& series, bool visible);
  // Draws it afresh: what it shows changed outside its setters (the report's phases arrived).
  void refresh();

  // What the last paint drew, for tests and the status line.
  struct PeakMark {
    QString series;
    int64_t t_ns = 0, bytes = 0;
    QPointF at;  // widget coordinates of the marker's tip
    bool compared = false;  // of B, the recording compared with (an outline, "B heap peak ...")
  };
  struct PhaseBand {
    QString name;
    QRectF rect;
  };
  const std::vector<PeakMark>& peakMarks() const { return peaks_; }
  const std::vector<PhaseBand>& phaseBands() const { return bands_; }
  size_t pointsDrawn() const { return pointsDrawn_; }
  const std::vector<QString>& compareDrawn() const { return compareDrawn_; }  // B's series drawn
  double xOf(int64_t t) const;
  int64_t timeAt(double x) const;
  QRectF plotRect() const;

  static QColor seriesColor(const QString& name);

 signals:
  void rangeSelected(std::optional<int64_t> from, std::optional<int64_t> to);
  void timeClicked(int64_t t);  // a click (not a drag) in the plot: "live at this time"
  void viewChanged(int64_t from, int64_t to);
  void hoverText(const QString& text);

 protected:
  void paintEvent(QPaintEvent*) override;
  void changeEvent(QEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  QSize sizeHint() const override { return {900, 220}; }
  QSize minimumSizeHint() const override { return {300, 120}; }

 private:
  int64_t endNs() const;  // the run's end, or the longer run's with B
  void paintPlot(QPainter& p);
  QPixmap cache_;  // the last paint, shown again until refresh()
  bool cacheValid_ = false;
  std::shared_ptr<const RecordingData> data_, compare_;
  std::vector<QString> compareDrawn_;
  int64_t v0_ = 0, v1_ = 1;
  std::optional<std::pair<int64_t, int64_t>> sel_;
  std::optional<int64_t> liveAt_;
  std::set<QString> hidden_;
  enum class Drag { None, Select, Pan } drag_ = Drag::None;
  double dragX_ = 0;
  int64_t dragT_ = 0, dragV0_ = 0, dragV1_ = 0;
  std::vector<PeakMark> peaks_;
  std::vector<PhaseBand> bands_;
  std::vector<std::pair<QString, QRectF>> legend_;
  size_t pointsDrawn_ = 0;
};

}  // namespace memledger::gui
