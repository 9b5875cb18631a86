// Models of the call trees (analyzer/call_tree.h): they hold the analyzer's tree and serve it,
// nothing else. Columns: symbol, peak, leaked, allocated, count, temporary, location. Qt::UserRole
// gives a column's raw number (sorting, tests); Qt::DisplayRole the human text.
#pragma once

#include <QAbstractItemModel>
#include <QSortFilterProxyModel>

#include <memory>

#include "gui/document.h"

namespace memledger::gui {

enum CostColumn { kSymbolColumn, kPeakColumn, kLeakedColumn, kAllocatedColumn, kCountColumn, kTemporaryColumn,
                  kLocationColumn, kColumnCount };
QString costHeader(int column);
// The header of a cost column for what `range` holds: the peak column is "Peak in selection" or
// "Live at 1.20 s" when it follows the range or an instant, every cost "Δ ..." for B − A.
QString costHeader(int column, const RangeData* range);
// A cost cell; `delta`: a signed B − A change ("+1.0 MiB", red growth, blue shrink).
QVariant costData(const analyzer::TreeCost& cost, int column, int role, bool delta = false);
// A byte or count amount as text, signed ("+", "-") when it is a change.
QString amountText(int64_t value, bool bytes, bool delta);
QColor deltaColor(int64_t delta);  // growth red, shrink blue
QString locationText(const analyzer::Frame* frame);
inline constexpr int kFrameRole = Qt::UserRole + 1;  // const analyzer::Frame* as quintptr

class CallTreeModel : public QAbstractItemModel {
  Q_OBJECT
 public:
  explicit CallTreeModel(analyzer::TreeDirection direction, QObject* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  const analyzer::CallTree* tree() const;
  int32_t nodeOf(const QModelIndex& index) const { return index.isValid() ? int32_t(index.internalId()) : 0; }
  // The stack from the root to `index`, one frame per line (innermost last for top-down).
  QString stackText(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  analyzer::TreeDirection direction_;
  std::shared_ptr<const RangeData> range_;
};

// Filters a tree (or table) by function, file and module (substrings, case-insensitive); a row
// stays when it or a descendant matches. Sorts by the raw numbers.
class CostFilterProxy : public QSortFilterProxyModel {
  Q_OBJECT
 public:
  explicit CostFilterProxy(QObject* parent = nullptr);
  void setFilters(const QString& function, const QString& file, const QString& module);

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  QString function_, file_, module_;
};

}  // namespace memledger::gui
