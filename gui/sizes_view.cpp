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
#include "gui/change_models.h"
#include "gui/leaks_view.h"  // stackHtml

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
QString bytesText(uint64_t b) { return QString::fromStdString(an::formatBytes(int64_t(b))); }
QString rangeText(uint64_t from, uint64_t to) {
  return to <= 1 ? QString("0 - 1 B") : bytesText(from) + QString::fromUtf8(" to < ") + bytesText(to + 1);
}
}  // namespace

SizeBars::SizeBars(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(160);
}

void SizeBars::setHistogram(const an::SizeHistogram* h) {
  h_ = h;
  c_ = nullptr;
  selected_ = -1;
  update();
}

void SizeBars::setChanges(const std::vector<an::SizeBucketChange>* changes) {
  h_ = nullptr;
  c_ = changes;
  selected_ = -1;
  update();
}

int SizeBars::buckets() const { return h_ ? int(h_->buckets.size()) : c_ ? int(c_->size()) : 0; }

uint64_t SizeBars::fromOf(int i) const { return h_ ? h_->buckets[size_t(i)].from : (*c_)[size_t(i)].from; }

int64_t SizeBars::countOf(int i, bool sideA) const {
  if (h_) return sideA ? 0 : h_->buckets[size_t(i)].count;
  const an::SizeBucketChange& c = (*c_)[size_t(i)];
  return sideA ? c.count_a : c.count_b;
}

int64_t SizeBars::most() const {
  int64_t m = 1;
  for (int i = 0; i < buckets(); ++i) m = std::max({m, countOf(i), countOf(i, true)});
  return m;
}

void SizeBars::select(int bucket) {
  if (bucket < 0 || bucket >= buckets()) return;
  selected_ = bucket;
  update();
  emit bucketSelected(bucket);
}

QRect SizeBars::plot() const {
  const int fh = fontMetrics().height();
  return rect().adjusted(fontMetrics().horizontalAdvance("000000") + 12, fh + 8, -12, -(2 * fh + 10));
}

// One slot per power of two from the smallest bucket to the largest, empty ones included, so
// the gaps between sizes show; in B − A the slot holds A's bar (part 0) and B's (part 1).
QRect SizeBars::column(int bucket, int64_t count, int part, int parts) const {
  const int first = an::sizeBucketIndex(fromOf(0)), last = an::sizeBucketIndex(fromOf(buckets() - 1));
  const QRect r = plot();
  const double slot = double(r.width()) / (last - first + 1);
  const int height = count ? std::max(1, int(double(r.height()) * double(count) / double(most()))) : 0;
  const double width = std::max(2.0, (slot - 4) / parts);
  const int x = r.left() + int(slot * (an::sizeBucketIndex(fromOf(bucket)) - first) + 2 + width * part);
  return QRect(x, r.bottom() - height + 1, std::max(2, int(width) - (parts > 1 ? 1 : 0)), std::max(height, 1));
}

QRect SizeBars::barRect(int bucket) const {
  if (bucket < 0 || bucket >= buckets()) return {};
  return c_ ? column(bucket, countOf(bucket), 1, 2) : column(bucket, countOf(bucket), 0, 1);
}

QRect SizeBars::barRectA(int bucket) const {
  if (!c_ || bucket < 0 || bucket >= buckets()) return {};
  return column(bucket, countOf(bucket, true), 0, 2);
}

void SizeBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect r = plot();
  p.setPen(palette().color(QPalette::Text));
  if (buckets() == 0) {
    p.drawText(rect(), Qt::AlignCenter, c_ ? tr("No allocations in this range in A or B.") : tr("No allocations in this range."));
    return;
  }
  p.drawLine(r.bottomLeft(), r.bottomRight());
  p.drawText(QRect(0, r.top() - fontMetrics().height() - 4, r.width(), fontMetrics().height()), Qt::AlignLeft,
             c_ ? tr("blocks (max %1); outlined: A, filled: B").arg(QString::fromStdString(an::formatCount(most())))
                : tr("blocks (max %1)").arg(QString::fromStdString(an::formatCount(most()))));
  const QColor bar = palette().color(QPalette::Highlight);
  const int fh = fontMetrics().height();
  int lastLabelRight = -1;
  for (int i = 0; i < buckets(); ++i) {
    const QRect br = barRect(i);
    if (countOf(i)) p.fillRect(br, i == selected_ ? bar.darker(150) : bar);
    QRect label = br;
    if (c_) {  // A's bar outlined beside B's, and the change over both
      const QRect ar = barRectA(i);
      if (countOf(i, true)) {
        p.setPen(QPen(i == selected_ ? bar.darker(150) : bar, 1.5));
        p.drawRect(ar.adjusted(0, 0, -1, -1));
      }
      label = ar.united(br);
      label.setTop(std::min(ar.top(), br.top()));
    }
    p.setPen(palette().color(QPalette::Text));
    // Labels under the bars, skipped where they would overlap the previous one.
    const QString text = bytesText(fromOf(i));
    const int w = fontMetrics().horizontalAdvance(text);
    const int x = label.center().x() - w / 2;
    if (x > lastLabelRight + 4) {
      p.drawText(QRect(x, r.bottom() + 4, w, fh), Qt::AlignCenter, text);
      lastLabelRight = x + w;
    }
    const int64_t delta = countOf(i) - countOf(i, true);
    const QString count = c_ ? signedCount(delta) : QString::fromStdString(an::formatCount(countOf(i)));
    if (c_ && delta) p.setPen(deltaForeground(delta).value<QColor>());
    if (fontMetrics().horizontalAdvance(count) <= label.width() + 8)
      p.drawText(QRect(label.left() - 4, label.top() - fh - 2, label.width() + 8, fh), Qt::AlignCenter, count);
  }
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(r.left(), r.bottom() + fh + 6, r.width(), fh), Qt::AlignCenter, tr("allocation size (power-of-two buckets)"));
}

void SizeBars::mousePressEvent(QMouseEvent* e) {
  for (int i = 0; i < buckets(); ++i) {
    QRect column = barRect(i).united(barRectA(i));
    column.setTop(plot().top());
    if (column.contains(e->position().toPoint())) return select(i);
  }
}

void SizeBars::mouseMoveEvent(QMouseEvent* e) {
  for (int i = 0; i < buckets(); ++i) {
    QRect column = barRect(i).united(barRectA(i));
    column.setTop(plot().top());
    if (!column.contains(e->position().toPoint())) continue;
    QString text;
    if (h_) {
      const auto& b = h_->buckets[size_t(i)];
      text = tr("%1: %2 blocks, %3 (%4 sites)")
                 .arg(rangeText(b.from, b.to), QString::fromStdString(an::formatCount(b.count)), bytesText(uint64_t(b.bytes)))
                 .arg(b.site_count);
    } else {
      const auto& c = (*c_)[size_t(i)];
      text = tr("%1: A %2 blocks (%3), B %4 blocks (%5), B \u2212 A %6")
                 .arg(rangeText(c.from, c.to), QString::fromStdString(an::formatCount(c.count_a)), bytesText(uint64_t(c.bytes_a)),
                      QString::fromStdString(an::formatCount(c.count_b)), bytesText(uint64_t(c.bytes_b)),
                      signedCount(c.count_b - c.count_a));
    }
    QToolTip::showText(e->globalPosition().toPoint(), text, this);
    return;
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
    const size_t row = size_t(sites_->indexOfTopLevelItem(item));
    if (range_->diff()) {
      const an::SizeBucketChange& b = range_->size_changes[size_t(bucket)];
      const an::SiteChange& c = b.sites.sites[row];
      stack_->setHtml(QString("<b>%1 blocks of %2</b> (%3)<br>A: %4 blocks, %5<br>B: %6 blocks, %7<br><br>%8")
                          .arg(signedCount(c.deltaCount()), rangeText(b.from, b.to).toHtmlEscaped(), changeStatusText(c).toHtmlEscaped(),
                               QString::fromStdString(an::formatCount(c.count_a)), bytesText(uint64_t(c.bytes_a)),
                               QString::fromStdString(an::formatCount(c.count_b)), bytesText(uint64_t(c.bytes_b)), stackHtml(c.stack)));
      return;
    }
    const auto& b = range_->sizes.buckets[size_t(bucket)];
    const auto& s = b.sites[row];
    stack_->setHtml(QString("<b>%1 blocks of %2, %3</b>%4<br><br>%5")
                        .arg(QString::fromStdString(an::formatCount(s.count)), rangeText(b.from, b.to).toHtmlEscaped(),
                             bytesText(uint64_t(s.bytes)), s.exact ? QString() : tr(" (estimated: placed at the site's mean size)"),
                             stackHtml(s.stack)));
  });
}

void SizesView::setRange(std::shared_ptr<const RangeData> range) {
  range_ = std::move(range);
  const bool diff = range_ && range_->diff();
  if (diff) bars_->setChanges(&range_->size_changes);
  else bars_->setHistogram(range_ ? &range_->sizes : nullptr);
  sites_->clear();
  stack_->clear();
  caption_->clear();
  sites_->setHeaderLabels(diff ? QStringList{tr("Site"), tr("\u0394 Blocks"), tr("A"), tr("B"), tr("Status"), tr("Kind")}
                               : QStringList{tr("Site"), tr("Blocks"), tr("Bytes"), tr("Kind")});
  if (bars_->buckets() == 0) return;
  // The bucket of most blocks (B − A: of the largest change) is shown first.
  int first = 0;
  for (int i = 1; i < bars_->buckets(); ++i) {
    auto weight = [&](int k) {
      return diff ? std::llabs(range_->size_changes[size_t(k)].count_b - range_->size_changes[size_t(k)].count_a)
                  : range_->sizes.buckets[size_t(k)].count;
    };
    if (weight(i) > weight(first)) first = i;
  }
  bars_->select(first);
}

void SizesView::showBucket(int bucket) {
  sites_->clear();
  if (!range_ || bucket < 0 || bucket >= bars_->buckets()) return;
  auto addRow = [this](const QStringList& cells, int numbers) {  // columns 1..numbers hold numbers
    auto* item = new QTreeWidgetItem(sites_, cells);
    for (int c = 1; c <= numbers; ++c) item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    return item;
  };
  auto n = [](int64_t v) { return QString::fromStdString(an::formatCount(v)); };
  if (range_->diff()) {
    const an::SizeBucketChange& b = range_->size_changes[size_t(bucket)];
    caption_->setText(tr("%1: B \u2212 A %2 blocks (A %3 blocks, %4; B %5 blocks, %6); sites: A %7, B %8, each side's "
                         "listed ones matched by function and file")
                          .arg(rangeText(b.from, b.to), signedCount(b.count_b - b.count_a), n(b.count_a), bytesText(uint64_t(b.bytes_a)),
                               n(b.count_b), bytesText(uint64_t(b.bytes_b)), n(int64_t(b.sites.sites_a)), n(int64_t(b.sites.sites_b))));
    for (const an::SiteChange& c : b.sites.sites) {
      QTreeWidgetItem* item = addRow({QString::fromStdString(an::siteText(c.stack)), signedCount(c.deltaCount()), n(c.count_a),
                                      n(c.count_b), changeStatusText(c), QString::fromStdString(c.kind)}, 3);
      if (c.deltaCount()) item->setForeground(1, deltaForeground(c.deltaCount()).value<QColor>());
    }
  } else {
    const an::SizeHistogram& h = range_->sizes;
    const an::SizeBucket& b = h.buckets[size_t(bucket)];
    QString note = h.estimated_count ? tr("; %1 blocks placed by estimate (sites of several sizes without allocation rows)")
                                           .arg(n(h.estimated_count))
                                     : QString();
    caption_->setText(tr("%1: %2 blocks, %3, from %4 sites (top %5 listed)%6")
                          .arg(rangeText(b.from, b.to), n(b.count), bytesText(uint64_t(b.bytes)))
                          .arg(b.site_count)
                          .arg(b.sites.size())
                          .arg(note));
    for (const auto& s : b.sites)
      addRow({QString::fromStdString(an::siteText(s.stack)), n(s.count), bytesText(uint64_t(s.bytes)), QString::fromStdString(s.kind)}, 2);
  }
  if (sites_->topLevelItemCount()) sites_->setCurrentItem(sites_->topLevelItem(0));
}

}  // namespace memledger::gui
