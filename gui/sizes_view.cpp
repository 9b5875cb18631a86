#include "gui/sizes_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

#include "analyzer/format.h"
#include "gui/leaks_view.h"  // stackHtml

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
QString bytesText(uint64_t b) { return QString::fromStdString(an::formatBytes(int64_t(b))); }
QString rangeText(const an::SizeBucket& b) {
  return b.to <= 1 ? QString("0 - 1 B") : bytesText(b.from) + QString::fromUtf8(" to < ") + bytesText(b.to + 1);
}
}  // namespace

SizeBars::SizeBars(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(160);
}

void SizeBars::setHistogram(const an::SizeHistogram* h) {
  h_ = h;
  selected_ = -1;
  update();
}

void SizeBars::select(int bucket) {
  if (!h_ || bucket < 0 || size_t(bucket) >= h_->buckets.size()) return;
  selected_ = bucket;
  update();
  emit bucketSelected(bucket);
}

QRect SizeBars::plot() const {
  const int fh = fontMetrics().height();
  return rect().adjusted(fontMetrics().horizontalAdvance("000000") + 12, fh + 8, -12, -(2 * fh + 10));
}

// One slot per power of two from the smallest bucket to the largest, empty ones included, so
// the gaps between sizes show.
QRect SizeBars::barRect(int bucket) const {
  if (!h_ || bucket < 0 || size_t(bucket) >= h_->buckets.size()) return {};
  const int first = an::sizeBucketIndex(h_->buckets.front().from), last = an::sizeBucketIndex(h_->buckets.back().from);
  const QRect r = plot();
  const double slot = double(r.width()) / (last - first + 1);
  int64_t most = 1;
  for (const auto& b : h_->buckets) most = std::max(most, b.count);
  const auto& b = h_->buckets[size_t(bucket)];
  const int height = std::max(1, int(double(r.height()) * double(b.count) / double(most)));
  const int x = r.left() + int(slot * (an::sizeBucketIndex(b.from) - first));
  return QRect(x + 2, r.bottom() - height + 1, std::max(2, int(slot) - 4), height);
}

void SizeBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect r = plot();
  p.setPen(palette().color(QPalette::Text));
  if (!h_ || h_->buckets.empty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("No allocations in this range."));
    return;
  }
  int64_t most = 1;
  for (const auto& b : h_->buckets) most = std::max(most, b.count);
  p.drawLine(r.bottomLeft(), r.bottomRight());
  p.drawText(QRect(0, r.top() - fontMetrics().height() - 4, r.left() + 200, fontMetrics().height()), Qt::AlignLeft,
             tr("blocks (max %1)").arg(QString::fromStdString(an::formatCount(most))));
  const QColor bar = palette().color(QPalette::Highlight);
  const int fh = fontMetrics().height();
  int lastLabelRight = -1;
  for (size_t i = 0; i < h_->buckets.size(); ++i) {
    const QRect br = barRect(int(i));
    p.fillRect(br, int(i) == selected_ ? bar.darker(150) : bar);
    // Labels under the bars, skipped where they would overlap the previous one.
    const QString label = bytesText(h_->buckets[i].from);
    const int w = fontMetrics().horizontalAdvance(label);
    const int x = br.center().x() - w / 2;
    if (x > lastLabelRight + 4) {
      p.drawText(QRect(x, r.bottom() + 4, w, fh), Qt::AlignCenter, label);
      lastLabelRight = x + w;
    }
    const QString count = QString::fromStdString(an::formatCount(h_->buckets[i].count));
    if (fontMetrics().horizontalAdvance(count) <= br.width() + 8)
      p.drawText(QRect(br.left() - 4, br.top() - fh - 2, br.width() + 8, fh), Qt::AlignCenter, count);
  }
  p.drawText(QRect(r.left(), r.bottom() + fh + 6, r.width(), fh), Qt::AlignCenter, tr("allocation size (power-of-two buckets)"));
}

void SizeBars::mousePressEvent(QMouseEvent* e) {
  if (!h_) return;
  for (size_t i = 0; i < h_->buckets.size(); ++i) {
    QRect column = barRect(int(i));
    column.setTop(plot().top());
    if (column.contains(e->position().toPoint())) return select(int(i));
  }
}

void SizeBars::mouseMoveEvent(QMouseEvent* e) {
  if (!h_) return;
  for (size_t i = 0; i < h_->buckets.size(); ++i) {
    QRect column = barRect(int(i));
    column.setTop(plot().top());
    if (column.contains(e->position().toPoint())) {
      const auto& b = h_->buckets[i];
      QToolTip::showText(e->globalPosition().toPoint(),
                         tr("%1: %2 blocks, %3 (%4 sites)")
                             .arg(rangeText(b), QString::fromStdString(an::formatCount(b.count)), bytesText(uint64_t(b.bytes)))
                             .arg(b.site_count),
                         this);
      return;
    }
  }
  QToolTip::hideText();
}

SizesView::SizesView(QWidget* parent)
    : QWidget(parent), bars_(new SizeBars(this)), caption_(new QLabel(this)), sites_(new QTreeWidget(this)),
      stack_(new QTextBrowser(this)) {
  setObjectName("sizes");
  caption_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
  sites_->setColumnCount(4);
  sites_->setHeaderLabels({tr("Site"), tr("Blocks"), tr("Bytes"), tr("Kind")});
  sites_->setRootIsDecorated(false);
  sites_->setUniformRowHeights(true);
  sites_->header()->resizeSection(0, 380);
  auto* lower = new QSplitter(Qt::Horizontal, this);
  lower->addWidget(sites_);
  lower->addWidget(stack_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 2);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(bars_);
  auto* bottom = new QWidget(split);
  auto* bl = new QVBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  bl->addWidget(caption_);
  bl->addWidget(lower);
  split->addWidget(bottom);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(split);
  connect(bars_, &SizeBars::bucketSelected, this, &SizesView::showBucket);
  connect(sites_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    const int bucket = bars_->selected();
    if (!item || !range_ || bucket < 0) return stack_->clear();
    const auto& b = range_->sizes.buckets[size_t(bucket)];
    const auto& s = b.sites[size_t(sites_->indexOfTopLevelItem(item))];
    stack_->setHtml(QString("<b>%1 blocks of %2, %3</b>%4<br><br>%5")
                        .arg(QString::fromStdString(an::formatCount(s.count)), rangeText(b).toHtmlEscaped(), bytesText(uint64_t(s.bytes)),
                             s.exact ? QString() : tr(" (estimated: placed at the site's mean size)"), stackHtml(s.stack)));
  });
}

void SizesView::setRange(std::shared_ptr<const RangeData> range) {
  range_ = std::move(range);
  bars_->setHistogram(range_ ? &range_->sizes : nullptr);
  sites_->clear();
  stack_->clear();
  caption_->clear();
  if (!range_ || range_->sizes.buckets.empty()) return;
  // The bucket of most blocks is shown first.
  const auto& bs = range_->sizes.buckets;
  bars_->select(int(std::max_element(bs.begin(), bs.end(), [](const auto& a, const auto& b) { return a.count < b.count; }) -
                    bs.begin()));
}

void SizesView::showBucket(int bucket) {
  sites_->clear();
  if (!range_ || bucket < 0 || size_t(bucket) >= range_->sizes.buckets.size()) return;
  const an::SizeHistogram& h = range_->sizes;
  const an::SizeBucket& b = h.buckets[size_t(bucket)];
  QString note = h.estimated_count ? tr("; %1 blocks placed by estimate (sites of several sizes without allocation rows)")
                                         .arg(QString::fromStdString(an::formatCount(h.estimated_count)))
                                   : QString();
  caption_->setText(tr("%1: %2 blocks, %3, from %4 sites (top %5 listed)%6")
                        .arg(rangeText(b), QString::fromStdString(an::formatCount(b.count)), bytesText(uint64_t(b.bytes)))
                        .arg(b.site_count)
                        .arg(b.sites.size())
                        .arg(note));
  for (const auto& s : b.sites) {
    auto* item = new QTreeWidgetItem(sites_, {QString::fromStdString(an::siteText(s.stack)),
                                              QString::fromStdString(an::formatCount(s.count)), bytesText(uint64_t(s.bytes)),
                                              QString::fromStdString(s.kind)});
    item->setTextAlignment(1, Qt::AlignRight | Qt::AlignVCenter);
    item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
  }
  if (sites_->topLevelItemCount()) sites_->setCurrentItem(sites_->topLevelItem(0));
}

}  // namespace memledger::gui
