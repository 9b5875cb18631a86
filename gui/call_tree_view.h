// Top-down and bottom-up trees: a QTreeView over CallTreeModel behind a CostFilterProxy, with
// function/file/module filters, "Copy stack" and "Open in editor" ($EDITOR, or the editor
// command set in the settings: "%f" file, "%l" line).
#pragma once

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QTreeView>
#include <QWidget>

#include "gui/call_tree_model.h"

namespace memledger::gui {

// Opens a frame's source file in the configured editor; false when the frame has no file.
bool openInEditor(const analyzer::Frame* frame, QWidget* parent);
// "range: allocated and leaked in 1.2 s to 2.3 s; peak and temporary: whole run" or "".
QString rangeNote(const RangeData* range);
// Widens the cost columns whose header text no longer fits.
void fitHeaders(QHeaderView* header, const QAbstractItemModel* model);

class CallTreeView : public QWidget {
  Q_OBJECT
 public:
  CallTreeView(analyzer::TreeDirection direction, QWidget* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  QTreeView* tree() const { return view_; }
  CallTreeModel* model() const { return model_; }
  CostFilterProxy* proxy() const { return proxy_; }
  void setFilters(const QString& function, const QString& file, const QString& module);
  QString selectedStack() const;

 private:
  void contextMenu(const QPoint& pos);
  CallTreeModel* model_;
  CostFilterProxy* proxy_;
  QTreeView* view_;
  QLineEdit *function_, *file_, *module_;
  QLabel* note_;
};

}  // namespace memledger::gui
