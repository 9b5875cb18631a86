#include "gui/caller_callee_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QVBoxLayout>

#include "analyzer/format.h"
#include "gui/call_tree_view.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
// Edge rows sort by their raw numbers (Qt::UserRole), not by the text "1.5 MiB".
class EdgeItem : public QTreeWidgetItem {
 public:
  using QTreeWidgetItem::QTreeWidgetItem;
  bool operator<(const QTreeWidgetItem& other) const override {
    int c = treeWidget() ? treeWidget()->sortColumn() : 0;
    if (c == 0) return text(0) < other.text(0);
    return data(c, Qt::UserRole).toLongLong() < other.data(c, Qt::UserRole).toLongLong();
  }
};
}  // namespace

void SymbolTableModel::setRange(std::shared_ptr<const RangeData> range) {
  beginResetModel();
  range_ = std::move(range);
  endResetModel();
}

const an::SymbolCost* SymbolTableModel::symbol(int row) const {
  if (!range_ || row < 0 || size_t(row) >= range_->symbols.size()) return nullptr;
  return &range_->symbols[size_t(row)];
}

int SymbolTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !range_ ? 0 : int(range_->symbols.size());
}
int SymbolTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

QVariant SymbolTableModel::data(const QModelIndex& index, int role) const {
  const an::SymbolCost* s = symbol(index.row());
  if (!s) return {};
  if (role == kFrameRole) return QVariant::fromValue<quintptr>(quintptr(s->frame));
  switch (index.column()) {
    case kSymbolColumn:
      return role == Qt::DisplayRole || role == Qt::UserRole ? QVariant(QString::fromStdString(s->symbol)) : QVariant();
    case kLocationColumn:
      return role == Qt::DisplayRole || role == Qt::UserRole ? QVariant(locationText(s->frame)) : QVariant();
    default:
      if (role == Qt::ToolTipRole)
        return tr("inclusive %1, self %2")
            .arg(costData(s->inclusive, index.column(), Qt::DisplayRole, range_->diff()).toString(),
                 costData(s->self, index.column(), Qt::DisplayRole, range_->diff()).toString());
      return costData(s->inclusive, index.column(), role, range_->diff());
  }
}

QVariant SymbolTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole)
    return section == kSymbolColumn || section == kLocationColumn ? costHeader(section)
                                                                   : costHeader(section, range_.get()) + tr(" (incl.)");
  return {};
}

CallerCalleeView::CallerCalleeView(QWidget* parent)
    : QWidget(parent),
      model_(new SymbolTableModel(this)),
      proxy_(new CostFilterProxy(this)),
      table_(new QTableView(this)),
      callers_(new QTreeWidget(this)),
      callees_(new QTreeWidget(this)) {
  setObjectName("caller-callee");
  proxy_->setSourceModel(model_);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(kAllocatedColumn, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->resizeSection(kSymbolColumn, 360);
  for (int c = kPeakColumn; c <= kTemporaryColumn; ++c) table_->horizontalHeader()->resizeSection(c, 130);
  for (QTreeWidget* w : {callers_, callees_}) {
    w->setColumnCount(3);
    w->setRootIsDecorated(false);
    w->setSortingEnabled(true);
  }
  callers_->setHeaderLabels({tr("Caller"), tr("Allocated"), tr("Peak")});
  callees_->setHeaderLabels({tr("Callee"), tr("Allocated"), tr("Peak")});
  auto* filter = new QLineEdit(this);
  filter->setPlaceholderText(tr("Filter function"));
  filter->setClearButtonEnabled(true);
  connect(filter, &QLineEdit::textChanged, this, [this](const QString& t) { proxy_->setFilters(t, {}, {}); });
  auto* edges = new QSplitter(Qt::Horizontal, this);
  edges->addWidget(callers_);
  edges->addWidget(callees_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(edges);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(filter);
  layout->addWidget(split);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) { showSymbol(model_->symbol(proxy_->mapToSource(cur).row())); });
  connect(table_, &QTableView::activated, this, [this](const QModelIndex& idx) {
    openInEditor(reinterpret_cast<const an::Frame*>(idx.data(kFrameRole).value<quintptr>()), this);
  });
  auto follow = [this](QTreeWidgetItem* item) { if (item) selectSymbol(item->text(0)); };
  connect(callers_, &QTreeWidget::itemActivated, this, follow);
  connect(callees_, &QTreeWidget::itemActivated, this, follow);
}

void CallerCalleeView::setRange(std::shared_ptr<const RangeData> range) {
  delta_ = range && range->diff();
  model_->setRange(std::move(range));
  fitHeaders(table_->horizontalHeader(), model_);
  proxy_->sort(table_->horizontalHeader()->sortIndicatorSection(), table_->horizontalHeader()->sortIndicatorOrder());
  if (proxy_->rowCount() > 0) table_->selectRow(0);
  else showSymbol(nullptr);
}

void CallerCalleeView::selectSymbol(const QString& symbol) {
  for (int r = 0; r < proxy_->rowCount(); ++r)
    if (proxy_->index(r, kSymbolColumn).data().toString() == symbol) {
      table_->selectRow(r);
      table_->scrollTo(proxy_->index(r, 0));
      return;
    }
}

void CallerCalleeView::showSymbol(const an::SymbolCost* s) {
  callers_->clear();
  callees_->clear();
  if (!s) return;
  auto fill = [this](QTreeWidget* w, const std::map<std::string, an::TreeCost>& edges) {
    for (const auto& [name, cost] : edges) {
      auto* item = new EdgeItem(w);
      item->setText(0, QString::fromStdString(name));
      item->setText(1, amountText(cost.allocated, true, delta_));
      item->setText(2, amountText(cost.peak, true, delta_));
      item->setData(1, Qt::UserRole, qlonglong(cost.allocated));
      item->setData(2, Qt::UserRole, qlonglong(cost.peak));
    }
    w->sortItems(1, Qt::DescendingOrder);
    w->resizeColumnToContents(0);
  };
  fill(callers_, s->callers);
  fill(callees_, s->callees);
}

}  // namespace memledger::gui
