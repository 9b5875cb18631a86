#include "gui/change_models.h"

#include <QApplication>

#include <cstdlib>

#include "analyzer/format.h"
#include "gui/theme.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

QString signedBytes(int64_t d) {
  if (d == 0) return "0";
  return (d > 0 ? "+" : "-") + QString::fromStdString(an::formatBytes(std::llabs(d)));
}

QString signedCount(int64_t d) {
  if (d == 0) return "0";
  return (d > 0 ? "+" : "-") + QString::fromStdString(an::formatCount(std::llabs(d)));
}

QString changeStatusText(const an::SiteChange& c) {
  if (c.status == an::DiffStatus::Changed && !c.listed_a) return QObject::tr("changed (below A's listed sites)");
  if (c.status == an::DiffStatus::Changed && !c.listed_b) return QObject::tr("changed (below B's listed sites)");
  return QString(an::diffStatusName(c.status));
}

QVariant deltaForeground(int64_t delta) {
  if (delta == 0) return {};
  return delta > 0 ? growthColor(QApplication::palette()) : shrinkColor(QApplication::palette());
}

void LeakChangesModel::setChanges(std::shared_ptr<const an::ListChanges> changes) {
  beginResetModel();
  changes_ = std::move(changes);
  endResetModel();
}

const an::SiteChange* LeakChangesModel::site(int row) const {
  if (!changes_ || row < 0 || size_t(row) >= changes_->sites.size()) return nullptr;
  return &changes_->sites[size_t(row)];
}

int LeakChangesModel::rowCount(const QModelIndex& p) const {
  return p.isValid() || !changes_ ? 0 : int(changes_->sites.size());
}
int LeakChangesModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : kColumns; }

QVariant LeakChangesModel::data(const QModelIndex& index, int role) const {
  const an::SiteChange* s = site(index.row());
  if (!s) return {};
  const int c = index.column();
  const bool numeric = c >= kDeltaBytes && c <= kBytesB;
  const int64_t value = c == kDeltaBytes ? s->deltaBytes()
                        : c == kDeltaCount ? s->deltaCount()
                        : c == kBytesA     ? s->bytes_a
                        : c == kBytesB     ? s->bytes_b
                                           : 0;
  if (role == Qt::TextAlignmentRole && numeric) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::ForegroundRole && (c == kDeltaBytes || c == kDeltaCount)) return deltaForeground(value);
  if (role == Qt::UserRole && numeric) return qlonglong(value);
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  switch (c) {
    case kSite: return QString::fromStdString(an::siteText(s->stack));
    case kStatus: return changeStatusText(*s);
    case kDeltaBytes: return signedBytes(value);
    case kDeltaCount: return signedCount(value);
    case kBytesA: return QString::fromStdString(an::formatBytes(value));
    case kBytesB: return QString::fromStdString(an::formatBytes(value));
    case kKind: return QString::fromStdString(s->kind);
  }
  return {};
}

QVariant LeakChangesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kSite: return tr("Site");
    case kStatus: return tr("Status");
    case kDeltaBytes: return tr("\u0394 Leaked");
    case kDeltaCount: return tr("\u0394 Blocks");
    case kBytesA: return tr("Leaked in A");
    case kBytesB: return tr("Leaked in B");
    case kKind: return tr("Kind");
  }
  return {};
}

}  // namespace memledger::gui
