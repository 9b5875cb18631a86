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
#include <cstdlib>

#include "analyzer/format.h"
#include "gui/call_tree_model.h"
#include "gui/call_tree_view.h"

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

const std::vector<an::TreeCost>* FlameGraphCanvas::changes() const {
  if (!range_ || !range_->diff()) return nullptr;
  const auto& c = bottomUp_ ? range_->bottom_up_change : range_->top_down_change;
  return c.size() == tree()->nodes.size() ? &c : nullptr;
}

int64_t FlameGraphCanvas::widthCost(int32_t node) const {
  // B − A: a box is as wide as the changes below it (growth and shrink alike), not their net.
  if (const auto* c = changes()) return an::costOf((*c)[size_t(node)], metric_);
  return an::costOf(tree()->nodes[size_t(node)].total, metric_);
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
  auto cost = [&](int32_t n) { return widthCost(n); };
  const int64_t rootCost = cost(zoom_);
  if (rootCost <= 0) return;
  // A row fits the font (a large or scaled font must not clip the names).
  const double rowHeight = std::max(kMinRowHeight, double(fontMetrics().height()) + 4);
  auto yOf = [&](int depth) { return icicle_ ? depth * rowHeight : height() - (depth + 1) * rowHeight; };
  auto matches = [&](int32_t n) {
    return !search_.isEmpty() && QString::fromStdString(t->symbol(n)).contains(search_, Qt::CaseInsensitive);
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
    const std::span<const int32_t> children = t->children(it.node);
    kids.assign(children.begin(), children.end());
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
  QString loc = locationText(n.frame);
  if (const auto* c = changes()) {
    const bool counts = metric_ == an::TreeMetric::Count || metric_ == an::TreeMetric::Temporary;
    auto text = [&](const an::TreeCost& x, an::TreeMetric m) {
      return amountText(an::costOf(x, m), m != an::TreeMetric::Count && m != an::TreeMetric::Temporary, true);
    };
    return QString("<b>%1</b><br>%2B \u2212 A %3: %4 (changes below: %5)<br>peak %6 &middot; leaked %7 &middot; "
                   "allocated %8 in %9 allocations &middot; temporary %10")
        .arg(QString::fromStdString(t->symbol(n)).toHtmlEscaped(), loc.isEmpty() ? QString() : loc.toHtmlEscaped() + "<br>",
             an::treeMetricName(metric_), text(n.total, metric_),
             amountText(an::costOf((*c)[size_t(node)], metric_), !counts, false))
        .arg(text(n.total, an::TreeMetric::Peak), text(n.total, an::TreeMetric::Leaked),
             text(n.total, an::TreeMetric::Allocated), text(n.total, an::TreeMetric::Count),
             text(n.total, an::TreeMetric::Temporary));
  }
  const int64_t root = std::max<int64_t>(1, an::costOf(t->nodes[0].total, metric_));
  const int64_t v = an::costOf(n.total, metric_);
  return QString("<b>%1</b><br>%2%3: %4 (%5 B, %6% of all)<br>peak %7 &middot; leaked %8 &middot; allocated %9 in %10 "
                 "allocations &middot; temporary %11")
      .arg(QString::fromStdString(t->symbol(n)).toHtmlEscaped(), loc.isEmpty() ? QString() : loc.toHtmlEscaped() + "<br>",
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
               range_ && t && !t->nodes.empty() ? tr("Nothing to show for %1").arg(an::treeMetricName(metric_))
                                                : tr("Building call trees..."));  // no nodes: let go (Document)
    return;
  }
  const bool searching = !search_.isEmpty();
  const auto* changed = changes();
  for (const Box& b : boxes_) {
    const an::CallNode& n = t->nodes[size_t(b.node)];
    QColor c;
    if (changed) {
      // Red for net growth, blue for net shrink, paler where the changes below mostly cancel.
      const int64_t net = an::costOf(n.total, metric_), all = std::max<int64_t>(1, widthCost(b.node));
      const double share = 0.35 + 0.65 * double(std::llabs(net)) / double(all);
      const QColor base = net >= 0 ? QColor(220, 60, 45) : QColor(45, 100, 215);
      c = QColor::fromRgbF(1 - (1 - base.redF()) * share, 1 - (1 - base.greenF()) * share, 1 - (1 - base.blueF()) * share);
    } else if (b.node == 0) c = QColor(0xa0, 0xa0, 0xa8);
    else {
      // Warm colours, stable per symbol; frames without a symbol grey.
      uint h = qHash(QString::fromStdString(t->symbol(n)));
      c = t->symbol(n).rfind("??", 0) == 0 ? QColor(0xb0, 0xb0, 0xb0) : QColor::fromHsv(int(10 + h % 45), 120 + int(h % 90), 235);
    }
    if (searching) c = b.match ? QColor(0xd0, 0x40, 0xd0) : c.lighter(130).toHsv();
    if (searching && !b.match) c.setHsv(c.hue(), c.saturation() / 3, c.value());
    p.fillRect(b.rect, c);
    if (b.rect.width() > 28) {
      p.setPen(Qt::black);
      QString label = b.node == 0 ? (changed ? tr("all changes") : tr("all sites")) : QString::fromStdString(t->symbol(n));
      if (changed) {
        const bool bytes = metric_ != an::TreeMetric::Count && metric_ != an::TreeMetric::Temporary;
        label += "  " + amountText(an::costOf(n.total, metric_), bytes, true);
      }
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
  note_ = new QLabel(this);
  note_->setWordWrap(true);
  note_->hide();
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
  layout->addWidget(note_);
  // Deep stacks (an interpreter's) are taller than the window: the canvas scrolls vertically.
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setWidget(canvas_);
  layout->addWidget(scroll, 1);
  connect(metric_, &QComboBox::currentIndexChanged, this, [this] {
    canvas_->setMetric(an::TreeMetric(metric_->currentData().toInt()));
  });
  connect(inverted_, &QCheckBox::toggled, this, [this](bool on) {
    rebuild();
    emit invertedChanged(on);
  });
  connect(icicle_, &QCheckBox::toggled, canvas_, &FlameGraphCanvas::setIcicle);
  connect(threshold_, &QDoubleSpinBox::valueChanged, canvas_, &FlameGraphCanvas::setThreshold);
  connect(reset, &QPushButton::clicked, this, [this] { canvas_->zoomTo(0); });
  connect(search_, &QLineEdit::textChanged, this, [this, found](const QString& t) {
    canvas_->setSearch(t);
    canvas_->repaint();
    const an::CallTree* tree = canvas_->tree();
    if (t.isEmpty() || !tree) return found->clear();
    int64_t root = std::max<int64_t>(1, canvas_->widthCost(0));
    found->setText(tr("matched %1%").arg(100.0 * double(canvas_->matchedCost()) / double(root), 0, 'f', 1));
  });
}

void FlameGraphView::setRange(std::shared_ptr<const RangeData> range) {
  range_ = std::move(range);
  QString note = rangeNote(range_.get());
  if (range_ && range_->diff())
    note += tr(" A box is as wide as the changes below it, growth and shrink alike.");
  note_->setText(note);
  note_->setVisible(!note.isEmpty());
  // The peak metric is what the peak column is: the run's, the selection's, or live at a time.
  metric_->setItemText(metric_->findData(int(an::TreeMetric::Peak)),
                       range_ ? costHeader(kPeakColumn, range_.get()).remove(QString::fromUtf8("\u0394 ")).toLower()
                              : QString("peak"));
  rebuild();
}

bool FlameGraphView::inverted() const { return inverted_->isChecked(); }

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
