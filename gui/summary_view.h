// The run at a glance: processes with how each ended, duration, totals, every space's peak and
// when, leaks, temporaries, the top suggestions with their evidence and four top lists. Every
// item is a link (view:NAME, peak:SERIES) the main window follows to the view that explains it.
#pragma once

#include <QTextBrowser>

#include "gui/document.h"

namespace memledger::gui {

class SummaryView : public QTextBrowser {
  Q_OBJECT
 public:
  explicit SummaryView(QWidget* parent = nullptr);
  void setData(std::shared_ptr<const RecordingData> data, std::shared_ptr<const RangeData> range);
  // The HTML shown, for tests.
  static QString html(const RecordingData& data, const RangeData* range);
  // B − A (range->diff()): both runs' headline numbers side by side with their changes, the
  // largest leak changes and the size bucket that changed most, each linked to its view.
  static QString compareHtml(const RangeData& range);

 signals:
  void linkActivated(const QString& link);  // "view:leaks", "peak:heap", "site:STACK_ID"

 protected:
  void showEvent(QShowEvent* e) override;

 private:
  void refresh();
  std::shared_ptr<const RecordingData> data_;
  std::shared_ptr<const RangeData> range_;
  bool dirty_ = false;
};

}  // namespace memledger::gui
