// B − A as the per-site views show it: signed amounts ("+3.81 MiB", "-10"), a matched site's
// status, and the Leaks table of changes (analyzer/list_diff.h) with growth red, shrink blue.
#pragma once

#include <QAbstractTableModel>
#include <QString>

#include <memory>

#include "gui/document.h"

namespace memledger::gui {

QString signedBytes(int64_t delta);  // "+3.81 MiB", "-9.77 KiB", "0"
QString signedCount(int64_t delta);  // "+1", "-10", "0"
// "new", "gone", "changed", or what a cut list leaves unknown ("changed (below A's 1,000 largest)").
QString changeStatusText(const analyzer::SiteChange& change);
// The colour of a delta's text on the current palette (none for 0).
QVariant deltaForeground(int64_t delta);

class LeakChangesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  enum Column { kSite, kStatus, kDeltaBytes, kDeltaCount, kBytesA, kBytesB, kKind, kColumns };
  void setChanges(std::shared_ptr<const analyzer::ListChanges> changes);
  const analyzer::SiteChange* site(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const analyzer::ListChanges> changes_;
};

}  // namespace memledger::gui
