// Leaks by site (of the selected range when one is selected: blocks made in it and never freed)
// with the selected site's stack beside it; and the suggestions with their evidence. Both tables
// export as CSV.
#pragma once

#include <QAbstractTableModel>
#include <QTableView>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QWidget>

#include "gui/document.h"

class QLabel;
class QSortFilterProxyModel;

namespace memledger::gui {

class LeakChangesModel;

class LeaksModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  enum Column { kSite, kBytes, kCount, kKind, kLeakKinds, kOrigin, kProcesses, kColumns };
  // The list only, not the range's trees (a view off screen keeps it until shown).
  void setLeaks(std::shared_ptr<const analyzer::Leaks> leaks);
  const analyzer::SiteAmount* site(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const analyzer::Leaks> leaks_;
};

// The rows of any table model as CSV (display text, header first).
QString tableCsv(const QAbstractItemModel& model);
// A stack as HTML lines, innermost first.
QString stackHtml(const analyzer::Stack& stack);

class LeaksView : public QWidget {
  Q_OBJECT
 public:
  explicit LeaksView(QWidget* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  QTableView* table() const { return table_; }
  LeaksModel* model() const { return model_; }
  // In B − A (a comparison shown as differences): the table's rows are these, per site.
  LeakChangesModel* changes() const { return changes_; }
  QTextBrowser* stack() const { return stack_; }
  QLabel* note() const { return note_; }

 private:
  void showSite(const QModelIndex& current);
  LeaksModel* model_;
  LeakChangesModel* changes_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QTextBrowser* stack_;
  QLabel* note_;  // when only the largest sites are listed; in B − A the two totals
};

class SuggestionsView : public QWidget {
  Q_OBJECT
 public:
  explicit SuggestionsView(QWidget* parent = nullptr);
  void setData(std::shared_ptr<const RecordingData> data);
  QTreeWidget* list() const { return list_; }

 signals:
  void showFunction(const QString& symbol);  // jump to the site in caller/callee

 private:
  std::shared_ptr<const RecordingData> data_;
  QTreeWidget* list_;
  QTextBrowser* detail_;
};

}  // namespace memledger::gui
