// Compare: a second recording against the open one, per site (analyzer/diff.h, the same diff
// `memledger diff A B` prints): a sortable table of the changed sites and a flame graph of the
// differences (top-down, widths by the size of the change, growth red and shrink blue).
// The document opens B (gui/document.h); the two recordings are compared on a worker thread.
#pragma once

#include <QAbstractTableModel>
#include <QComboBox>
#include <QFutureWatcher>
#include <QThreadPool>
#include <QLabel>
#include <QTableView>
#include <QTextBrowser>
#include <QWidget>

#include <memory>

#include "analyzer/diff.h"

namespace memledger::gui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  enum Column { kSite, kStatus, kPeak, kLeaked, kAllocated, kCount, kTemporary, kKind, kColumns };
  void setDiff(std::shared_ptr<const analyzer::DiffResult> diff);
  const analyzer::SiteDiff* site(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const analyzer::DiffResult> diff_;
};

// The differences as an icicle: one box per frame from the outermost, its width the sum of the
// absolute changes of the sites below it, its colour the sign of their net change.
class DiffFlame : public QWidget {
  Q_OBJECT
 public:
  enum class Metric { Peak, Leaked, Allocated };
  explicit DiffFlame(QWidget* parent = nullptr);
  void setDiff(std::shared_ptr<const analyzer::DiffResult> diff, Metric metric);
  struct Node {
    QString name;
    int64_t delta = 0;     // net change below this frame
    int64_t absolute = 0;  // sum of the absolute changes below it (the width)
    std::vector<int> children;
  };
  const std::vector<Node>& nodes() const { return nodes_; }  // [0] is the root
  QSize sizeHint() const override { return {800, 300}; }

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;

 private:
  struct Box {
    QRectF rect;
    int node;
  };
  std::vector<Node> nodes_;
  std::vector<Box> boxes_;
};

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;
  // Says that `after` (B) is being read to compare with `before` (A).
  void comparing(const QString& before, const QString& after);
  // Compares B with A (the document's open recordings: their caches shared with its views) on
  // a worker; compared() once shown (or failed).
  void compare(std::shared_ptr<analyzer::Recording> before, std::shared_ptr<analyzer::Recording> after);
  // B could not be read: says so, and compared() with error() set.
  void fail(const QString& message);
  bool busy() const { return watcher_.isRunning(); }
  std::shared_ptr<const analyzer::DiffResult> diff() const { return diff_; }
  QString error() const { return error_; }
  CompareModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  DiffFlame* flame() const { return flame_; }

 signals:
  void compared();

 private:
  void show(std::shared_ptr<const analyzer::DiffResult> diff);
  std::shared_ptr<const analyzer::DiffResult> diff_;
  QString error_;
  QThreadPool pool_;  // not Qt's global pool, which the raster engine's paints wait for (gui/document.h)
  QFutureWatcher<void> watcher_;
  QLabel* header_;
  QComboBox* metric_;
  CompareModel* model_;
  QTableView* table_;
  QTextBrowser* stack_;
  DiffFlame* flame_;
};

}  // namespace memledger::gui
