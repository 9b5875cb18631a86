#include "gui/compare_view.h"

#include <QApplication>

#include <QHeaderView>
#include <QMouseEvent>
#include <QPainter>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <cstdlib>
#include <functional>

#include "analyzer/format.h"
#include "gui/theme.h"
#include "gui/change_models.h"  // signedBytes, signedCount
#include "gui/leaks_view.h"  // stackHtml

namespace memledger::gui {

namespace an = memledger::analyzer;


void CompareModel::setDiff(std::shared_ptr<const an::DiffResult> diff) {
  beginResetModel();
  diff_ = std::move(diff);
  endResetModel();
}

const an::SiteDiff* CompareModel::site(int row) const {
  if (!diff_ || row < 0 || size_t(row) >= diff_->sites.size()) return nullptr;
  return &diff_->sites[size_t(row)];
}

int CompareModel::rowCount(const QModelIndex& p) const { return p.isValid() || !diff_ ? 0 : int(diff_->sites.size()); }
int CompareModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : kColumns; }

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  const an::SiteDiff* s = site(index.row());
  if (!s) return {};
  const int c = index.column();
  const int64_t delta = c == kPeak        ? s->b.peak_bytes - s->a.peak_bytes
                        : c == kLeaked    ? s->b.leak_bytes - s->a.leak_bytes
                        : c == kAllocated ? s->b.alloc_bytes - s->a.alloc_bytes
                        : c == kCount     ? s->b.alloc_count - s->a.alloc_count
                        : c == kTemporary ? s->b.temp_bytes - s->a.temp_bytes
                                          : 0;
  const bool numeric = c >= kPeak && c <= kTemporary;
  if (role == Qt::TextAlignmentRole && numeric) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole && numeric && delta != 0)
    return delta > 0 ? growthColor(QApplication::palette()) : shrinkColor(QApplication::palette());
  if (role == Qt::UserRole && numeric) return qlonglong(delta);
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  switch (c) {
    case kSite: return QString::fromStdString(an::siteText(s->stack));
    case kStatus: return QString(an::diffStatusName(s->status));
    case kCount: return signedCount(delta);
    case kKind: return QString::fromStdString(s->kind);
    default: return numeric ? signedBytes(delta) : QVariant();
  }
}

QVariant CompareModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kSite: return tr("Site");
    case kStatus: return tr("Status");
    case kPeak: return tr("Δ Peak");
    case kLeaked: return tr("Δ Leaked");
    case kAllocated: return tr("Δ Allocated");
    case kCount: return tr("Δ Allocations");
    case kTemporary: return tr("Δ Temporary");
    case kKind: return tr("Kind");
  }
  return {};
}

DiffFlame::DiffFlame(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(160);
}

void DiffFlame::setDiff(std::shared_ptr<const an::DiffResult> diff, Metric metric) {
  nodes_.assign(1, Node{tr("all changes"), 0, 0, {}});
  if (diff) {
    for (const an::SiteDiff& s : diff->sites) {
      const int64_t d = metric == Metric::Peak     ? s.b.peak_bytes - s.a.peak_bytes
                        : metric == Metric::Leaked ? s.b.leak_bytes - s.a.leak_bytes
                                                   : s.b.alloc_bytes - s.a.alloc_bytes;
      if (d == 0) continue;
      int at = 0;
      nodes_[0].delta += d;
      nodes_[0].absolute += std::llabs(d);
      for (auto f = s.stack.rbegin(); f != s.stack.rend(); ++f) {  // outermost first
        // By function, as the diff matches sites (analyzer/diff.h): not by line.
        const QString name = QString::fromStdString(an::printable(f->function ? *f->function : an::frameText(*f)));
        int child = -1;
        for (int c : nodes_[size_t(at)].children)
          if (nodes_[size_t(c)].name == name) child = c;
        if (child < 0) {
          child = int(nodes_.size());
          nodes_[size_t(at)].children.push_back(child);
          nodes_.push_back(Node{name, 0, 0, {}});
        }
        nodes_[size_t(child)].delta += d;
        nodes_[size_t(child)].absolute += std::llabs(d);
        at = child;
      }
    }
  }
  update();
}

void DiffFlame::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  boxes_.clear();
  if (nodes_.empty() || nodes_[0].absolute == 0) {
    p.setPen(palette().color(QPalette::Text));
    p.drawText(rect(), Qt::AlignCenter, tr("No differences in this metric."));
    return;
  }
  const double rowH = fontMetrics().height() + 4;
  std::function<void(int, double, double, int)> draw = [&](int n, double x, double w, int depth) {
    const Node& node = nodes_[size_t(n)];
    QRectF r(x, depth * rowH, w, rowH - 1);
    if (w < 1 || r.top() > height()) return;
    // Red for growth, blue for shrink, paler where the box's changes mostly cancel out.
    const double share = double(std::llabs(node.delta)) / double(std::max<int64_t>(1, node.absolute));
    QColor c = node.delta >= 0 ? QColor(220, 60, 45) : QColor(45, 100, 215);
    c = QColor::fromRgbF(1 - (1 - c.redF()) * (0.35 + 0.65 * share), 1 - (1 - c.greenF()) * (0.35 + 0.65 * share),
                         1 - (1 - c.blueF()) * (0.35 + 0.65 * share));
    p.fillRect(r.adjusted(0, 0, -1, 0), c);
    boxes_.push_back({r, n});
    if (w > 30) {
      p.setPen(Qt::black);
      p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft,
                 fontMetrics().elidedText(node.name + "  " + signedBytes(node.delta), Qt::ElideRight, int(w) - 6));
    }
    double cx = x;
    for (int c2 : node.children) {
      const double cw = w * double(nodes_[size_t(c2)].absolute) / double(node.absolute);
      draw(c2, cx, cw, depth + 1);
      cx += cw;
    }
  };
  draw(0, 0, width(), 0);
}

void DiffFlame::mouseMoveEvent(QMouseEvent* e) {
  for (const Box& b : boxes_)
    if (b.rect.contains(e->position())) {
      const Node& n = nodes_[size_t(b.node)];
      QToolTip::showText(e->globalPosition().toPoint(),
                         tr("%1\nnet %2 (changes %3)").arg(n.name, signedBytes(n.delta),
                                                          QString::fromStdString(an::formatBytes(n.absolute))),
                         this);
      return;
    }
  QToolTip::hideText();
}

CompareView::CompareView(QWidget* parent)
    : QWidget(parent), header_(new QLabel(this)), metric_(new QComboBox(this)), model_(new CompareModel(this)),
      table_(new QTableView(this)), stack_(new QTextBrowser(this)), flame_(new DiffFlame(this)) {
  setObjectName("compare");
  header_->setWordWrap(true);
  header_->setText(tr("File → Compare with… opens a second recording (B) to compare with this one (A)."));
  metric_->addItems({tr("Peak"), tr("Leaked"), tr("Allocated")});
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  table_->setModel(proxy);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setWordWrap(false);
  table_->horizontalHeader()->resizeSection(CompareModel::kSite, 360);
  auto* top = new QSplitter(Qt::Horizontal, this);
  top->addWidget(table_);
  top->addWidget(stack_);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 1);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(top);
  split->addWidget(flame_);
  auto* bar = new QHBoxLayout;
  bar->addWidget(header_, 1);
  bar->addWidget(new QLabel(tr("Flame graph of"), this));
  bar->addWidget(metric_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(bar);
  layout->addWidget(split, 1);
  connect(metric_, &QComboBox::currentIndexChanged, this,
          [this](int i) { flame_->setDiff(diff_, DiffFlame::Metric(i)); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this, proxy](const QModelIndex& cur) {
    const an::SiteDiff* s = model_->site(proxy->mapToSource(cur).row());
    if (!s) return stack_->clear();
    stack_->setHtml(tr("<b>%1</b>: peak %2 → %3, leaked %4 → %5, allocated %6 → %7<br><br>%8")
                        .arg(an::diffStatusName(s->status))
                        .arg(QString::fromStdString(an::formatBytes(s->a.peak_bytes)),
                             QString::fromStdString(an::formatBytes(s->b.peak_bytes)),
                             QString::fromStdString(an::formatBytes(s->a.leak_bytes)),
                             QString::fromStdString(an::formatBytes(s->b.leak_bytes)),
                             QString::fromStdString(an::formatBytes(s->a.alloc_bytes)),
                             QString::fromStdString(an::formatBytes(s->b.alloc_bytes)), stackHtml(s->stack)));
  });
}

CompareView::~CompareView() { watcher_.waitForFinished(); }

void CompareView::comparing(const QString& before, const QString& after) {
  watcher_.waitForFinished();
  error_.clear();
  header_->setText(tr("Comparing %1 with %2…").arg(after, before));
}

void CompareView::fail(const QString& message) {
  watcher_.waitForFinished();
  error_ = message;
  header_->setText(tr("Cannot compare: %1").arg(message));
  show(nullptr);
  emit compared();
}

void CompareView::compare(std::shared_ptr<an::Recording> before, std::shared_ptr<an::Recording> after) {
  comparing(QString::fromStdString(before->info().path), QString::fromStdString(after->info().path));
  QPointer<CompareView> self(this);
  watcher_.setFuture(QtConcurrent::run(&pool_, [self, before, after] {
    std::shared_ptr<const an::DiffResult> result;
    QString message;
    try {
      result = std::make_shared<const an::DiffResult>(an::diff(*before, *after));
    } catch (const std::exception& e) {
      message = QString::fromStdString(e.what());
    }
    if (!self) return;
    QMetaObject::invokeMethod(
        self.data(),
        [self, result, message] {
          if (!self) return;
          self->error_ = message;
          if (!message.isEmpty()) self->header_->setText(tr("Cannot compare: %1").arg(message));
          self->show(result);
          emit self->compared();
        },
        Qt::QueuedConnection);
  }));
}

void CompareView::show(std::shared_ptr<const an::DiffResult> diff) {
  diff_ = std::move(diff);
  model_->setDiff(diff_);
  flame_->setDiff(diff_, DiffFlame::Metric(metric_->currentIndex()));
  table_->sortByColumn(CompareModel::kPeak, Qt::DescendingOrder);
  if (!diff_) return;
  header_->setText(tr("B %1 vs A %2: peak %3 → %4 (%5), leaked %6 → %7, %8 sites changed")
                       .arg(QString::fromStdString(diff_->path_b), QString::fromStdString(diff_->path_a),
                            QString::fromStdString(an::formatBytes(diff_->peak_a)),
                            QString::fromStdString(an::formatBytes(diff_->peak_b)), signedBytes(diff_->peak_b - diff_->peak_a),
                            QString::fromStdString(an::formatBytes(diff_->leak_bytes_a)),
                            QString::fromStdString(an::formatBytes(diff_->leak_bytes_b)))
                       .arg(diff_->sites.size()));
  if (model_->rowCount()) table_->selectRow(0);
}

}  // namespace memledger::gui
