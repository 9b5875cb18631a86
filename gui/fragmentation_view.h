// Fragmentation: the map of one address range (a heap region, an mmap arena, a pool, a device's
// allocations) at a chosen instant, from analyzer/heap_map.h. A process and range chooser, the
// map coloured by site or age with holes red, a time slider and step-one-event buttons, the free
// share over time beside it (with the heap's RSS-based ratio), the statistics of the instant
// ("X free (Y% internal) in N holes"), and a click on a block showing its stack.
//
// It says plainly what the recording's rows can show: every block (--no-fold), long-lived ones
// (--fold-ms) or leaks only (the default), and whether the instant shown is exact; where it is
// not, gaps are drawn as "unknown", never as holes.
//
// Every question runs on a worker (QtConcurrent) with a QueryControl: the ranges and a range's
// history show progress and Cancel here; a newer choice cancels the older, and a result that
// arrives after a newer request is dropped. Layouts are computed from the history in memory on a
// worker, one at a time: while one runs, only the newest request waits (a dragged slider stays
// responsive and never queues up stale instants).
#pragma once

#include <QComboBox>
#include <QFuture>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QTextBrowser>
#include <QToolButton>
#include <QWidget>

#include <memory>
#include <optional>

#include "analyzer/heap_map.h"
#include "gui/document.h"
#include "gui/heap_map_widget.h"

namespace memledger::gui {

class FragmentationView : public QWidget {
  Q_OBJECT
 public:
  explicit FragmentationView(QWidget* parent = nullptr);
  ~FragmentationView() override;  // cancels and waits for its jobs

  // A newly opened recording: its ranges are read when the view is first shown.
  void setData(std::shared_ptr<const RecordingData> data);
  // The space whose largest range is shown first (`--space` on the command line); by default the
  // range with the most blocks.
  void setPreferredSpace(const QString& space) { preferredSpace_ = space; }
  // Exports the view: SVG by the suffix, else PNG.
  bool exportImage(const QString& path);

  // What is shown (for tests and the screenshot).
  bool isSettled() const { return settled_; }  // the last request is shown (or its message)
  const std::vector<analyzer::MapRegion>& regions() const { return regions_; }
  std::shared_ptr<const analyzer::HeapHistory> history() const { return history_; }
  std::shared_ptr<const analyzer::MapLayout> layout() const { return layout_; }
  QString message() const { return message_->text(); }   // the coverage / exactness banner
  QString statistics() const { return stats_->text(); }
  QString details() const { return details_->toPlainText(); }
  QString eventText() const { return event_->text(); }
  QString selectedStack() const { return stackText_; }
  QComboBox* processBox() const { return process_; }
  QComboBox* regionBox() const { return region_; }
  QComboBox* colourBox() const { return colour_; }
  QSlider* slider() const { return slider_; }
  HeapMapWidget* map() const { return map_; }
  RatioChart* chart() const { return chart_; }
  QPushButton* copyButton() const { return copy_; }

  // Shows the range at index `index` of regions().
  void showRegion(int index);
  void showTime(int64_t t_ns);
  void step(int events);       // -1 / +1: the previous / next event
  void showEvents(size_t applied);
  // The slider's ticks and instants.
  int64_t timeOfTick(int tick) const;
  int tickOf(int64_t t) const;

 signals:
  void settled();

 protected:
  void showEvent(QShowEvent*) override;

 private:
  struct Request {
    std::optional<int64_t> t_ns;  // an instant, or
    size_t applied = 0;           // the state after this many events
    bool selectEvent = false;     // select the block of the last event applied (stepping)
  };
  void loadRegions();
  void fillRegions(int image);
  int listRegions(int image);
  void requestLayout(Request r);
  void startLayout(Request r);
  void showLayout(std::shared_ptr<const analyzer::MapLayout> layout, std::vector<std::pair<int64_t, QString>> sites,
                  QString eventSite, bool selectEvent);
  void showBlock(std::optional<uint32_t> block);
  void updateLegend();
  void setBusy(const QString& what);
  void setIdle();
  void settle();

  std::shared_ptr<const RecordingData> data_;
  bool regionsRequested_ = false;
  QString preferredSpace_;
  std::vector<analyzer::MapRegion> regions_;
  std::shared_ptr<const analyzer::HeapHistory> history_;
  std::shared_ptr<const analyzer::MapLayout> layout_;
  std::vector<std::pair<int64_t, QString>> siteNames_;  // the top sites of the layout shown
  int64_t t0_ = 0, t1_ = 1;                              // the slider's time range
  std::shared_ptr<analyzer::QueryControl> control_;      // of the regions or history job running
  uint64_t generation_ = 0;                              // of the regions and history jobs
  bool layoutRunning_ = false;
  std::optional<Request> pending_;
  uint64_t stackGeneration_ = 0;
  bool settled_ = false;
  QString stackText_;
  QList<QFuture<void>> jobs_;

  QComboBox *process_, *region_, *colour_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel *message_, *stats_, *legend_, *event_, *time_;
  HeapMapWidget* map_;
  RatioChart* chart_;
  QSlider* slider_;
  QToolButton *first_, *prev_, *next_, *last_;
  QTextBrowser* details_;
  QPushButton* copy_;
};

}  // namespace memledger::gui
