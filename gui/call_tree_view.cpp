#include "gui/call_tree_view.h"

#include <QApplication>
#include <QClipboard>
#include <QDesktopServices>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QMenu>
#include <QProcess>
#include <QSettings>
#include <QUrl>
#include <QVBoxLayout>

#include "analyzer/format.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

bool openInEditor(const an::Frame* frame, QWidget*) {
  if (!frame || !frame->file) return false;
  QString file = QString::fromStdString(*frame->file);
  QString line = QString::number(frame->line.value_or(1));
  QString command = QSettings().value("editor").toString();
  if (command.isEmpty()) {
    QString editor = qEnvironmentVariable("EDITOR");
    if (editor.isEmpty()) return QDesktopServices::openUrl(QUrl::fromLocalFile(file));
    command = editor + " +%l %f";
  }
  QStringList args = QProcess::splitCommand(command);
  if (args.isEmpty()) return false;
  for (QString& a : args) a.replace("%f", file).replace("%l", line);
  QString program = args.takeFirst();
  return QProcess::startDetached(program, args);
}

namespace {
QString dur(int64_t ns) { return QString::fromStdString(an::formatDuration(ns)); }
QString bytes(int64_t b) { return QString::fromStdString(an::formatBytes(b)); }

// How the peak column's live set was found, for the space the trees show.
QString liveNote(const RangeData& r) {
  const an::SpaceLive* sp = r.live.space(r.space.value_or("heap"));
  if (!sp) return {};
  switch (sp->basis) {
    case an::LiveBasis::WholeRunPeak:
      return QObject::tr("the run's own peak, %1 at %2, lies in it (exact)").arg(bytes(sp->peak_bytes), dur(sp->peak_ns));
    case an::LiveBasis::Instant:
      return r.live_at_ns ? QObject::tr("exact") : QObject::tr("%1 at %2 (exact)").arg(bytes(sp->bytes), dur(sp->at_ns));
    case an::LiveBasis::BucketEnd:
      if (r.live_at_ns)
        return QObject::tr("bucket-granular: as at %1, the end of the %2 bucket under way then")
            .arg(dur(sp->at_ns), dur(r.live.bucket_ns));
      if (sp->exact)
        return QObject::tr("%1, the live set at the bucket end %2 (exact: the curve stood at its highest then)")
            .arg(bytes(sp->peak_bytes), dur(sp->at_ns));
      return QObject::tr("%1 at %2; bucket-granular: the live set shown is that of the bucket end %3 (%4, %5 below the peak)")
          .arg(bytes(sp->peak_bytes), dur(sp->peak_ns), dur(sp->at_ns), bytes(sp->bytes), bytes(sp->peak_bytes - sp->bytes));
  }
  return {};
}
}  // namespace

QString rangeNote(const RangeData* range) {
  if (!range) return {};
  QStringList parts;
  if (range->diff()) parts << QObject::tr("B \u2212 A per function: red growth, blue shrink.");
  if (range->live_at_ns) {
    if (range->peakFollows())
      parts << QObject::tr("Peak amounts: what was live at %1 (%2); the other amounts are whole-run values.")
                   .arg(dur(*range->live_at_ns), liveNote(*range));
    else
      parts << QObject::tr("Live at %1 is not known for this recording (%2): the peak amounts are the whole run's.")
                   .arg(dur(*range->live_at_ns), QString::fromStdString(range->live.unavailable));
  } else if (range->ranged()) {
    QString span = QObject::tr("Selection %1 to %2").arg(dur(range->from_ns.value_or(0)),
                                                         range->to_ns ? dur(*range->to_ns) : QObject::tr("the end"));
    if (range->peakFollows())
      parts << QObject::tr("%1: allocated, allocations and leaked are of blocks made in it, temporary of those freed in it; "
                           "peak is the selection's highest point: %2.")
                   .arg(span, liveNote(*range));
    else
      parts << QObject::tr("%1: allocated, allocations and leaked are of blocks made in it; peak and temporary are "
                           "whole-run values (%2).")
                   .arg(span, QString::fromStdString(range->live.unavailable));
  }
  return parts.join(' ');
}

void fitHeaders(QHeaderView* header, const QAbstractItemModel* model) {
  // A header that changed ("Peak in selection", "Δ Live at 1.20 s") is never cut.
  for (int c = kPeakColumn; c <= kTemporaryColumn; ++c) {
    int w = header->fontMetrics().horizontalAdvance(model->headerData(c, Qt::Horizontal).toString()) + 28;
    if (header->sectionSize(c) < w) header->resizeSection(c, w);
  }
}

CallTreeView::CallTreeView(an::TreeDirection direction, QWidget* parent)
    : QWidget(parent),
      model_(new CallTreeModel(direction, this)),
      proxy_(new CostFilterProxy(this)),
      view_(new QTreeView(this)),
      function_(new QLineEdit(this)),
      file_(new QLineEdit(this)),
      module_(new QLineEdit(this)),
      note_(new QLabel(this)) {
  setObjectName(direction == an::TreeDirection::TopDown ? "top-down" : "bottom-up");
  proxy_->setSourceModel(model_);
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(kAllocatedColumn, Qt::DescendingOrder);
  view_->setUniformRowHeights(true);
  view_->setIndentation(10);  // deep stacks (interpreters) keep their names readable
  view_->setAlternatingRowColors(true);
  view_->setContextMenuPolicy(Qt::CustomContextMenu);
  view_->header()->setSectionResizeMode(kSymbolColumn, QHeaderView::Interactive);
  view_->header()->resizeSection(kSymbolColumn, 420);
  function_->setPlaceholderText(tr("Filter function"));
  file_->setPlaceholderText(tr("Filter file"));
  module_->setPlaceholderText(tr("Filter module"));
  for (QLineEdit* e : {function_, file_, module_}) {
    e->setClearButtonEnabled(true);
    connect(e, &QLineEdit::textChanged, this, [this] { proxy_->setFilters(function_->text(), file_->text(), module_->text()); });
  }
  auto* filters = new QHBoxLayout;
  filters->addWidget(function_);
  filters->addWidget(file_);
  filters->addWidget(module_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addLayout(filters);
  note_->setWordWrap(true);
  note_->hide();
  layout->addWidget(note_);
  layout->addWidget(view_);
  connect(view_, &QWidget::customContextMenuRequested, this, &CallTreeView::contextMenu);
  connect(view_, &QTreeView::activated, this, [this](const QModelIndex& idx) {
    openInEditor(reinterpret_cast<const an::Frame*>(idx.data(kFrameRole).value<quintptr>()), this);
  });
}

void CallTreeView::setRange(std::shared_ptr<const RangeData> range) {
  QString note = rangeNote(range.get());
  note_->setText(note);
  note_->setVisible(!note.isEmpty());
  model_->setRange(std::move(range));
  fitHeaders(view_->header(), model_);
  proxy_->sort(view_->header()->sortIndicatorSection(), view_->header()->sortIndicatorOrder());
  // The heaviest path open, as heaptrack does.
  QModelIndex idx = proxy_->index(0, 0);
  for (int depth = 0; idx.isValid() && depth < 64; ++depth) {
    view_->expand(idx);
    idx = proxy_->index(0, 0, idx);
  }
}

void CallTreeView::setFilters(const QString& function, const QString& file, const QString& module) {
  function_->setText(function);
  file_->setText(file);
  module_->setText(module);
}

QString CallTreeView::selectedStack() const {
  QModelIndex idx = view_->currentIndex();
  return idx.isValid() ? model_->stackText(proxy_->mapToSource(idx)) : QString();
}

void CallTreeView::contextMenu(const QPoint& pos) {
  QModelIndex idx = view_->indexAt(pos);
  if (!idx.isValid()) return;
  QMenu menu(this);
  QString stack = model_->stackText(proxy_->mapToSource(idx));
  auto* frame = reinterpret_cast<const an::Frame*>(idx.data(kFrameRole).value<quintptr>());
  menu.addAction(tr("Copy stack"), [stack] { QApplication::clipboard()->setText(stack); });
  QAction* open = menu.addAction(tr("Open in editor"), [this, frame] { openInEditor(frame, this); });
  open->setEnabled(frame && frame->file);
  QString symbol = idx.siblingAtColumn(kSymbolColumn).data().toString();
  menu.addAction(tr("Filter on this function"), [this, symbol] { function_->setText(symbol); });
  menu.exec(view_->viewport()->mapToGlobal(pos));
}

}  // namespace memledger::gui
