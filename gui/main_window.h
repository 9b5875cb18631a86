// The application shell: File→Open, recent files, drag and drop, the Timeline dock above every
// view, one tab per view, progress and Cancel in the status bar, the layout kept in QSettings.
// A file that cannot be read shows its one-line message in the window (never an empty window).
#pragma once

#include <QComboBox>
#include <QLabel>
#include <QMainWindow>

#include <set>
#include <QProgressBar>
#include <QPushButton>
#include <QStackedWidget>
#include <QTabWidget>

#include "gui/document.h"

namespace memledger::gui {

class SummaryView;
class TimelineWidget;
class CallTreeView;
class CallerCalleeView;
class FlameGraphView;
class LeaksView;
class SuggestionsView;
class SizesView;
class CompareView;
class ChartsView;
class FragmentationView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  void openFile(const QString& path);
  // summary, timeline, flamegraph, charts, bottom-up, top-down, caller-callee, leaks, sizes, suggestions, compare,
  // fragmentation
  static QStringList viewNames();
  bool showView(const QString& name);
  // A view that is not on screen takes a new range when it is shown or asked for here.
  QWidget* view(const QString& name) const;
  Document* document() const { return doc_; }
  TimelineWidget* timeline() const { return timeline_; }
  QString message() const { return message_->text(); }  // the welcome/error page's text
  bool showingError() const { return pages_->currentIndex() == 0 && !doc_->error().isEmpty(); }
  // Exports the current view: PNG or SVG (flame graph, fragmentation) by the suffix; tables as CSV.
  bool exportView(const QString& path);
  // Compares `path` (B) with the open recording (A) in the Compare view; false when none is open.
  bool compareWith(const QString& path);
  CompareView* compareView() const { return compare_; }
  ChartsView* chartsView() const { return charts_; }
  // The trees' peak column becomes what was live at t (nullopt: the whole run's peak again).
  void showLiveAt(std::optional<int64_t> t);
  // A, B or B − A in every per-site view (only with a comparison open).
  void setShow(Show show);
  FragmentationView* fragmentationView() const { return fragmentation_; }

 signals:
  void ready();  // the recording and the current range's trees are shown (or an error is)

 protected:
  void closeEvent(QCloseEvent*) override;
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;

 private:
  void buildMenus();
  void updateRecent(const QString& path);
  void followLink(const QString& link);
  void onOpened();
  void onRange();
  QWidget* viewWidget(const QString& name) const;
  // Gives `w` the current range if it has not taken it yet (views off screen wait until shown:
  // a range costs the GUI thread only the visible view's update).
  void bringUpToDate(QWidget* w) const;
  // The Summary of the data shown: B's run in "B" mode, else this recording's, with the range.
  void updateSummary() const;
  mutable std::set<QWidget*> stale_;

  Document* doc_;
  QStackedWidget* pages_;
  QLabel* message_;
  QTabWidget* tabs_;
  TimelineWidget* timeline_;
  QLabel* timelineStatus_;
  SummaryView* summary_;
  CallTreeView *topDown_, *bottomUp_;
  CallerCalleeView* callerCallee_;
  FlameGraphView* flame_;
  LeaksView* leaks_;
  SizesView* sizes_;
  CompareView* compare_;
  ChartsView* charts_;
  FragmentationView* fragmentation_;
  SuggestionsView* suggestions_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QMenu* recentMenu_ = nullptr;
  QMenu* peakMenu_ = nullptr;
  QComboBox* space_ = nullptr;
  QComboBox* show_ = nullptr;  // A | B | B − A, enabled once a comparison is open
};

}  // namespace memledger::gui
