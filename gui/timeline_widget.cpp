#include "gui/timeline_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "analyzer/curve.h"
#include "analyzer/format.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
constexpr double kLeft = 70, kRight = 12, kTop = 22, kBottom = 22;

QString bytesText(int64_t b) { return QString::fromStdString(an::formatBytes(b)); }
QString timeText(int64_t ns) { return QString::fromStdString(an::formatDuration(ns)); }

// A "nice" step (1, 2, 5 x 10^k) giving about `ticks` ticks over `span`.
double niceStep(double span, int ticks) {
  if (span <= 0) return 1;
  double raw = span / std::max(1, ticks);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}
}  // namespace

TimelineWidget::TimelineWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setObjectName("timeline");
}

QColor TimelineWidget::seriesColor(const QString& name) {
  // At least 3:1 against a white and a dark base (gui/theme.cpp), as graphics should be.
  if (name == "heap") return QColor(0x2f, 0x80, 0xed);
  if (name == "mmap") return QColor(0x22, 0x9a, 0x55);
  if (name == "rss") return QColor(0xdb, 0x6e, 0x12);
  // Devices and pools: hues spread by name, readable on light and dark backgrounds.
  uint h = qHash(name);
  return QColor::fromHsv(int(h % 360), 170, 210);
}

void TimelineWidget::setData(std::shared_ptr<const RecordingData> data) {
  data_ = std::move(data);
  compare_.reset();
  sel_.reset();
  v0_ = 0;
  v1_ = data_ ? data_->end_ns + 1 : 1;
  refresh();
}

void TimelineWidget::setCompare(std::shared_ptr<const RecordingData> b) {
  compare_ = std::move(b);
  if (data_ && v1_ >= data_->end_ns + 1) v1_ = endNs() + 1;  // the whole run in view: both runs' ends
  refresh();
}

int64_t TimelineWidget::endNs() const {
  return std::max(data_ ? data_->end_ns : 0, compare_ ? compare_->end_ns : 0);
}

void TimelineWidget::setView(int64_t from, int64_t to) {
  if (!data_) return;
  const int64_t end = endNs() + 1;
  int64_t width = std::clamp<int64_t>(to - from, 1000, end);  // at most 1 us per view
  from = std::clamp<int64_t>(from, 0, end - width);
  v0_ = from;
  v1_ = from + width;
  refresh();
  emit viewChanged(v0_, v1_);
}

void TimelineWidget::setSelection(std::optional<int64_t> from, std::optional<int64_t> to) {
  if (!from && !to) sel_.reset();
  else sel_ = std::make_pair(from.value_or(0), to.value_or(endNs()));
  refresh();
}

void TimelineWidget::setLiveAt(std::optional<int64_t> t) {
  liveAt_ = t;
  refresh();
}

bool TimelineWidget::jumpToPeak(const QString& name) {
  if (!data_) return false;
  for (const auto& s : data_->series) {
    if (QString::fromStdString(s.name) != name || !s.series.exact_peak) continue;
    int64_t width = std::min<int64_t>(v1_ - v0_, std::max<int64_t>(data_->end_ns / 10, 1000));
    setView(s.series.exact_peak->t_ns - width / 2, s.series.exact_peak->t_ns + width / 2);
    emit hoverText(tr("%1 peak: %2 at %3").arg(name, bytesText(s.series.exact_peak->bytes),
                                              timeText(s.series.exact_peak->t_ns)));
    return true;
  }
  return false;
}

void TimelineWidget::setSeriesVisible(const QString& name, bool visible) {
  if (visible) hidden_.erase(name);
  else hidden_.insert(name);
  refresh();
}

QRectF TimelineWidget::plotRect() const {
  return QRectF(kLeft, kTop, std::max(10.0, width() - kLeft - kRight), std::max(10.0, height() - kTop - kBottom));
}

double TimelineWidget::xOf(int64_t t) const {
  QRectF r = plotRect();
  return r.left() + r.width() * double(t - v0_) / double(std::max<int64_t>(1, v1_ - v0_));
}

int64_t TimelineWidget::timeAt(double x) const {
  QRectF r = plotRect();
  double f = std::clamp((x - r.left()) / r.width(), 0.0, 1.0);
  return v0_ + int64_t(f * double(v1_ - v0_));
}

void TimelineWidget::refresh() {
  cacheValid_ = false;
  update();
}

void TimelineWidget::changeEvent(QEvent* e) {
  if (e->type() == QEvent::PaletteChange || e->type() == QEvent::FontChange || e->type() == QEvent::StyleChange)
    cacheValid_ = false;
  QWidget::changeEvent(e);
}

// Drawn into a pixmap kept until what it shows changes (every setter and mouse action calls
// refresh()): the window's other repaints (a view shown, a status text) cost a blit, not the
// 3.5-4 ms of a paint (a PyTorch run; branch guievent).
void TimelineWidget::paintEvent(QPaintEvent*) {
  const qreal dpr = devicePixelRatioF();
  const QSize pixels = (QSizeF(size()) * dpr).toSize();
  if (!cacheValid_ || cache_.size() != pixels || cache_.devicePixelRatio() != dpr) {
    cache_ = QPixmap(pixels);
    cache_.setDevicePixelRatio(dpr);
    QPainter p(&cache_);
    p.setFont(font());
    p.setPen(palette().color(foregroundRole()));
    paintPlot(p);
    cacheValid_ = true;
  }
  QPainter(this).drawPixmap(0, 0, cache_);
}

void TimelineWidget::paintPlot(QPainter& p) {
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette pal = palette();
  p.fillRect(rect(), pal.base());
  peaks_.clear();
  bands_.clear();
  legend_.clear();
  pointsDrawn_ = 0;
  if (!data_) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No recording open"));
    return;
  }
  const QRectF plot = plotRect();
  // One point per device pixel column: two per column (as before) drew twice the steps and
  // envelope vertices to the same pixels, half a timeline paint in every repaint.
  const size_t columns = size_t(std::max(1.0, plot.width() * devicePixelRatioF()));

  // Downsample every visible series once; the y axis fits the highest of them.
  struct Drawn {
    QString name;
    an::Curve curve;
    std::optional<an::ExactPeak> peak;
  };
  std::vector<Drawn> drawn, drawnB;
  int64_t ymax = 1;
  // The finest copy with at most 8 points per column in view: a paint stays linear in pixels.
  auto curveOf = [&](const RecordingData& d, size_t si) {
    const an::Series* source = &d.series[si].series;
    auto inView = [&](const an::Series& x) {
      auto lo = std::lower_bound(x.points.begin(), x.points.end(), v0_,
                                 [](const an::SeriesPoint& p, int64_t t) { return p.t_ns < t; });
      auto hi = std::lower_bound(lo, x.points.end(), v1_, [](const an::SeriesPoint& p, int64_t t) { return p.t_ns < t; });
      return size_t(hi - lo);
    };
    if (si < d.levels.size())
      for (const an::Series& level : d.levels[si]) {
        if (inView(*source) <= columns * 8) break;
        source = &level;
      }
    return an::downsample(*source, v0_, v1_, columns);
  };
  for (size_t si = 0; si < data_->series.size(); ++si) {
    const auto& s = data_->series[si];
    QString name = QString::fromStdString(s.name);
    legend_.emplace_back(name, QRectF());
    if (hidden_.count(name)) continue;
    Drawn d{name, curveOf(*data_, si), s.series.exact_peak};
    for (const auto& pt : d.curve.points) ymax = std::max(ymax, pt.max);
    drawn.push_back(std::move(d));
  }
  compareDrawn_.clear();
  for (size_t si = 0; compare_ && si < compare_->series.size(); ++si) {
    QString name = QString::fromStdString(compare_->series[si].name);
    if (hidden_.count(name)) continue;
    Drawn d{name, curveOf(*compare_, si), compare_->series[si].series.exact_peak};
    for (const auto& pt : d.curve.points) ymax = std::max(ymax, pt.max);
    compareDrawn_.push_back(name);
    drawnB.push_back(std::move(d));
  }
  // Byte ticks on binary units: steps of 1, 2, 5 x 10^k KiB/MiB/GiB read as round numbers.
  double unit = 1;
  while (double(ymax) / unit >= 1024 && unit < double(int64_t(1) << 50)) unit *= 1024;
  double ystep = niceStep(double(ymax) / unit, 4) * unit;
  double ytop = std::ceil(double(ymax) * 1.08 / ystep) * ystep;
  auto yOf = [&](double v) { return plot.bottom() - plot.height() * v / ytop; };

  // Phases: alternating shaded bands with their names at the top.
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  QColor band = pal.color(QPalette::Highlight);
  // The legend (drawn last) takes the top margin's right end; a phase name that would run under
  // it is drawn at the top of its band inside the plot instead ("serve" was cut to "serv").
  double legendLeft = plot.right() - 12;
  if (compare_) legendLeft -= p.fontMetrics().horizontalAdvance(tr("dashed: B")) + 8 + 6;
  for (const auto& entry : legend_) legendLeft -= p.fontMetrics().horizontalAdvance(entry.first) + 18 + 6;
  int i = 0;
  for (const auto& ph : data_->report.phases) {
    double x0 = std::max(plot.left(), xOf(ph.start_ns)), x1 = std::min(plot.right(), xOf(ph.end_ns));
    if (x1 <= x0) { ++i; continue; }
    QRectF r(x0, plot.top(), x1 - x0, plot.height());
    band.setAlpha(i % 2 ? 18 : 34);
    p.fillRect(r, band);
    p.setPen(pal.color(QPalette::Text));
    QString label = QString::fromStdString(ph.name);
    const double width = p.fontMetrics().horizontalAdvance(label);
    const double marginRoom = std::min(x1, legendLeft - 3) - x0 - 4;
    QRectF where = width <= marginRoom || marginRoom >= x1 - x0 - 4
                       ? QRectF(x0 + 2, 2, std::max(0.0, x1 - x0 - 4), kTop - 4)
                       : QRectF(x0 + 2, plot.top() + 1, std::max(0.0, x1 - x0 - 4), kTop - 4);
    p.drawText(where, Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(label, Qt::ElideRight, int(where.width())));
    bands_.push_back({label, r});
    ++i;
  }

  // Axes and grid.
  QColor grid = pal.color(QPalette::Text);
  grid.setAlpha(40);
  p.setPen(grid);
  for (double v = 0; v <= ytop + 1; v += ystep) {
    double y = yOf(v);
    p.drawLine(QPointF(plot.left(), y), QPointF(plot.right(), y));
  }
  p.setPen(pal.color(QPalette::Text));
  for (double v = 0; v <= ytop + 1; v += ystep)
    p.drawText(QRectF(0, yOf(v) - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter, bytesText(int64_t(v)));
  double tstep = niceStep(double(v1_ - v0_), std::max(2, int(plot.width() / 110)));
  for (double t = std::ceil(double(v0_) / tstep) * tstep; t <= double(v1_); t += tstep) {
    double x = xOf(int64_t(t));
    p.setPen(grid);
    p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(x - 50, plot.bottom() + 2, 100, kBottom - 2), Qt::AlignCenter, timeText(int64_t(t)));
  }
  p.drawRect(plot);

  // Series: the envelope (min..max of each column) filled lightly, the value at each end drawn.
  p.save();
  p.setClipRect(plot);
  // The series are steps on pixel columns: antialiasing them costs most of a paint and shows nothing.
  p.setRenderHint(QPainter::Antialiasing, false);
  for (const Drawn& d : drawn) {
    if (d.curve.points.empty()) continue;
    QColor c = seriesColor(d.name);
    QPainterPath env;
    const auto& pts = d.curve.points;
    pointsDrawn_ += pts.size();
    // Between two points the value holds (buckets are written only when something happened).
    std::vector<QPointF> upper, lower;
    std::vector<QLineF> line;  // the steps, drawn as separate lines (see below)
    QPointF at;
    for (size_t k = 0; k < pts.size(); ++k) {
      double x0 = xOf(pts[k].t_from_ns), x1 = xOf(std::min(pts[k].t_to_ns, k + 1 < pts.size() ? pts[k + 1].t_from_ns : v1_));
      upper.emplace_back(x0, yOf(double(pts[k].max)));
      upper.emplace_back(x1, yOf(double(pts[k].max)));
      lower.emplace_back(x0, yOf(double(pts[k].min)));
      lower.emplace_back(x1, yOf(double(pts[k].last)));
      // Held inside the plot (give or take a pixel; the clip does the rest): zoomed in, a step's
      // ends may lie millions of pixels outside.
      const double y = yOf(double(pts[k].last)), l = plot.left() - 2, r = plot.right() + 2;
      const double a = std::clamp(x0, l, r), b = std::clamp(x1, l, r);
      if (k > 0 && QPointF(a, y) != at) line.emplace_back(at, QPointF(a, y));  // the value held since the point before
      line.emplace_back(QPointF(a, y), QPointF(b, y));
      at = QPointF(b, y);
    }
    // After the last point the value holds to the run's end (an RSS sampled once, what a
    // process still held when it exited).
    const double end = std::clamp(xOf(std::max(pts.back().t_from_ns, std::min(v1_, data_->end_ns))), plot.left() - 2, plot.right() + 2);
    if (end > at.x()) line.emplace_back(at, QPointF(end, at.y()));
    env.moveTo(upper.front());
    for (const auto& q : upper) env.lineTo(q);
    for (auto it = lower.rbegin(); it != lower.rend(); ++it) env.lineTo(*it);
    env.closeSubpath();
    QColor fill = c;
    fill.setAlpha(60);
    p.fillPath(env, fill);
    // Two pixels wide: the lines with a 1-pixel cosmetic pen, twice, the second a pixel right and
    // down. A 1.6 px pen went through QStroker (its joins and fill were most of a timeline paint,
    // 3-4 ms of every repaint after a range); a cosmetic pen of one pixel is drawn directly.
    QPen pen(c, 1);
    pen.setCosmetic(true);
    p.setPen(pen);
    p.drawLines(line.data(), int(line.size()));
    p.translate(1, 1);
    p.drawLines(line.data(), int(line.size()));
    p.translate(-1, -1);
  }
  // B's series: the value at each point's end as a dashed line of the same colour, no envelope.
  for (const Drawn& d : drawnB) {
    const auto& pts = d.curve.points;
    if (pts.empty()) continue;
    QPainterPath line;
    pointsDrawn_ += pts.size();
    for (size_t k = 0; k < pts.size(); ++k) {
      double x0 = xOf(pts[k].t_from_ns), x1 = xOf(std::min(pts[k].t_to_ns, k + 1 < pts.size() ? pts[k + 1].t_from_ns : v1_));
      if (k == 0) line.moveTo(x0, yOf(double(pts[k].last)));
      else line.lineTo(x0, yOf(double(pts[k - 1].last)));  // the value held since the point before
      line.lineTo(x0, yOf(double(pts[k].last)));
      line.lineTo(x1, yOf(double(pts[k].last)));
    }
    line.lineTo(xOf(std::max(pts.back().t_from_ns, std::min(v1_, compare_->end_ns))), yOf(double(pts.back().last)));
    p.setPen(QPen(seriesColor(d.name).darker(125), 1.4, Qt::DashLine));
    p.drawPath(line);
  }
  p.restore();

  // Markers: dashed lines with their names.
  for (const auto& m : data_->markers) {
    double x = xOf(m.t_ns);
    if (x < plot.left() || x > plot.right()) continue;
    QPen pen(pal.color(QPalette::Text), 1, Qt::DashLine);
    p.setPen(pen);
    p.drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
  }

  // Exact peaks: a triangle at the peak, then its size beside it. All triangles first, so that a
  // label moves clear of every triangle (right of it) and of the labels before it (below them).
  // B's (a comparison's) as outlines in the series' colour, dashed as its curve, labelled "B ...".
  struct Tip {
    const Drawn* d;
    QPointF at;
    bool b;
  };
  std::vector<Tip> tips;
  std::vector<QRectF> triangles, labels;
  for (const std::vector<Drawn>* side : {&drawn, &drawnB})
    for (const Drawn& d : *side) {
      if (!d.peak || d.peak->bytes <= 0 || d.peak->t_ns < v0_ || d.peak->t_ns > v1_) continue;
      const bool b = side == &drawnB;
      QPointF tip(xOf(d.peak->t_ns), yOf(double(d.peak->bytes)));
      QPolygonF tri;
      tri << tip << tip + QPointF(-6, -10) << tip + QPointF(6, -10);
      p.setPen(b ? QPen(seriesColor(d.name), 1.5, Qt::DashLine) : QPen(pal.color(QPalette::Text), 1));
      p.setBrush(b ? pal.color(QPalette::Base) : seriesColor(d.name));
      p.drawPolygon(tri);
      tips.push_back({&d, tip, b});
      triangles.push_back(tri.boundingRect());
    }
  const double lineHeight = p.fontMetrics().height();
  for (const auto& [d, tip, b] : tips) {
    QString label = b ? tr("B %1 peak %2").arg(d->name, bytesText(d->peak->bytes))
                      : tr("%1 peak %2").arg(d->name, bytesText(d->peak->bytes));
    QRectF lr(tip.x() + 8, tip.y() - lineHeight - 2, p.fontMetrics().horizontalAdvance(label) + 4, lineHeight);
    if (lr.right() > plot.right()) lr.moveRight(tip.x() - 8);
    if (lr.top() < plot.top()) lr.moveTop(plot.top() + 1);
    for (int round = 0; round < 16; ++round) {
      bool moved = false;
      for (const QRectF& t : triangles)
        if (t.intersects(lr)) {
          lr.moveLeft(t.right() + 2);
          moved = true;
        }
      for (const QRectF& other : labels)
        if (other.intersects(lr)) {
          lr.moveTop(other.bottom() + 1);
          moved = true;
        }
      if (!moved) break;
    }
    labels.push_back(lr);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(lr, Qt::AlignLeft | Qt::AlignVCenter, label);
    peaks_.push_back({d->name, d->peak->t_ns, d->peak->bytes, tip, b});
  }
  p.setBrush(Qt::NoBrush);

  // The selected range.
  if (sel_) {
    double x0 = std::max(plot.left(), xOf(sel_->first)), x1 = std::min(plot.right(), xOf(sel_->second));
    if (x1 >= x0) {
      QColor s = pal.color(QPalette::Highlight);
      s.setAlpha(70);
      p.fillRect(QRectF(x0, plot.top(), std::max(1.0, x1 - x0), plot.height()), s);
      p.setPen(QPen(pal.color(QPalette::Highlight), 1.5));
      p.drawLine(QPointF(x0, plot.top()), QPointF(x0, plot.bottom()));
      p.drawLine(QPointF(x1, plot.top()), QPointF(x1, plot.bottom()));
    }
  }

  // The instant the trees' live set is of.
  if (liveAt_ && *liveAt_ >= v0_ && *liveAt_ <= v1_) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1.5, Qt::DashLine));
    p.drawLine(QPointF(xOf(*liveAt_), plot.top()), QPointF(xOf(*liveAt_), plot.bottom()));
    p.drawText(QPointF(xOf(*liveAt_) + 4, plot.bottom() - 4), tr("live at %1").arg(timeText(*liveAt_)));
  }

  // Legend (click to show or hide a series); with B, what its dashes are.
  double lx = plot.right() - 12;
  if (compare_) {
    const QString text = tr("dashed: B");
    const double w = p.fontMetrics().horizontalAdvance(text) + 8;
    lx -= w;
    p.fillRect(QRectF(lx - 3, 3, w + 6, kTop - 6), pal.base());
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(lx, 3, w, kTop - 6), Qt::AlignLeft | Qt::AlignVCenter, text);
    lx -= 6;
  }
  for (auto it = legend_.rbegin(); it != legend_.rend(); ++it) {
    QString text = it->first;
    double w = p.fontMetrics().horizontalAdvance(text) + 18;
    lx -= w;
    QRectF r(lx, 3, w, kTop - 6);  // in the top margin, clear of the curves and their labels
    it->second = r;
    p.fillRect(r.adjusted(-3, 0, 3, 0), pal.base());  // over a phase name that runs this far
    QColor c = seriesColor(text);
    if (hidden_.count(text)) c.setAlpha(60);
    p.fillRect(QRectF(r.left(), r.top() + 3, 10, 8), c);
    QColor tc = pal.color(QPalette::Text);
    if (hidden_.count(text)) tc.setAlpha(100);
    p.setPen(tc);
    p.drawText(r.adjusted(13, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter, text);
    lx -= 6;
  }
}

void TimelineWidget::mousePressEvent(QMouseEvent* e) {
  if (!data_) return;
  for (const auto& [name, r] : legend_)
    if (r.contains(e->position())) {
      setSeriesVisible(name, hidden_.count(name) != 0);
      return;
    }
  dragX_ = e->position().x();
  dragT_ = timeAt(dragX_);
  dragV0_ = v0_;
  dragV1_ = v1_;
  bool pan = e->button() == Qt::RightButton || e->button() == Qt::MiddleButton ||
             (e->button() == Qt::LeftButton && (e->modifiers() & Qt::ShiftModifier));
  drag_ = pan ? Drag::Pan : (e->button() == Qt::LeftButton ? Drag::Select : Drag::None);
}

void TimelineWidget::mouseMoveEvent(QMouseEvent* e) {
  if (!data_) return;
  double x = e->position().x();
  if (drag_ == Drag::Pan) {
    double dt = (dragX_ - x) / plotRect().width() * double(dragV1_ - dragV0_);
    setView(dragV0_ + int64_t(dt), dragV1_ + int64_t(dt));
  } else if (drag_ == Drag::Select) {
    int64_t t = timeAt(x);
    sel_ = std::make_pair(std::min(t, dragT_), std::max(t, dragT_));
    refresh();
    emit hoverText(tr("selecting %1 to %2 (%3)").arg(timeText(sel_->first), timeText(sel_->second),
                                                      timeText(sel_->second - sel_->first)));
  } else if (plotRect().contains(e->position())) {
    // The value of each visible series under the cursor.
    int64_t t = timeAt(x);
    QStringList parts{timeText(t)};
    for (const auto& s : data_->series) {
      QString name = QString::fromStdString(s.name);
      if (hidden_.count(name)) continue;
      auto it = std::upper_bound(s.series.points.begin(), s.series.points.end(), t,
                                 [](int64_t v, const an::SeriesPoint& pt) { return v < pt.t_ns; });
      int64_t v = it == s.series.points.begin() ? 0 : std::prev(it)->value;
      parts << QString("%1 %2").arg(name, bytesText(v));
    }
    emit hoverText(parts.join("   "));
  }
}

void TimelineWidget::mouseReleaseEvent(QMouseEvent* e) {
  if (drag_ == Drag::Select) {
    if (std::abs(e->position().x() - dragX_) < 3) {
      // A click, not a drag: an instant (the trees then show what was live at it), no range.
      sel_.reset();
      refresh();
      if (plotRect().contains(e->position())) emit timeClicked(timeAt(e->position().x()));
      else emit rangeSelected(std::nullopt, std::nullopt);
    } else if (sel_) {
      emit rangeSelected(sel_->first, sel_->second);
    }
  }
  drag_ = Drag::None;
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent*) {
  if (data_) setView(0, endNs() + 1);
}

void TimelineWidget::wheelEvent(QWheelEvent* e) {
  if (!data_) return;
  double steps = e->angleDelta().y() / 120.0;
  double factor = std::pow(0.8, steps);
  int64_t anchor = timeAt(e->position().x());
  double f = double(anchor - v0_) / double(std::max<int64_t>(1, v1_ - v0_));
  int64_t width = int64_t(double(v1_ - v0_) * factor);
  int64_t from = anchor - int64_t(f * double(width));
  setView(from, from + width);
}

void TimelineWidget::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Escape && sel_) {
    sel_.reset();
    refresh();
    emit rangeSelected(std::nullopt, std::nullopt);
    return;
  }
  QWidget::keyPressEvent(e);
}

}  // namespace memledger::gui
