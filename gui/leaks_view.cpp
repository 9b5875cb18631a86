#include "gui/leaks_view.h"

#include <QLabel>

#include <QHeaderView>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QSizePolicy>
#include <QVBoxLayout>

#include "analyzer/format.h"
#include "gui/change_models.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
// "definite 32 B, indirect 64 B": the site's leak kinds from the exit scan (heap sites only).
QString leakKindsText(const an::SiteAmount& s) {
  QStringList parts;
  for (int k = 0; k < an::kLeakKindSlots; ++k)
    if (s.leak_kinds[k].count)
      parts << QString("%1 %2").arg(QString(an::leakKindName(k)).replace('_', ' '),
                                    QString::fromStdString(an::formatBytes(s.leak_kinds[k].bytes)));
  return parts.join(", ");
}
}  // namespace

void LeaksModel::setLeaks(std::shared_ptr<const an::Leaks> leaks) {
  beginResetModel();
  leaks_ = std::move(leaks);
  endResetModel();
}

const an::SiteAmount* LeaksModel::site(int row) const {
  if (!leaks_ || row < 0 || size_t(row) >= leaks_->sites.size()) return nullptr;
  return &leaks_->sites[size_t(row)];
}

int LeaksModel::rowCount(const QModelIndex& p) const { return p.isValid() || !leaks_ ? 0 : int(leaks_->sites.size()); }
int LeaksModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : kColumns; }

QVariant LeaksModel::data(const QModelIndex& index, int role) const {
  const an::SiteAmount* s = site(index.row());
  if (!s) return {};
  if (role == Qt::TextAlignmentRole && (index.column() == kBytes || index.column() == kCount))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role == Qt::UserRole) {
    if (index.column() == kBytes) return qlonglong(s->bytes);
    if (index.column() == kCount) return qlonglong(s->count);
  }
  if (role != Qt::DisplayRole && role != Qt::UserRole) return {};
  switch (index.column()) {
    case kSite: return QString::fromStdString(an::siteText(s->stack));
    case kBytes: return QString::fromStdString(an::formatBytes(s->bytes));
    case kCount: return QString::fromStdString(an::formatCount(s->count));
    case kKind: return QString::fromStdString(s->kind);
    case kLeakKinds: return leakKindsText(*s);
    case kOrigin: return QString::fromStdString(s->origin);
    case kProcesses: return s->processes.empty() ? QString::number(s->pid) : tr("%1 processes").arg(s->processes.size());
  }
  return {};
}

QVariant LeaksModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kSite: return tr("Site");
    case kBytes: return tr("Leaked");
    case kCount: return tr("Blocks");
    case kKind: return tr("Kind");
    case kLeakKinds: return tr("Leak kinds");
    case kOrigin: return tr("Origin");
    case kProcesses: return tr("Process");
  }
  return {};
}

QString tableCsv(const QAbstractItemModel& m) {
  auto cell = [](QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace("\"", "\"\"") + '"';
    return s;
  };
  QStringList lines, row;
  for (int c = 0; c < m.columnCount(); ++c) row << cell(m.headerData(c, Qt::Horizontal).toString());
  lines << row.join(',');
  for (int r = 0; r < m.rowCount(); ++r) {
    row.clear();
    for (int c = 0; c < m.columnCount(); ++c) {
      QVariant raw = m.index(r, c).data(Qt::UserRole);  // exact numbers where a column has them
      row << cell(raw.isValid() && raw.canConvert<qlonglong>() && raw.typeId() != QMetaType::QString
                      ? QString::number(raw.toLongLong())
                      : m.index(r, c).data().toString());
    }
    lines << row.join(',');
  }
  return lines.join('\n') + '\n';
}

QString stackHtml(const an::Stack& stack) {
  QString h;
  for (const an::Frame& f : stack) h += QString::fromStdString(an::printable(an::frameText(f))).toHtmlEscaped() + "<br>";
  return h.isEmpty() ? QObject::tr("<i>no stack</i>") : h;
}

LeaksView::LeaksView(QWidget* parent)
    : QWidget(parent),
      model_(new LeaksModel(this)),
      changes_(new LeakChangesModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      stack_(new QTextBrowser(this)),
      note_(new QLabel(this)) {
  setObjectName("leaks");
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(Qt::UserRole);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(LeaksModel::kBytes, Qt::DescendingOrder);
  table_->horizontalHeader()->resizeSection(LeaksModel::kLeakKinds, 240);  // "definite 32 B, indirect 64 B"
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->resizeSection(LeaksModel::kSite, 380);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(table_);
  split->addWidget(stack_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  note_->setWordWrap(true);
  note_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Maximum);  // one line, not half the view
  note_->hide();
  layout->addWidget(note_);
  layout->addWidget(split, 1);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &LeaksView::showSite);
}

void LeaksView::showSite(const QModelIndex& cur) {
  const int row = proxy_->mapToSource(cur).row();
  if (proxy_->sourceModel() == changes_) {
    const an::SiteChange* c = changes_->site(row);
    stack_->setHtml(c ? QString("<b>%1 leaked, %2 blocks</b> (%3)<br>A: %4 in %5 blocks<br>B: %6 in %7 blocks<br><br>%8")
                            .arg(signedBytes(c->deltaBytes()), signedCount(c->deltaCount()), changeStatusText(*c).toHtmlEscaped(),
                                 QString::fromStdString(an::formatBytes(c->bytes_a)), QString::fromStdString(an::formatCount(c->count_a)),
                                 QString::fromStdString(an::formatBytes(c->bytes_b)), QString::fromStdString(an::formatCount(c->count_b)),
                                 stackHtml(c->stack))
                      : QString());
    return;
  }
  const an::SiteAmount* s = model_->site(row);
  QString kinds = s ? leakKindsText(*s) : QString();
  stack_->setHtml(s ? QString("<b>%1 in %2 blocks</b> (%3)%4<br><br>%5")
                          .arg(QString::fromStdString(an::formatBytes(s->bytes)),
                               QString::fromStdString(an::formatCount(s->count)),
                               QString::fromStdString(s->origin_reason.empty() ? s->origin : s->origin_reason).toHtmlEscaped(),
                               kinds.isEmpty() ? QString() : "<br>" + tr("leak kinds: %1").arg(kinds).toHtmlEscaped(),
                               stackHtml(s->stack))
                    : QString());
}

void LeaksView::setRange(std::shared_ptr<const RangeData> range) {
  const bool diff = range && range->diff() && range->leak_changes;
  QAbstractItemModel* source = diff ? static_cast<QAbstractItemModel*>(changes_) : model_;
  if (proxy_->sourceModel() != source) {
    proxy_->setSourceModel(source);
    table_->horizontalHeader()->resizeSection(0, 380);
    table_->sortByColumn(diff ? int(LeakChangesModel::kDeltaBytes) : int(LeaksModel::kBytes), Qt::DescendingOrder);
  }
  auto b = [](int64_t v) { return QString::fromStdString(an::formatBytes(v)); };
  auto n = [](int64_t v) { return QString::fromStdString(an::formatCount(v)); };
  if (diff) {
    // The two totals and how the sites were matched; the lists compared are each side's largest.
    const an::ListChanges& c = *range->leak_changes;
    QString text = tr("B \u2212 A: %1 leaked in %2 blocks (A %3 in %4 blocks, B %5 in %6 blocks); sites changed: %7, "
                      "matched by function and file as memledger diff matches them.")
                       .arg(signedBytes(c.bytes_b - c.bytes_a), signedCount(c.count_b - c.count_a), b(c.bytes_a), n(c.count_a),
                            b(c.bytes_b), n(c.count_b), n(int64_t(c.sites.size())));
    if (c.cut_a || c.cut_b)
      text += " " + tr("Each side lists its %1 largest sites (A has %2, B %3): %4 sites listed by one side only and within "
                       "the other's cut are not compared; one past the other's cut counts 0 there.")
                        .arg(n(int64_t(kListedSites)), n(int64_t(c.sites_a)), n(int64_t(c.sites_b)), n(int64_t(c.uncertain)));
    note_->setText(text);
    note_->setVisible(true);
    changes_->setChanges(range->leak_changes);
    model_->setLeaks(nullptr);
  } else {
    const an::Leaks* leaks = range ? &range->leaks() : nullptr;
    const bool cut = leaks && leaks->site_count > leaks->sites.size();
    if (cut)
      note_->setText(tr("The %1 largest of %2 leaking sites (%3 in %4 blocks in all); the trees and the flame graph "
                        "with the metric \"leaked\" hold every site.")
                         .arg(n(int64_t(leaks->sites.size())), n(int64_t(leaks->site_count)), b(leaks->bytes), n(leaks->count)));
    note_->setVisible(cut);
    model_->setLeaks(range ? range->leaks_list : nullptr);
    changes_->setChanges(nullptr);
  }
  table_->sortByColumn(table_->horizontalHeader()->sortIndicatorSection(), table_->horizontalHeader()->sortIndicatorOrder());
  if (proxy_->rowCount() > 0) table_->selectRow(0);
  else stack_->setHtml(diff ? tr("<i>No leak changed between A and B in this range.</i>") : tr("<i>No leaks in this range.</i>"));
}

SuggestionsView::SuggestionsView(QWidget* parent)
    : QWidget(parent), list_(new QTreeWidget(this)), detail_(new QTextBrowser(this)) {
  setObjectName("suggestions");
  list_->setHeaderLabels({tr("Severity"), tr("Kind"), tr("Confidence"), tr("Suggestion")});
  list_->setRootIsDecorated(false);
  list_->setWordWrap(true);
  auto* jump = new QPushButton(tr("Show the site in Caller/Callee"), this);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(list_);
  split->addWidget(detail_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(split);
  layout->addWidget(jump);
  connect(list_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    if (!item || !data_) return detail_->clear();
    const an::Suggestion& s = data_->report.suggestions[size_t(item->data(0, Qt::UserRole).toInt())];
    detail_->setHtml(QString("<p><b>%1</b></p><p>%2</p><p><b>%3</b> %4</p><p>%5</p>")
                         .arg(QString::fromStdString(s.message).toHtmlEscaped(),
                              QString::fromStdString(s.confidence_reason).toHtmlEscaped(), tr("Evidence:"),
                              QString::fromStdString(an::formatEvidence(s.evidence)).toHtmlEscaped(), stackHtml(s.stack)));
  });
  connect(jump, &QPushButton::clicked, this, [this] {
    QTreeWidgetItem* item = list_->currentItem();
    if (!item || !data_) return;
    const an::Suggestion& s = data_->report.suggestions[size_t(item->data(0, Qt::UserRole).toInt())];
    for (const an::Frame& f : s.stack)
      if (f.function) return emit showFunction(QString::fromStdString(*f.function));
  });
}

void SuggestionsView::setData(std::shared_ptr<const RecordingData> data) {
  data_ = std::move(data);
  list_->clear();
  if (!data_) return;
  int i = 0;
  for (const an::Suggestion& s : data_->report.suggestions) {
    auto* item = new QTreeWidgetItem(list_, {QString::fromStdString(s.severity), QString::fromStdString(s.kind),
                                             QString::fromStdString(s.confidence), QString::fromStdString(s.message)});
    item->setData(0, Qt::UserRole, i++);
  }
  for (int c = 0; c < 3; ++c) list_->resizeColumnToContents(c);
  if (list_->topLevelItemCount()) list_->setCurrentItem(list_->topLevelItem(0));
}

}  // namespace memledger::gui
