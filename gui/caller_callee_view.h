// Caller/callee: every function with its inclusive costs (analyzer::callerCallee), and for the
// selected one who called it and whom it called, with the cost passed along each edge.
#pragma once

#include <QAbstractTableModel>
#include <QTableView>
#include <QTreeWidget>
#include <QWidget>

#include "gui/call_tree_model.h"

namespace memledger::gui {

class SymbolTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setRange(std::shared_ptr<const RangeData> range);
  const analyzer::SymbolCost* symbol(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const RangeData> range_;
};

class CallerCalleeView : public QWidget {
  Q_OBJECT
 public:
  explicit CallerCalleeView(QWidget* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  void selectSymbol(const QString& symbol);
  QTableView* table() const { return table_; }
  QTreeWidget* callers() const { return callers_; }
  QTreeWidget* callees() const { return callees_; }

 private:
  void showSymbol(const analyzer::SymbolCost* s);
  SymbolTableModel* model_;
  CostFilterProxy* proxy_;
  QTableView* table_;
  QTreeWidget *callers_, *callees_;
  bool delta_ = false;  // B − A: the edges' amounts are signed changes
};

}  // namespace memledger::gui
