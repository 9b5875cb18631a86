#include "gui/flame_graph.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QMouseEvent>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QSvgGenerator>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

#include "analyzer/format.h"
#include "gui/call_tree_model.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
constexpr double kMinRowHeight = 18;

QString amountText(int64_t v, an::TreeMetric m) {
  bool counts = m == an::TreeMetric::Count || m == an::TreeMetric::Temporary;
  return QString::fromStdString(counts ? an::formatCount(v) : an::formatBytes(v));
}
}  // namespace

FlameGraphCanvas::FlameGraphCanvas(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setFocusPolicy(Qt::StrongFocus);
  setObjectName("flamegraph-canvas");
}

const an::CallTree* FlameGraphCanvas::tree() const {
  if (!range_) return nullptr;
  return bottomUp_ ? &range_->bottom_up : &range_->top_down;
}

void FlameGraphCanvas::setTree(std::shared_ptr<const RangeData> range, bool bottomUp) {
  range_ = std::move(range);
  bottomUp_ = bottomUp;
  zoom_ = 0;
  dirty_ = true;
  update();
}
void FlameGraphCanvas::setMetric(an::TreeMetric m) { metric_ = m; dirty_ = true; update(); }
void FlameGraphCanvas::setIcicle(bool icicle) { icicle_ = icicle; dirty_ = true; update(); }
void FlameGraphCanvas::setSearch(const QString& text) { search_ = text; dirty_ = true; update(); }
void FlameGraphCanvas::setThreshold(double percent) { threshold_ = percent; dirty_ = true; update(); }
void FlameGraphCanvas::zoomTo(int32_t node) {
  const an::CallTree* t = tree();
  zoom_ = t && node >= 0 && size_t(node) < t->nodes.size() ? node : 0;
  dirty_ = true;
  update();
}
void FlameGraphCanvas::resizeEvent(QResizeEvent*) { dirty_ = true; }

void FlameGraphCanvas::layoutBoxes() {
  dirty_ = false;
  boxes_.clear();
  matchedCost_ = 0;
  const an::CallTree* t = tree();
  if (!t || t->nodes.empty()) return;
  const double w = width();
  auto cost = [&](int32_t n) { return an::costOf(t->nodes[size_t(n)].total, metric_); };
  const int64_t rootCost = cost(zoom_);
  if (rootCost <= 0) return;
  // A row fits the font (a large or scaled font must not clip the names).
  const double rowHeight = std::max(kMinRowHeight, double(fontMetrics().height()) + 4);
  auto yOf = [&](int depth) { return icicle_ ? depth * rowHeight : height() - (depth + 1) * rowHeight; };
  auto matches = [&](int32_t n) {
    return !search_.isEmpty() && QString::fromStdString(t->nodes[size_t(n)].symbol).contains(search_, Qt::CaseInsensitive);
  };
  // The zoomed frame's ancestors, full width.
  std::vector<int32_t> chain;
  for (int32_t n = zoom_; n >= 0; n = t->nodes[size_t(n)].parent) chain.push_back(n);
  std::reverse(chain.begin(), chain.end());
  int depth = 0;
  for (size_t i = 0; i + 1 < chain.size(); ++i, ++depth)
    boxes_.push_back({chain[i], QRectF(0, yOf(depth), w, rowHeight - 1), matches(chain[i])});
  const int64_t minCost = std::max<int64_t>(1, int64_t(double(rootCost) * threshold_ / 100.0));
  struct Item {
    int32_t node;
    double x, width;
    int depth;
    bool underMatch;
  };
  std::vector<Item> todo{{zoom_, 0, w, depth, false}};
  int rows = depth;
  std::vector<int32_t> kids;
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    bool m = matches(it.node);
    if (m && !it.underMatch) matchedCost_ += cost(it.node);
    boxes_.push_back({it.node, QRectF(it.x, yOf(it.depth), it.width, rowHeight - 1), m});
    rows = std::max(rows, it.depth + 1);
    kids.assign(t->nodes[size_t(it.node)].children.begin(), t->nodes[size_t(it.node)].children.end());
    std::sort(kids.begin(), kids.end(), [&](int32_t a, int32_t b) { return cost(a) > cost(b); });
    double x = it.x;
    const int64_t parentCost = std::max<int64_t>(1, cost(it.node));
    for (int32_t k : kids) {
      int64_t c = cost(k);
      if (c < minCost) break;  // sorted: the rest are smaller
      double kw = it.width * double(c) / double(parentCost);
      if (kw < 1.0) break;     // narrower than a pixel: pruned
      todo.push_back({k, x, kw, it.depth + 1, it.underMatch || m});
      x += kw;
    }
  }
  setMinimumHeight(int((rows + 1) * rowHeight));
}

QString FlameGraphCanvas::tooltipFor(int32_t node) const {
  const an::CallTree* t = tree();
  if (!t || node < 0 || size_t(node) >= t->nodes.size()) return {};
  const an::CallNode& n = t->nodes[size_t(node)];
  const int64_t root = std::max<int64_t>(1, an::costOf(t->nodes[0].total, metric_));
  const int64_t v = an::costOf(n.total, metric_);
  QString loc = locationText(n.frame);
  return QString("<b>%1</b><br>%2%3: %4 (%5 B, %6% of all)<br>peak %7 &middot; leaked %8 &middot; allocated %9 in %10 "
                 "allocations &middot; temporary %11")
      .arg(QString::fromStdString(n.symbol).toHtmlEscaped(), loc.isEmpty() ? QString() : loc.toHtmlEscaped() + "<br>",
           an::treeMetricName(metric_), amountText(v, metric_))
      .arg(QString::fromStdString(an::formatCount(v)))
      .arg(100.0 * double(v) / double(root), 0, 'f', 2)
      .arg(amountText(n.total.peak, an::TreeMetric::Peak), amountText(n.total.leaked, an::TreeMetric::Leaked),
           amountText(n.total.allocated, an::TreeMetric::Allocated), amountText(n.total.count, an::TreeMetric::Count),
           amountText(n.total.temporary, an::TreeMetric::Temporary));
}

void FlameGraphCanvas::paintEvent(QPaintEvent*) {
  if (dirty_) layoutBoxes();
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const an::CallTree* t = tree();
  if (!t || boxes_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter,
               range_ ? tr("Nothing to show for %1").arg(an::treeMetricName(metric_)) : tr("Building call trees..."));
    return;
  }
  const bool searching = !search_.isEmpty();
  for (const Box& b : boxes_) {
    const an::CallNode& n = t->nodes[size_t(b.node)];
    QColor c;
    if (b.node == 0) c = QColor(0xa0, 0xa0, 0xa8);
    else {
      // Warm colours, stable per symbol; frames without a symbol grey.
      uint h = qHash(QString::fromStdString(n.symbol));
      c = n.symbol.rfind("??", 0) == 0 ? QColor(0xb0, 0xb0, 0xb0) : QColor::fromHsv(int(10 + h % 45), 120 + int(h % 90), 235);
    }
    if (searching) c = b.match ? QColor(0xd0, 0x40, 0xd0) : c.lighter(130).toHsv();
    if (searching && !b.match) c.setHsv(c.hue(), c.saturation() / 3, c.value());
    p.fillRect(b.rect, c);
    if (b.rect.width() > 28) {
      p.setPen(Qt::black);
      QString label = b.node == 0 ? tr("all sites") : QString::fromStdString(n.symbol);
      p.drawText(b.rect.adjusted(3, 0, -2, 0), Qt::AlignLeft | Qt::AlignVCenter,
                 p.fontMetrics().elidedText(label, Qt::ElideRight, int(b.rect.width() - 5)));
    }
  }
}

const FlameGraphCanvas::Box* FlameGraphCanvas::boxAt(QPointF pt) const {
  for (const Box& b : boxes_)
    if (b.rect.contains(pt)) return &b;
  return nullptr;
}

void FlameGraphCanvas::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  if (const Box* b = boxAt(e->position())) zoomTo(b->node);
}

void FlameGraphCanvas::mouseMoveEvent(QMouseEvent* e) {
  const Box* b = boxAt(e->position());
  if (b) QToolTip::showText(e->globalPosition().toPoint(), tooltipFor(b->node), this);
  else QToolTip::hideText();
}

void FlameGraphCanvas::keyPressEvent(QKeyEvent* e) {
  const an::CallTree* t = tree();
  if (t && (e->key() == Qt::Key_Backspace || e->key() == Qt::Key_Escape) && zoom_ > 0) {
    zoomTo(e->key() == Qt::Key_Escape ? 0 : t->nodes[size_t(zoom_)].parent);
    return;
  }
  QWidget::keyPressEvent(e);
}

FlameGraphView::FlameGraphView(QWidget* parent)
    : QWidget(parent),
      canvas_(new FlameGraphCanvas(this)),
      metric_(new QComboBox(this)),
      inverted_(new QCheckBox(tr("Inverted (bottom-up)"), this)),
      icicle_(new QCheckBox(tr("Icicle"), this)),
      search_(new QLineEdit(this)),
      threshold_(new QDoubleSpinBox(this)) {
  setObjectName("flamegraph");
  for (an::TreeMetric m : {an::TreeMetric::Peak, an::TreeMetric::Leaked, an::TreeMetric::Allocated,
                           an::TreeMetric::Count, an::TreeMetric::Temporary})
    metric_->addItem(an::treeMetricName(m), int(m));
  icicle_->setChecked(true);
  search_->setPlaceholderText(tr("Search"));
  search_->setClearButtonEnabled(true);
  threshold_->setRange(0, 50);
  threshold_->setDecimals(1);
  threshold_->setSingleStep(0.5);
  threshold_->setValue(0.1);
  threshold_->setSuffix(" %");
  threshold_->setToolTip(tr("Hide frames costing less than this share of the shown root"));
  auto* reset = new QPushButton(tr("Reset zoom"), this);
  auto* found = new QLabel(this);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Metric"), this));
  bar->addWidget(metric_);
  bar->addWidget(inverted_);
  bar->addWidget(icicle_);
  bar->addWidget(new QLabel(tr("Threshold"), this));
  bar->addWidget(threshold_);
  bar->addWidget(search_, 1);
  bar->addWidget(found);
  bar->addWidget(reset);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  // Deep stacks (an interpreter's) are taller than the window: the canvas scrolls vertically.
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(canvas_);
  layout->addWidget(scroll, 1);
  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    canvas_->setMetric(an::TreeMetric(metric_->currentData().toInt()));
  });
  connect(inverted_, &QCheckBox::toggled, this, [this] { rebuild(); });
  connect(icicle_, &QCheckBox::toggled, canvas_, &FlameGraphCanvas::setIcicle);
  connect(threshold_, &QDoubleSpinBox::valueChanged, canvas_, &FlameGraphCanvas::setThreshold);
  connect(reset, &QPushButton::clicked, this, [this] { canvas_->zoomTo(0); });
  connect(search_, &QLineEdit::textChanged, this, [this, found](const QString& t) {
    canvas_->setSearch(t);
    canvas_->repaint();
    const an::CallTree* tree = canvas_->tree();
    if (t.isEmpty() || !tree) return found->clear();
    int64_t root = std::max<int64_t>(1, an::costOf(tree->nodes[0].total, canvas_->metric()));
    found->setText(tr("matched %1%").arg(100.0 * double(canvas_->matchedCost()) / double(root), 0, 'f', 1));
  });
}

void FlameGraphView::setRange(std::shared_ptr<const RangeData> range) {
  range_ = std::move(range);
  rebuild();
}

void FlameGraphView::setMetric(an::TreeMetric m) { metric_->setCurrentIndex(metric_->findData(int(m))); }

void FlameGraphView::rebuild() {
  canvas_->setTree(range_, inverted_->isChecked());
  canvas_->setMetric(an::TreeMetric(metric_->currentData().toInt()));
}

bool FlameGraphView::exportImage(const QString& path) {
  if (path.endsWith(".svg", Qt::CaseInsensitive)) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(canvas_->size());
    svg.setViewBox(canvas_->rect());
    svg.setTitle("memledger flame graph");
    QPainter p(&svg);
    canvas_->render(&p);
    return p.end();
  }
  return canvas_->grab().save(path);
}

}  // namespace memledger::gui
