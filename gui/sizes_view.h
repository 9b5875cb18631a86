// Sizes: a histogram of allocation sizes (power-of-two buckets, of the selected time range) and,
// for the bucket clicked, its top sites with the selected site's stack.
#pragma once

#include <QLabel>
#include <QTextBrowser>
#include <QTreeWidget>
#include <QWidget>

#include "gui/document.h"

namespace memledger::gui {

class SizeBars : public QWidget {
  Q_OBJECT
 public:
  explicit SizeBars(QWidget* parent = nullptr);
  void setHistogram(const analyzer::SizeHistogram* histogram);  // not owned; nullptr: empty
  // B − A: each bucket's blocks in A (an outlined bar) beside B's (filled); not owned.
  void setChanges(const std::vector<analyzer::SizeBucketChange>* changes);
  int selected() const { return selected_; }
  void select(int bucket);
  int buckets() const;
  QRect barRect(int bucket) const;   // where bucket i is drawn (B's bar in B − A; for tests and clicks)
  QRect barRectA(int bucket) const;  // B − A: A's bar of bucket i; empty otherwise
  QSize sizeHint() const override { return {600, 240}; }

 signals:
  void bucketSelected(int bucket);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;

 private:
  QRect plot() const;
  uint64_t fromOf(int bucket) const;
  int64_t countOf(int bucket, bool sideA = false) const;  // blocks in the bucket (B's in B − A)
  int64_t most() const;                                   // the tallest bar's blocks
  QRect column(int bucket, int64_t count, int part, int parts) const;
  const analyzer::SizeHistogram* h_ = nullptr;
  const std::vector<analyzer::SizeBucketChange>* c_ = nullptr;
  int selected_ = -1;
};

class SizesView : public QWidget {
  Q_OBJECT
 public:
  explicit SizesView(QWidget* parent = nullptr);
  void setRange(std::shared_ptr<const RangeData> range);
  SizeBars* bars() const { return bars_; }
  QTreeWidget* sites() const { return sites_; }
  QTextBrowser* stack() const { return stack_; }

 private:
  void showBucket(int bucket);
  std::shared_ptr<const RangeData> range_;
  SizeBars* bars_;
  QLabel* caption_;
  QTreeWidget* sites_;
  QTextBrowser* stack_;
};

}  // namespace memledger::gui
