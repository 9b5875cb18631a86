#include "gui/charts_view.h"

#include <QButtonGroup>
#include <QComboBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QFontMetrics>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSpinBox>
#include <QSvgGenerator>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "analyzer/format.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
// The plot's margins are the timeline's, so that both time axes line up; the legend is a grid of
// cells above the plot.
constexpr double kLeft = 70, kRight = 12, kTop = 6, kBottom = 22, kCell = 250;
constexpr an::ChartKind kKinds[] = {an::ChartKind::Consumed, an::ChartKind::Allocations, an::ChartKind::Allocated,
                                    an::ChartKind::Temporary};

QString kindTitle(an::ChartKind k) {
  switch (k) {
    case an::ChartKind::Consumed: return QObject::tr("Consumed");
    case an::ChartKind::Allocations: return QObject::tr("Allocations");
    case an::ChartKind::Allocated: return QObject::tr("Allocated");
    case an::ChartKind::Temporary: return QObject::tr("Temporary");
  }
  return {};
}

QString timeText(int64_t ns) { return QString::fromStdString(an::formatDuration(ns)); }

// A colour per series, stable across zooms (by its key: a function keeps its colour when the
// ranking changes), distinct within one chart; "other" grey, the total in the text colour.
std::vector<QColor> seriesColors(const an::Chart& c) {
  static const QColor palette[] = {{0x2f, 0x80, 0xed}, {0xeb, 0x57, 0x57}, {0x27, 0xae, 0x60}, {0xf2, 0x99, 0x4a},
                                   {0x9b, 0x51, 0xe0}, {0x56, 0xcc, 0xf2}, {0xe8, 0x4a, 0x9b}, {0x6f, 0xcf, 0x97},
                                   {0xbb, 0x6b, 0xd9}, {0xf2, 0xc9, 0x4c}, {0x8d, 0x6e, 0x63}, {0x00, 0x96, 0x88}};
  constexpr size_t n = sizeof palette / sizeof palette[0];
  std::vector<QColor> out;
  std::vector<bool> used(n, false);
  for (const an::ChartSeries& s : c.series) {
    if (s.other) {
      out.emplace_back(0xa8, 0xa8, 0xb0);
      continue;
    }
    size_t i = qHash(QString::fromStdString(s.key)) % n;
    for (size_t tries = 0; tries < n && used[i]; ++tries) i = (i + 1) % n;
    used[i] = true;
    QColor col = palette[i];
    if (out.size() >= n) col = col.darker(140);  // more series than colours
    out.push_back(col);
  }
  return out;
}

double niceStep(double span, int ticks) {
  if (span <= 0) return 1;
  double raw = span / std::max(1, ticks);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}
}  // namespace

ChartCanvas::ChartCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setObjectName("chart-canvas");
  setMinimumHeight(200);
}

void ChartCanvas::setCharts(std::shared_ptr<const an::SiteCharts> charts) {
  charts_ = std::move(charts);
  update();
}
void ChartCanvas::setKind(an::ChartKind kind) {
  kind_ = kind;
  update();
}
void ChartCanvas::setView(int64_t from, int64_t to) {
  v0_ = from;
  v1_ = std::max(from + 1, to);
  update();
}
void ChartCanvas::setSelection(std::optional<std::pair<int64_t, int64_t>> selection) {
  selection_ = selection;
  update();
}
void ChartCanvas::setLiveAt(std::optional<int64_t> t) {
  liveAt_ = t;
  update();
}

const an::Chart* ChartCanvas::chart() const { return charts_ ? &(*charts_)[kind_] : nullptr; }

int ChartCanvas::legendColumns() const { return std::max(1, int((width() - kLeft - kRight) / kCell)); }

double ChartCanvas::legendHeight() const {
  const an::Chart* c = chart();
  if (!c || !c->available) return 0;
  const size_t cells = c->series.size() + 2;  // the title, the total, the series
  const size_t rows = (cells + size_t(legendColumns()) - 1) / size_t(legendColumns());
  return double(rows) * (QFontMetrics(legendFont()).height() + 2) + 6;
}

QFont ChartCanvas::legendFont() const {
  QFont f = font();
  f.setPointSizeF(std::max(6.0, f.pointSizeF() * 0.9));
  return f;
}

QRectF ChartCanvas::plotRect() const {
  const double top = kTop + legendHeight();
  return QRectF(kLeft, top, std::max(10.0, width() - kLeft - kRight), std::max(10.0, height() - top - kBottom));
}
double ChartCanvas::xOf(int64_t t) const {
  QRectF r = plotRect();
  return r.left() + r.width() * double(t - v0_) / double(std::max<int64_t>(1, v1_ - v0_));
}
int64_t ChartCanvas::timeAt(double x) const {
  QRectF r = plotRect();
  double f = std::clamp((x - r.left()) / r.width(), 0.0, 1.0);
  return v0_ + int64_t(f * double(v1_ - v0_));
}

QString ChartCanvas::valueText(int64_t v) const {
  const bool bytes = an::chartInBytes(kind_);
  QString text = QString::fromStdString(bytes ? an::formatBytes(std::llabs(v)) : an::formatCount(std::llabs(v)));
  if (charts_ && charts_->diff) return v > 0 ? "+" + text : v < 0 ? "-" + text : QStringLiteral("0");
  return v < 0 ? "-" + text : text;
}

QStringList ChartCanvas::valuesAt(int64_t t) const {
  const an::Chart* c = chart();
  if (!c || !c->available || charts_->t_ns.empty()) return {};
  const size_t k = charts_->pointAt(t);
  QStringList out{tr("total %1").arg(valueText(c->total[k]))};
  for (const an::ChartSeries& s : c->series) out << QString("%1 %2").arg(QString::fromStdString(s.label), valueText(s.values[k]));
  return out;
}

QStringList ChartCanvas::selectionText() const {
  const an::Chart* c = chart();
  if (!c || !c->available || !selection_ || charts_->t_ns.empty()) return {};
  const size_t a = charts_->pointAt(selection_->first), b = charts_->pointAt(selection_->second);
  auto line = [&](const QString& label, const std::vector<int64_t>& v) {
    return tr("%1: %2 \u2192 %3 (\u0394 %4)")
        .arg(label, valueText(v[a]), valueText(v[b]), (v[b] - v[a] > 0 ? "+" : "") + valueText(v[b] - v[a]).remove('+'));
  };
  QStringList out{line(tr("total"), c->total)};
  for (const an::ChartSeries& s : c->series) out << line(QString::fromStdString(s.label), s.values);
  return out;
}

void ChartCanvas::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QPalette pal = palette();
  p.fillRect(rect(), pal.base());
  pointsDrawn_ = 0;
  const QRectF plot = plotRect();
  const an::Chart* c = chart();
  if (!c || !c->available || charts_->t_ns.empty()) {
    p.setPen(pal.color(QPalette::PlaceholderText));
    QString why = !charts_ ? tr("Reading the per-site activity...")
                           : tr("%1 is not available: %2").arg(kindTitle(kind_), QString::fromStdString(c ? c->unavailable : ""));
    p.drawText(rect().adjusted(20, 20, -20, -20), Qt::AlignCenter | Qt::TextWordWrap, why);
    return;
  }
  const bool diff = charts_->diff;
  const std::vector<int64_t>& t = charts_->t_ns;
  // The points in view, one before and one after for the lines to reach the edges.
  size_t lo = charts_->pointAt(v0_), hi = std::min(t.size() - 1, charts_->pointAt(v1_) + 1);
  // The y range: the stack's top is the total; B − A spans the lowest to the highest line.
  int64_t ymin = 0, ymax = 1;
  for (size_t k = lo; k <= hi; ++k) {
    ymax = std::max(ymax, c->total[k]);
    if (diff) {
      ymin = std::min(ymin, c->total[k]);
      for (const an::ChartSeries& s : c->series) {
        ymax = std::max(ymax, s.values[k]);
        ymin = std::min(ymin, s.values[k]);
      }
    }
  }
  const bool bytes = an::chartInBytes(kind_);
  double unit = 1;
  if (bytes)
    while (double(std::max(ymax, -ymin)) / unit >= 1024 && unit < double(int64_t(1) << 50)) unit *= 1024;
  const double ystep = std::max(1.0, niceStep(double(ymax - ymin) / unit, 4) * unit);
  const double ytop = std::ceil(double(ymax) * 1.05 / ystep) * ystep;
  const double ybottom = ymin < 0 ? std::floor(double(ymin) * 1.05 / ystep) * ystep : 0;
  auto yOf = [&](double v) { return plot.bottom() - plot.height() * (v - ybottom) / (ytop - ybottom); };

  // Grid and axes.
  QColor grid = pal.color(QPalette::Text);
  grid.setAlpha(40);
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.9));
  p.setFont(small);
  for (double v = ybottom; v <= ytop + 1; v += ystep) {
    p.setPen(grid);
    p.drawLine(QPointF(plot.left(), yOf(v)), QPointF(plot.right(), yOf(v)));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(0, yOf(v) - 8, kLeft - 6, 16), Qt::AlignRight | Qt::AlignVCenter, valueText(int64_t(v)));
  }
  double tstep = niceStep(double(v1_ - v0_), std::max(2, int(plot.width() / 110)));
  for (double x = std::ceil(double(v0_) / tstep) * tstep; x <= double(v1_); x += tstep) {
    p.setPen(grid);
    p.drawLine(QPointF(xOf(int64_t(x)), plot.top()), QPointF(xOf(int64_t(x)), plot.bottom()));
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(xOf(int64_t(x)) - 50, plot.bottom() + 3, 100, kBottom - 3), Qt::AlignCenter, timeText(int64_t(x)));
  }
  if (diff) {
    p.setPen(QPen(pal.color(QPalette::Text), 1));
    p.drawLine(QPointF(plot.left(), yOf(0)), QPointF(plot.right(), yOf(0)));
  }

  // The series: stacked areas (largest at the bottom), or B − A lines.
  p.save();
  p.setClipRect(plot);
  p.setRenderHint(QPainter::Antialiasing);
  std::vector<double> base(hi - lo + 1, 0.0);
  const std::vector<QColor> colors = seriesColors(*c);
  for (size_t i = 0; i < c->series.size(); ++i) {
    const an::ChartSeries& s = c->series[i];
    const QColor color = colors[i];
    QPolygonF upper;
    for (size_t k = lo; k <= hi; ++k) upper << QPointF(xOf(t[k]), yOf(double(s.values[k]) + (diff ? 0 : base[k - lo])));
    pointsDrawn_ += upper.size();
    if (diff) {
      p.setPen(QPen(color, 1.8));
      p.drawPolyline(upper);
      continue;
    }
    QPolygonF area = upper;
    for (size_t k = hi + 1; k-- > lo;) area << QPointF(xOf(t[k]), yOf(base[k - lo]));
    QColor fill = color;
    fill.setAlpha(170);
    p.setPen(Qt::NoPen);
    p.setBrush(fill);
    p.drawPolygon(area);
    for (size_t k = lo; k <= hi; ++k) base[k - lo] += double(s.values[k]);
  }
  QPolygonF total;
  for (size_t k = lo; k <= hi; ++k) total << QPointF(xOf(t[k]), yOf(double(c->total[k])));
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(pal.color(QPalette::Text), diff ? 2.4 : 1.6));
  p.drawPolyline(total);
  p.restore();
  p.setPen(pal.color(QPalette::Text));
  p.drawRect(plot);

  // The selection, the live-at instant, the hovered point.
  if (selection_) {
    double x0 = std::max(plot.left(), xOf(selection_->first)), x1 = std::min(plot.right(), xOf(selection_->second));
    if (x1 >= x0) {
      QColor s = pal.color(QPalette::Highlight);
      s.setAlpha(60);
      p.fillRect(QRectF(x0, plot.top(), std::max(1.0, x1 - x0), plot.height()), s);
    }
  }
  if (liveAt_ && *liveAt_ >= v0_ && *liveAt_ <= v1_) {
    p.setPen(QPen(pal.color(QPalette::Highlight), 1.5, Qt::DashLine));
    p.drawLine(QPointF(xOf(*liveAt_), plot.top()), QPointF(xOf(*liveAt_), plot.bottom()));
    p.drawText(QPointF(xOf(*liveAt_) + 4, plot.top() + 12), tr("live at %1").arg(timeText(*liveAt_)));
  }
  std::optional<size_t> shown;
  if (hover_) shown = charts_->pointAt(*hover_);
  if (shown) {
    QColor h = pal.color(QPalette::Text);
    h.setAlpha(120);
    p.setPen(QPen(h, 1));
    p.drawLine(QPointF(xOf(t[*shown]), plot.top()), QPointF(xOf(t[*shown]), plot.bottom()));
  }

  // The legend above the plot: each series with its value at the hovered point (else at the
  // window's end).
  const size_t at = shown.value_or(hi);
  p.setFont(legendFont());
  const double line = QFontMetrics(legendFont()).height() + 2;
  const int columns = legendColumns();
  int cell = 0;
  auto next = [&] {
    QRectF r(kLeft + (cell % columns) * kCell, kTop + (cell / columns) * line, kCell - 12, line);
    ++cell;
    return r;
  };
  QFont bold = legendFont();
  bold.setBold(true);
  p.setFont(bold);
  p.setPen(pal.color(QPalette::Text));
  QString head = diff ? tr("%1, B \u2212 A").arg(kindTitle(kind_)) : kindTitle(kind_);
  p.drawText(next(), Qt::AlignLeft | Qt::AlignVCenter, tr("%1 at %2").arg(head, timeText(t[at])));
  p.setFont(legendFont());
  auto entry = [&](const QColor& color, const QString& label, int64_t v) {
    QRectF r = next();
    p.fillRect(QRectF(r.left(), r.top() + 3, 10, line - 6), color);
    QString value = valueText(v);
    double vw = p.fontMetrics().horizontalAdvance(value);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(QRectF(r.left() + 14, r.top(), r.width() - 18 - vw, line), Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(label, Qt::ElideRight, int(r.width() - 22 - vw)));
    p.drawText(r, Qt::AlignRight | Qt::AlignVCenter, value);
  };
  entry(pal.color(QPalette::Text), tr("total"), c->total[at]);
  for (size_t i = 0; i < c->series.size(); ++i)
    entry(colors[i], QString::fromStdString(c->series[i].label), c->series[i].values[at]);
}

void ChartCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  dragging_ = true;
  dragX_ = e->position().x();
  dragT_ = timeAt(dragX_);
}

void ChartCanvas::mouseMoveEvent(QMouseEvent* e) {
  const int64_t t = timeAt(e->position().x());
  if (dragging_ && std::abs(e->position().x() - dragX_) >= 3) {
    selection_ = std::make_pair(std::min(t, dragT_), std::max(t, dragT_));
    emit hoverText(selectionText().join("   "));
    update();
    return;
  }
  if (!plotRect().contains(e->position())) return;
  hover_ = t;
  QStringList values = valuesAt(t);
  if (!values.isEmpty() && charts_) values.prepend(timeText(charts_->t_ns[charts_->pointAt(t)]));
  emit hoverText(values.join("   "));
  update();
}

void ChartCanvas::mouseReleaseEvent(QMouseEvent* e) {
  if (!dragging_) return;
  dragging_ = false;
  if (std::abs(e->position().x() - dragX_) < 3) {
    if (plotRect().contains(e->position())) emit timeClicked(timeAt(e->position().x()));
    return;
  }
  if (selection_) emit rangeSelected(selection_->first, selection_->second);
}

void ChartCanvas::leaveEvent(QEvent*) {
  hover_.reset();
  update();
}

void ChartCanvas::keyPressEvent(QKeyEvent* e) {
  if (e->key() >= Qt::Key_1 && e->key() <= Qt::Key_4) {
    emit kindRequested(kKinds[e->key() - Qt::Key_1]);
    return;
  }
  QWidget::keyPressEvent(e);
}

ChartsView::ChartsView(Document* doc, QWidget* parent)
    : QWidget(parent),
      doc_(doc),
      canvas_(new ChartCanvas(this)),
      kinds_(new QButtonGroup(this)),
      group_(new QComboBox(this)),
      top_(new QSpinBox(this)),
      caption_(new QLabel(this)),
      debounce_(new QTimer(this)) {
  setObjectName("charts");
  auto* bar = new QHBoxLayout;
  for (an::ChartKind k : kKinds) {
    auto* b = new QPushButton(QString("%1 %2").arg(int(k) + 1).arg(kindTitle(k)), this);
    b->setCheckable(true);
    b->setToolTip(tr("Key %1 in the chart").arg(int(k) + 1));
    kinds_->addButton(b, int(k));
    bar->addWidget(b);
  }
  kinds_->setExclusive(true);
  kinds_->button(0)->setChecked(true);
  group_->addItem(tr("by function"), int(an::ChartGroup::Function));
  group_->addItem(tr("by site"), int(an::ChartGroup::Site));
  top_->setRange(0, 30);
  top_->setValue(10);
  top_->setPrefix(tr("top "));
  top_->setToolTip(tr("How many functions (or sites) are drawn on their own; the rest is \"other\". "
                      "Export: File \u2192 Export view (PNG or SVG)"));
  bar->addSpacing(12);
  bar->addWidget(group_);
  bar->addWidget(top_);
  bar->addWidget(caption_, 1);
  caption_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  layout->addWidget(canvas_, 1);
  debounce_->setSingleShot(true);
  debounce_->setInterval(80);
  connect(debounce_, &QTimer::timeout, this, &ChartsView::requestNow);
  connect(kinds_, &QButtonGroup::idClicked, this, [this](int id) { setKind(an::ChartKind(id)); });
  connect(canvas_, &ChartCanvas::kindRequested, this, &ChartsView::setKind);
  connect(group_, &QComboBox::currentIndexChanged, this, [this] { requestNow(); });
  connect(top_, &QSpinBox::valueChanged, this, [this] { debounce_->start(); });
  connect(canvas_, &ChartCanvas::rangeSelected, this, &ChartsView::rangeSelected);
  connect(canvas_, &ChartCanvas::timeClicked, this, &ChartsView::timeClicked);
  connect(canvas_, &ChartCanvas::hoverText, this, &ChartsView::hoverText);
  connect(doc_, &Document::chartsChanged, this, [this] {
    auto charts = doc_->charts();
    if (charts && toEnd()) canvas_->setView(from_, std::max(to_ == INT64_MAX ? 0 : to_, charts->to_ns));
    canvas_->setCharts(charts);
    updateCaption();
  });
  connect(doc_, &Document::rangeChanged, this, &ChartsView::onRange);
  connect(doc_, &Document::opened, this, [this] {
    from_ = 0;
    to_ = doc_->data() ? doc_->data()->end_ns + 1 : INT64_MAX;
    canvas_->setView(from_, to_);
    canvas_->setCharts(nullptr);
    canvas_->setSelection(std::nullopt);
    canvas_->setLiveAt(std::nullopt);
    if (isVisible()) requestNow();
  });
}

bool ChartsView::toEnd() const { return to_ == INT64_MAX || (doc_->data() && to_ > doc_->data()->end_ns); }

void ChartsView::setKind(an::ChartKind kind) {
  if (QAbstractButton* b = kinds_->button(int(kind))) b->setChecked(true);
  canvas_->setKind(kind);
  updateCaption();
}

void ChartsView::setGroup(an::ChartGroup group) { group_->setCurrentIndex(group_->findData(int(group))); }

void ChartsView::setView(int64_t from, int64_t to) {
  from_ = from;
  to_ = to;
  canvas_->setView(from, to);
  if (isVisible()) debounce_->start();
}

void ChartsView::requestNow() {
  debounce_->stop();
  if (!doc_->data()) return;
  an::ChartRequest req;
  req.from_ns = from_;
  // A window to the end of the run is to the end of whichever recording is shown (B may run
  // longer than A, whose time axis the timeline has).
  req.to_ns = toEnd() ? INT64_MAX : to_;
  req.max_points = size_t(std::max(50.0, canvas_->plotRect().width()));  // about one point per pixel
  req.top = size_t(top_->value());
  req.group = an::ChartGroup(group_->currentData().toInt());
  // The same window, resolution and grouping as asked last: the charts in hand (or on the way)
  // are these.
  const auto key = std::make_tuple(req.from_ns, req.to_ns, req.max_points, req.top, int(req.group));
  if (last_ == key && doc_->charts()) return;
  last_ = key;
  doc_->requestCharts(req);
}

void ChartsView::showEvent(QShowEvent*) {
  if (doc_->data()) requestNow();
}

void ChartsView::resizeEvent(QResizeEvent*) {
  if (isVisible()) debounce_->start();
}

void ChartsView::onRange() {
  auto r = doc_->range();
  if (!r) return;
  if (r->ranged()) canvas_->setSelection(std::make_pair(r->from_ns.value_or(0), r->to_ns.value_or(to_)));
  else canvas_->setSelection(std::nullopt);
  canvas_->setLiveAt(r->live_at_ns);
  updateCaption();
}

void ChartsView::updateCaption() {
  auto charts = doc_->charts();
  QStringList parts;
  if (charts && charts->diff) parts << tr("B \u2212 A per function: above zero B has more, below it less.");
  if (charts)
    parts << tr("%1 points, each %2 (buckets of %3)")
                 .arg(charts->t_ns.size())
                 .arg(timeText(charts->interval_ns), timeText(charts->bucket_ns));
  QStringList sel = canvas_->selectionText();
  if (!sel.isEmpty()) parts << tr("Selection: %1").arg(sel.front());
  caption_->setText(parts.join("  "));
}

bool ChartsView::exportImage(const QString& path) {
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(canvas_->size());
    svg.setViewBox(canvas_->rect());
    svg.setTitle("memledger chart");
    QPainter p(&svg);
    canvas_->render(&p);
    return p.end();
  }
  return canvas_->grab().save(path);
}

}  // namespace memledger::gui
