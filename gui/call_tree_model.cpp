#include "gui/call_tree_model.h"

#include <QApplication>
#include <QColor>

#include "analyzer/format.h"
#include "gui/theme.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

QString costHeader(int column) {
  switch (column) {
    case kSymbolColumn: return QObject::tr("Function");
    case kPeakColumn: return QObject::tr("Peak");
    case kLeakedColumn: return QObject::tr("Leaked");
    case kAllocatedColumn: return QObject::tr("Allocated");
    case kCountColumn: return QObject::tr("Allocations");
    case kTemporaryColumn: return QObject::tr("Temporary");
    case kLocationColumn: return QObject::tr("Location");
  }
  return {};
}

QString costHeader(int column, const RangeData* range) {
  QString h = costHeader(column);
  if (!range || column == kSymbolColumn || column == kLocationColumn) return h;
  if (column == kPeakColumn && range->peakFollows()) {
    if (range->live_at_ns)
      h = QObject::tr("Live at %1").arg(QString::fromStdString(an::formatDuration(*range->live_at_ns)));
    else if (range->ranged())
      h = QObject::tr("Peak in selection");
  }
  return range->diff() ? QString::fromUtf8("\u0394 ") + h : h;
}

QString amountText(int64_t v, bool bytes, bool delta) {
  QString text = QString::fromStdString(bytes ? an::formatBytes(v) : an::formatCount(v));
  return delta && v > 0 ? "+" + text : text;
}

QColor deltaColor(int64_t delta) {
  const QPalette pal = QApplication::palette();  // readable on a light and on a dark base (gui/theme.h)
  return delta > 0 ? growthColor(pal) : shrinkColor(pal);
}

QVariant costData(const an::TreeCost& c, int column, int role, bool delta) {
  int64_t v = 0;
  bool isBytes = true;
  switch (column) {
    case kPeakColumn: v = c.peak; break;
    case kLeakedColumn: v = c.leaked; break;
    case kAllocatedColumn: v = c.allocated; break;
    case kCountColumn: v = c.count; isBytes = false; break;
    case kTemporaryColumn: v = c.temporary; isBytes = false; break;
    default: return {};
  }
  if (role == Qt::UserRole) return QVariant::fromValue<qlonglong>(v);
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::DisplayRole) return amountText(v, isBytes, delta);
  if (role == Qt::ToolTipRole) return amountText(v, false, delta) + (isBytes ? " B" : "");
  if (role == Qt::ForegroundRole && delta && v != 0) return deltaColor(v);
  return {};
}

QString locationText(const an::Frame* f) {
  if (!f) return {};
  if (f->file) return QString::fromStdString(*f->file) + (f->line ? QString(":%1").arg(*f->line) : QString());
  if (f->module) return QString::fromStdString(*f->module);
  return {};
}

CallTreeModel::CallTreeModel(an::TreeDirection direction, QObject* parent)
    : QAbstractItemModel(parent), direction_(direction) {}

void CallTreeModel::setRange(std::shared_ptr<const RangeData> range) {
  beginResetModel();
  range_ = std::move(range);
  endResetModel();
}

const an::CallTree* CallTreeModel::tree() const {
  if (!range_) return nullptr;
  return direction_ == an::TreeDirection::TopDown ? &range_->top_down : &range_->bottom_up;
}

QModelIndex CallTreeModel::index(int row, int column, const QModelIndex& parent) const {
  const an::CallTree* t = tree();
  if (!t || t->nodes.empty() || column < 0 || column >= kColumnCount || row < 0) return {};
  const std::span<const int32_t> kids = t->children(nodeOf(parent));
  if (size_t(row) >= kids.size()) return {};
  return createIndex(row, column, quintptr(kids[size_t(row)]));
}

QModelIndex CallTreeModel::parent(const QModelIndex& child) const {
  const an::CallTree* t = tree();
  if (!t || !child.isValid()) return {};
  int32_t parent = t->nodes[size_t(nodeOf(child))].parent;
  if (parent <= 0) return {};
  return createIndex(t->nodes[size_t(parent)].row, 0, quintptr(parent));
}

int CallTreeModel::rowCount(const QModelIndex& parent) const {
  const an::CallTree* t = tree();
  if (!t || t->nodes.empty() || (parent.isValid() && parent.column() != 0)) return 0;
  return int(t->children(nodeOf(parent)).size());
}

int CallTreeModel::columnCount(const QModelIndex&) const { return kColumnCount; }

QVariant CallTreeModel::data(const QModelIndex& index, int role) const {
  const an::CallTree* t = tree();
  if (!t || !index.isValid()) return {};
  const an::CallNode& n = t->nodes[size_t(nodeOf(index))];
  if (role == kFrameRole) return QVariant::fromValue<quintptr>(quintptr(n.frame));
  switch (index.column()) {
    case kSymbolColumn:
      if (role == Qt::DisplayRole || role == Qt::UserRole) return QString::fromStdString(t->symbol(n));
      if (role == Qt::ToolTipRole) return QString::fromStdString(t->symbol(n)) + "\n" + locationText(n.frame);
      return {};
    case kLocationColumn:
      if (role == Qt::DisplayRole || role == Qt::UserRole) return locationText(n.frame);
      return {};
    default: return costData(n.total, index.column(), role, range_->diff());
  }
}

QVariant CallTreeModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole) return costHeader(section, range_.get());
  return {};
}

QString CallTreeModel::stackText(const QModelIndex& index) const {
  const an::CallTree* t = tree();
  if (!t) return {};
  QStringList lines;
  for (int32_t n = nodeOf(index); n > 0; n = t->nodes[size_t(n)].parent) {
    const an::CallNode& node = t->nodes[size_t(n)];
    QString loc = locationText(node.frame);
    lines.prepend(QString::fromStdString(t->symbol(node)) + (loc.isEmpty() ? QString() : "  " + loc));
  }
  return lines.join('\n');
}

CostFilterProxy::CostFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(Qt::UserRole);
  setRecursiveFilteringEnabled(true);
  setDynamicSortFilter(false);
}

void CostFilterProxy::setFilters(const QString& function, const QString& file, const QString& module) {
  function_ = function;
  file_ = file;
  module_ = module;
  invalidateFilter();
}

bool CostFilterProxy::filterAcceptsRow(int row, const QModelIndex& parent) const {
  if (function_.isEmpty() && file_.isEmpty() && module_.isEmpty()) return true;
  QModelIndex idx = sourceModel()->index(row, 0, parent);
  auto* frame = reinterpret_cast<const an::Frame*>(idx.data(kFrameRole).value<quintptr>());
  QString fn = idx.data(Qt::DisplayRole).toString();
  QString file = frame && frame->file ? QString::fromStdString(*frame->file) : QString();
  QString mod = frame && frame->module ? QString::fromStdString(*frame->module) : QString();
  return (function_.isEmpty() || fn.contains(function_, Qt::CaseInsensitive)) &&
         (file_.isEmpty() || file.contains(file_, Qt::CaseInsensitive)) &&
         (module_.isEmpty() || mod.contains(module_, Qt::CaseInsensitive));
}

}  // namespace memledger::gui
