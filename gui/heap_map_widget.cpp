#include "gui/heap_map_widget.h"

#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "analyzer/format.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
QString hex(uint64_t a) { return "0x" + QString::number(a, 16); }
QString bytesText(uint64_t b) { return QString::fromStdString(an::formatBytes(int64_t(b))); }

// The first element of a sorted list of [address, address + size) ranges that ends after `at`.
template <class List, class Range>
auto firstEndingAfter(const List& list, uint64_t at, Range range) {
  return std::partition_point(list.begin(), list.end(), [&](const auto& x) {
    auto [a, size] = range(x);
    return a + size <= at;
  });
}
}  // namespace

HeapMapWidget::HeapMapWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setObjectName("heapMap");
}

void HeapMapWidget::setMap(std::shared_ptr<const an::HeapHistory> history, std::shared_ptr<const an::MapLayout> layout) {
  const bool newRegion = !history_ || history != history_;
  history_ = std::move(history);
  layout_ = std::move(layout);
  if (newRegion) {
    selected_.reset();
    if (history_) from_ = history_->region.from, to_ = history_->region.to;
  }
  dirty_ = true;
  update();
}

void HeapMapWidget::setColouring(Colouring c) {
  if (c == colouring_) return;
  colouring_ = c;
  dirty_ = true;
  update();
}

void HeapMapWidget::setSelected(std::optional<uint32_t> block) {
  selected_ = block;
  update();
}

void HeapMapWidget::setView(uint64_t from, uint64_t to) {
  if (!history_) return;
  from = std::max(from, history_->region.from);
  to = std::min(to, history_->region.to);
  if (to <= from) return;
  from_ = from;
  to_ = to;
  dirty_ = true;
  update();
  emit viewChanged();
}

void HeapMapWidget::resetView() {
  if (history_) setView(history_->region.from, history_->region.to);
}

QColor HeapMapWidget::siteColour(int64_t stack_id) {
  // Hues spread by the golden ratio, kept away from the holes' red.
  const double h = std::fmod(double(uint64_t(stack_id) * 0x9E3779B97F4A7C15ull >> 11) / double(1ull << 53), 1.0);
  return QColor::fromHsvF(float((30 + h * 300) / 360.0), 0.55f, 0.85f);
}

QColor HeapMapWidget::ageColour(double share) {
  // viridis' ends and middle: young yellow, then green-blue, old purple.
  const QColor stops[3] = {QColor(253, 231, 37), QColor(33, 145, 140), QColor(68, 1, 84)};
  share = std::clamp(share, 0.0, 1.0);
  const int i = share < 0.5 ? 0 : 1;
  const double f = share < 0.5 ? share * 2 : (share - 0.5) * 2;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f), float(a.greenF() + (b.greenF() - a.greenF()) * f),
                          float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

QColor HeapMapWidget::unknownColour() const {
  // Neither red nor a site's colour: a mid grey with a violet cast, readable on both palettes.
  return QColor(150, 140, 175);
}
QColor HeapMapWidget::slackColour() const { return palette().color(QPalette::Mid); }
QColor HeapMapWidget::outsideColour() const {
  const QColor base = palette().color(QPalette::Base);
  return base.lightness() > 128 ? base.darker(112) : base.lighter(180);
}

HeapMapWidget::Grid HeapMapWidget::grid() const {
  Grid g;
  const double left = fontMetrics().horizontalAdvance("0x00000000000000") + 8;
  g.plot = QRectF(left, 4, std::max(10.0, width() - left - 6), std::max(10.0, height() - 8.0));
  const uint64_t span = to_ > from_ ? to_ - from_ : 1;
  // Enough rows that the average block in view is ~16 pixels long: at least 8, at most one per 2 px.
  size_t visible = 0;
  if (history_ && layout_) {
    auto first = firstEndingAfter(layout_->live, from_, [&](uint32_t i) {
      return std::pair(history_->blocks[i].address, history_->blocks[i].size);
    });
    auto last = std::partition_point(first, layout_->live.end(), [&](uint32_t i) { return history_->blocks[i].address < to_; });
    visible = size_t(last - first);
  }
  const int most = std::max(1, int(g.plot.height() / 2));
  g.rows = std::clamp(int(std::ceil(double(visible) * 16.0 / g.plot.width())), std::min(8, most), most);
  g.rowBytes = double(span) / g.rows;
  // Rows of a multiple of 16 bytes start at aligned addresses (readable labels); the last ones
  // may then stay empty.
  if (g.rowBytes >= 64) g.rowBytes = std::ceil(g.rowBytes / 16) * 16;
  g.rowHeight = g.plot.height() / g.rows;
  return g;
}

// One pass over the segments in view (blocks, holes and the gaps between them, in address order)
// and the pixels: each pixel is the mix of what its bytes hold.
void HeapMapWidget::rasterize() {
  dirty_ = false;
  const Grid g = grid();
  const qreal dpr = devicePixelRatioF();
  const int W = std::max(1, int(g.plot.width() * dpr)), H = std::max(1, int(g.plot.height() * dpr));
  image_ = QImage(W, H, QImage::Format_RGB32);
  image_.setDevicePixelRatio(dpr);
  image_.fill(palette().color(QPalette::Base));
  oldest_ = 0;
  if (!history_ || !layout_ || to_ <= from_) return;
  const an::HeapHistory& h = *history_;
  const an::MapLayout& l = *layout_;

  struct Seg {
    uint64_t a, b;
    QRgb colour;
  };
  std::vector<Seg> segs;
  auto live = firstEndingAfter(l.live, from_, [&](uint32_t i) { return std::pair(h.blocks[i].address, h.blocks[i].size); });
  auto hole = firstEndingAfter(l.holes, from_, [](const an::MapGap& g) { return std::pair(g.address, g.size); });
  for (auto it = live; it != l.live.end() && h.blocks[*it].address < to_; ++it) {
    const int64_t age = l.t_ns - h.blocks[*it].t_alloc;
    oldest_ = std::max(oldest_, age);
  }
  // Colours by site are few: one lookup each, not a colour conversion per block.
  std::unordered_map<int64_t, QRgb> siteRgb;
  // Ages on a log scale from 1 us to the oldest, through a table of 256 colours.
  QRgb ageRgb[256];
  for (int k = 0; k < 256; ++k) ageRgb[k] = ageColour(k / 255.0).rgb();
  // log2 from the highest bit and a linear step within its octave: close enough for 256 colours,
  // and no libm call per block.
  auto log2ish = [](int64_t v) {
    const uint64_t u = uint64_t(std::max<int64_t>(v, 1024));
    const int msb = 63 - __builtin_clzll(u);
    return msb + double(u - (uint64_t(1) << msb)) / double(uint64_t(1) << msb);
  };
  const double ageBottom = log2ish(1024), ageTop = log2ish(oldest_) - ageBottom;
  auto colourOf = [&](uint32_t i) {
    if (colouring_ == Colouring::Age) {
      const double age = log2ish(l.t_ns - h.blocks[i].t_alloc) - ageBottom;
      return ageRgb[ageTop > 0 ? std::clamp(int(age / ageTop * 255 + 0.5), 0, 255) : 0];
    }
    auto [it, isNew] = siteRgb.try_emplace(h.blocks[i].stack_id, 0);
    if (isNew) it->second = siteColour(h.blocks[i].stack_id).rgb();
    return it->second;
  };
  segs.reserve(size_t(std::min<int64_t>(l.live.end() - live, 1 << 22)) * 2 + 16);
  const QRgb holeRgb = (l.exact ? holeColour() : unknownColour()).rgb();
  const QRgb slackRgb = slackColour().rgb(), outsideRgb = (l.exact ? outsideColour() : unknownColour()).rgb();
  uint64_t at = from_;
  auto fill = [&](uint64_t to) {  // what lies between two known things
    while (at < to) {
      uint64_t end = to;
      const bool inside = at >= l.span_from && at < l.span_to;
      if (!inside && at < l.span_from) end = std::min(end, l.span_from);
      if (inside) end = std::min(end, l.span_to);
      if (end <= at) end = to;
      segs.push_back({at, end, inside ? slackRgb : outsideRgb});
      at = end;
    }
  };
  while (true) {
    const bool haveBlock = live != l.live.end() && h.blocks[*live].address < to_;
    const bool haveHole = hole != l.holes.end() && hole->address < to_;
    if (!haveBlock && !haveHole) break;
    const bool block = haveBlock && (!haveHole || h.blocks[*live].address <= hole->address);
    const uint64_t a = block ? h.blocks[*live].address : hole->address;
    const uint64_t b = std::min<uint64_t>(to_, a + (block ? h.blocks[*live].size : hole->size));
    fill(std::max(a, from_));
    if (b > at) {
      segs.push_back({at, b, block ? colourOf(*live) : holeRgb});
      at = b;
    }
    if (block) ++live;
    else ++hole;
  }
  fill(to_);

  // Each row's pixels, then the row copied into its lines (a thin gap between tall rows).
  std::vector<QRgb> row(static_cast<size_t>(W));
  size_t s = 0;
  const double bytesPerPixel = g.rowBytes / W;
  for (int r = 0; r < g.rows; ++r) {
    const double rowStart = r * g.rowBytes;  // offsets from from_
    for (int x = 0; x < W; ++x) {
      const double p0 = rowStart + x * bytesPerPixel, p1 = p0 + bytesPerPixel;
      double red = 0, green = 0, blue = 0, weight = 0;
      while (s < segs.size() && double(segs[s].b - from_) <= p0) ++s;
      for (size_t k = s; k < segs.size() && double(segs[k].a - from_) < p1; ++k) {
        const double w = std::min(p1, double(segs[k].b - from_)) - std::max(p0, double(segs[k].a - from_));
        if (w <= 0) continue;
        red += qRed(segs[k].colour) * w;
        green += qGreen(segs[k].colour) * w;
        blue += qBlue(segs[k].colour) * w;
        weight += w;
      }
      row[size_t(x)] = weight > 0 ? qRgb(int(red / weight), int(green / weight), int(blue / weight))
                                  : palette().color(QPalette::Base).rgb();
    }
    const int y0 = int(r * g.rowHeight * dpr), y1 = int((r + 1) * g.rowHeight * dpr) - (g.rowHeight >= 6 ? int(dpr) : 0);
    for (int y = y0; y < std::min(y1, H); ++y) std::copy(row.begin(), row.end(), reinterpret_cast<QRgb*>(image_.scanLine(y)));
  }
}

QPointF HeapMapWidget::pointOf(uint64_t address) const {
  const Grid g = grid();
  if (address < from_ || address >= to_) return {-1, -1};
  const double off = double(address - from_);
  const int r = std::min(g.rows - 1, int(off / g.rowBytes));
  const double x = (off - r * g.rowBytes) / g.rowBytes * g.plot.width();
  return {g.plot.left() + std::floor(x) + 0.5, g.plot.top() + (r + 0.5) * g.rowHeight};
}

std::optional<std::pair<uint64_t, uint64_t>> HeapMapWidget::bytesAt(QPointF p) const {
  const Grid g = grid();
  if (!history_ || !g.plot.contains(p)) return std::nullopt;
  const int r = std::clamp(int((p.y() - g.plot.top()) / g.rowHeight), 0, g.rows - 1);
  const double x = std::floor(p.x() - g.plot.left());
  const double perPixel = g.rowBytes / g.plot.width();
  const uint64_t a = from_ + uint64_t(r * g.rowBytes + x * perPixel);
  if (a >= to_) return std::nullopt;  // the empty end of the last rows
  const uint64_t b = std::max(a + 1, from_ + uint64_t(r * g.rowBytes + (x + 1) * perPixel));
  return std::pair(a, std::min(b, to_));
}

void HeapMapWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (!history_ || !layout_) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No address range chosen."));
    return;
  }
  if (dirty_ || image_.size() != (grid().plot.size() * devicePixelRatioF()).toSize()) rasterize();
  const Grid g = grid();
  p.drawImage(g.plot.topLeft(), image_);
  // Row addresses in the margin, as many as fit.
  p.setPen(palette().color(QPalette::Text));
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
  p.setFont(small);
  const double fh = QFontMetricsF(small).height();
  double lastBottom = -1e9;
  for (int r = 0; r < g.rows; ++r) {
    const double y = g.plot.top() + r * g.rowHeight;
    if (y < lastBottom + 2 || from_ + r * g.rowBytes >= double(to_)) continue;
    p.drawText(QRectF(0, y, g.plot.left() - 4, fh), Qt::AlignRight | Qt::AlignTop, hex(from_ + uint64_t(r * g.rowBytes)));
    lastBottom = y + fh;
  }
  // The selected block: outlined in every row it spans.
  if (selected_ && *selected_ < history_->blocks.size()) {
    const an::MapBlock& b = history_->blocks[*selected_];
    const uint64_t a = std::max(b.address, from_), e = std::min(b.address + b.size, to_);
    if (a < e) {
      p.setPen(QPen(palette().color(QPalette::Text), 2));
      p.setBrush(Qt::NoBrush);
      const double off0 = double(a - from_), off1 = double(e - from_);
      const int r0 = int(off0 / g.rowBytes), r1 = std::min(g.rows - 1, int((off1 - 1e-9) / g.rowBytes));
      for (int r = r0; r <= r1; ++r) {
        const double x0 = r == r0 ? (off0 - r * g.rowBytes) / g.rowBytes * g.plot.width() : 0;
        const double x1 = r == r1 ? (off1 - r * g.rowBytes) / g.rowBytes * g.plot.width() : g.plot.width();
        p.drawRect(QRectF(g.plot.left() + x0 - 1, g.plot.top() + r * g.rowHeight - 1, std::max(2.0, x1 - x0) + 2,
                          g.rowHeight + 1));
      }
    }
  }
}

void HeapMapWidget::resizeEvent(QResizeEvent*) { dirty_ = true; }

void HeapMapWidget::mousePressEvent(QMouseEvent* e) {
  setFocus();
  if (e->button() != Qt::LeftButton || !history_ || !layout_) return;
  auto bytes = bytesAt(e->position());
  if (!bytes) return;
  selected_ = history_->blockAt(*layout_, bytes->first, bytes->second);
  update();
  emit blockClicked(selected_);
}

void HeapMapWidget::mouseMoveEvent(QMouseEvent* e) {
  if (!history_ || !layout_) return;
  auto bytes = bytesAt(e->position());
  if (!bytes) return QToolTip::hideText();
  QString text = hex(bytes->first);
  if (auto b = history_->blockAt(*layout_, bytes->first, bytes->second)) {
    const an::MapBlock& block = history_->blocks[*b];
    text += tr(": block of %1 at %2, %3 old").arg(bytesText(block.size), hex(block.address),
                                                   QString::fromStdString(an::formatDuration(layout_->t_ns - block.t_alloc)));
  } else {
    auto hole = firstEndingAfter(layout_->holes, bytes->first, [](const an::MapGap& g) { return std::pair(g.address, g.size); });
    if (hole != layout_->holes.end() && hole->address < bytes->second)
      text += (layout_->exact ? tr(": hole of %1") : tr(": gap of %1 (free, or blocks without a row)")).arg(bytesText(hole->size));
    else if (bytes->first >= layout_->span_from && bytes->first < layout_->span_to)
      text += tr(": the allocator's rounding and headers");
    else
      text += tr(": nothing live with a row");
  }
  QToolTip::showText(e->globalPosition().toPoint(), text, this);
  emit hoverText(text);
}

void HeapMapWidget::wheelEvent(QWheelEvent* e) {
  if (!history_) return;
  auto bytes = bytesAt(e->position());
  if (!bytes) return;
  const double steps = e->angleDelta().y() / 120.0;
  const double span = double(to_ - from_);
  const double next = std::clamp(span / std::pow(1.25, steps), 64.0, double(history_->region.to - history_->region.from));
  const double share = double(bytes->first - from_) / span;
  const double from = std::max(double(history_->region.from), double(bytes->first) - share * next);
  setView(uint64_t(from), uint64_t(std::min(double(history_->region.to), from + next)));
  e->accept();
}

void HeapMapWidget::keyPressEvent(QKeyEvent* e) {
  if (e->key() == Qt::Key_Backspace || e->key() == Qt::Key_Escape) return resetView();
  QWidget::keyPressEvent(e);
}

// ---- RatioChart ----

RatioChart::RatioChart(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setObjectName("ratioChart");
}

void RatioChart::setSeries(std::shared_ptr<const an::HeapHistory> history, std::vector<an::FragmentationPoint> rss,
                           int64_t from_ns, int64_t to_ns) {
  history_ = std::move(history);
  rss_ = std::move(rss);
  from_ = from_ns;
  to_ = std::max(to_ns, from_ns + 1);
  update();
}

void RatioChart::setCursor(int64_t t) {
  cursor_ = t;
  update();
}

QRectF RatioChart::plot() const {
  const double fh = fontMetrics().height();
  const double left = fontMetrics().horizontalAdvance("100%") + 10;
  return QRectF(left, fh + 6, std::max(10.0, width() - left - 10), std::max(10.0, height() - 2 * fh - 12));
}

double RatioChart::xOf(int64_t t) const {
  const QRectF r = plot();
  return r.left() + r.width() * double(t - from_) / double(to_ - from_);
}

int64_t RatioChart::timeAt(double x) const {
  const QRectF r = plot();
  return from_ + int64_t(std::clamp((x - r.left()) / r.width(), 0.0, 1.0) * double(to_ - from_));
}

void RatioChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  p.setRenderHint(QPainter::Antialiasing);
  const QRectF r = plot();
  const QColor text = palette().color(QPalette::Text);
  const QColor region = palette().color(QPalette::Highlight), heap(230, 130, 30);
  // The y axis up to the largest ratio shown (at least 5%), so a 2% ratio is not a flat line.
  double top = 0.05;
  if (history_)
    for (const an::MapPoint& m : history_->series) top = std::max(top, m.freeRatio());
  for (const auto& f : rss_) top = std::max(top, f.ratio);
  top = std::min(1.0, std::ceil(top * 20) / 20);
  auto y = [&](double v) { return r.bottom() - r.height() * v / top; };
  p.setPen(palette().color(QPalette::Mid));
  p.drawRect(r);
  p.setPen(text);
  p.drawText(QRectF(0, r.top() - 6, r.left() - 4, 14), Qt::AlignRight, QString("%1%").arg(top * 100, 0, 'f', 0));
  p.drawText(QRectF(0, r.bottom() - 8, r.left() - 4, 14), Qt::AlignRight, "0%");
  const double fh = fontMetrics().height();
  p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), fh), Qt::AlignLeft,
             QString::fromStdString(an::formatDuration(from_)));
  p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), fh), Qt::AlignRight, QString::fromStdString(an::formatDuration(to_)));
  // The legend: what each line is.
  const bool every = history_ && history_->everyBlock();
  QString regionName = every ? tr("free in this range: 1 - live / span (from every block)")
                             : tr("free in this range, from the blocks with a row only (not every block)");
  p.setPen(QPen(region, 2, every ? Qt::SolidLine : Qt::DashLine));
  p.drawLine(QPointF(r.left(), fh / 2 + 2), QPointF(r.left() + 18, fh / 2 + 2));
  p.setPen(text);
  const double w1 = fontMetrics().horizontalAdvance(regionName);
  p.drawText(QPointF(r.left() + 22, fh - 2), regionName);
  if (!rss_.empty()) {
    const double x = r.left() + 40 + w1;
    p.setPen(QPen(heap, 2));
    p.drawLine(QPointF(x, fh / 2 + 2), QPointF(x + 18, fh / 2 + 2));
    p.setPen(text);
    p.drawText(QPointF(x + 22, fh - 2), tr("heap: 1 - live / resident (RSS samples)"));
  }
  p.setClipRect(r.adjusted(0, -1, 0, 1));
  if (history_ && !history_->series.empty()) {
    QPainterPath path;
    bool started = false;
    double lastY = 0;
    for (const an::MapPoint& m : history_->series) {
      const double x = xOf(m.t_ns), v = y(m.freeRatio());
      if (!started) path.moveTo(x, v), started = true;
      else path.lineTo(x, lastY), path.lineTo(x, v);  // a step: the value holds until the next event
      lastY = v;
    }
    path.lineTo(xOf(to_), lastY);
    p.setPen(QPen(region, 1.5, every ? Qt::SolidLine : Qt::DashLine));
    p.drawPath(path);
  }
  if (!rss_.empty()) {
    QPainterPath path;
    path.moveTo(xOf(rss_[0].t_ns), y(rss_[0].ratio));
    for (const auto& f : rss_) path.lineTo(xOf(f.t_ns), y(f.ratio));
    p.setPen(QPen(heap, 1.5));
    p.drawPath(path);
  }
  p.setPen(QPen(text, 1, Qt::DotLine));
  p.drawLine(QPointF(xOf(cursor_), r.top()), QPointF(xOf(cursor_), r.bottom()));
}

void RatioChart::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton && plot().contains(e->position())) emit timeClicked(timeAt(e->position().x()));
}

void RatioChart::mouseMoveEvent(QMouseEvent* e) {
  if (!plot().contains(e->position())) return QToolTip::hideText();
  const int64_t t = timeAt(e->position().x());
  QString text = QString::fromStdString(an::formatDuration(t));
  if (history_ && !history_->series.empty()) {
    auto it = std::upper_bound(history_->series.begin(), history_->series.end(), t,
                               [](int64_t v, const an::MapPoint& m) { return v < m.t_ns; });
    if (it != history_->series.begin()) {
      const an::MapPoint& m = *std::prev(it);
      text += tr("\nin this range: %1 free of %2 (%3%), %4 holes, largest %5")
                  .arg(bytesText(m.span - std::min(m.span, m.live_bytes)), bytesText(m.span))
                  .arg(m.freeRatio() * 100, 0, 'f', 1)
                  .arg(QString::fromStdString(an::formatCount(m.holes)), bytesText(m.largest_hole));
    }
  }
  QToolTip::showText(e->globalPosition().toPoint(), text, this);
}

}  // namespace memledger::gui
