// What the Fragmentation view shows of one instant (fragmentation_view.h): the event that made
// it, the coverage and exactness sentence, the numbers, the legend, the selected block's stack.
#include <QApplication>
#include <QPointer>
#include <QtConcurrent/QtConcurrent>

#include "analyzer/format.h"
#include "gui/fragmentation_view.h"
#include "gui/leaks_view.h"  // stackHtml

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
QString bytesText(uint64_t b) { return QString::fromStdString(an::formatBytes(int64_t(b))); }
QString countText(int64_t n) { return QString::fromStdString(an::formatCount(n)); }
QString timeText(int64_t t) { return QString::fromStdString(an::formatDuration(t)); }
QString hex(uint64_t a) { return "0x" + QString::number(a, 16); }
// A square of a colour with a thin frame (a colour close to the background still shows).
QString swatch(const QColor& c) {
  return QString("<table border=1 cellspacing=0 cellpadding=0 style=\"border-color:#808080\"><tr><td bgcolor=\"%1\" "
                 "width=14>&nbsp;</td></tr></table>")
      .arg(c.name());
}
}  // namespace

void FragmentationView::showLayout(std::shared_ptr<const an::MapLayout> layout, std::vector<std::pair<int64_t, QString>> sites,
                                   QString eventSite, bool selectEvent) {
  layout_ = std::move(layout);
  siteNames_ = std::move(sites);
  const an::HeapHistory& h = *history_;
  const an::MapLayout& l = *layout_;
  map_->setMap(history_, layout_);
  chart_->setCursor(l.t_ns);
  if (selectEvent) {
    QSignalBlocker block(slider_);
    slider_->setValue(tickOf(l.t_ns));
  }
  time_->setText(tr("%1 · event %2 of %3").arg(timeText(l.t_ns), countText(int64_t(l.applied)), countText(int64_t(h.events.size()))));
  if (l.applied == 0) {
    event_->setText(tr("Before the first event of this range."));
  } else {
    const an::MapEvent& e = h.events[l.applied - 1];
    const an::MapBlock& b = h.blocks[e.block];
    const QString where = hex(b.address), when = timeText(e.t_ns);
    event_->setText(e.alloc ? tr("Last event: %1 of %2 at %3 by %4, at %5")
                                  .arg(QString::fromStdString(h.ops[b.op]), bytesText(b.size), where, eventSite, when)
                            : tr("Last event: free of the %1 at %2 that %3 allocated, at %4")
                                  .arg(bytesText(b.size), where, eventSite, when));
  }
  // The coverage of the recording, and whether this instant is exact.
  QString exactness;
  if (l.exact) {
    exactness = tr("<b>Exact at this instant</b>: every block live then has a row.");
  } else if (l.rowless_max) {
    exactness = tr("<b style=\"color:#c0392b\">Not exact at this instant</b>: %1 of %2 live then %3 no row; the gaps "
                   "(drawn in the colour of <i>unknown</i>) may hold them.")
                    .arg(*l.rowless_min == *l.rowless_max ? bytesText(uint64_t(*l.rowless_max))
                                                           : tr("%1 to %2").arg(bytesText(uint64_t(*l.rowless_min)),
                                                                                bytesText(uint64_t(*l.rowless_max))))
                    .arg(QString::fromStdString(h.region.space))
                    .arg(*l.rowless_min == *l.rowless_max ? tr("have") : tr("may have"));
  } else {
    exactness = tr("<b style=\"color:#c0392b\">Not known to be exact at this instant</b>: the gaps (drawn as "
                   "<i>unknown</i>) may hold blocks without a row.");
  }
  message_->setText(QString::fromStdString(an::mapCoverageText(h)).toHtmlEscaped() + "<br>" + exactness);
  // The instant's numbers.
  const bool one = l.holes.size() == 1;
  const QString holes = l.exact ? (one ? tr("hole") : tr("holes")) : (one ? tr("gap") : tr("gaps"));
  stats_->setText(tr("<b>%1</b><br>live %2 in %3 %4<br>free %5 (%6% internal) in %7 %8, largest %9<br>")
                      .arg(QString::fromStdString(an::regionText(h.region)).toHtmlEscaped(), bytesText(l.live_bytes),
                           countText(int64_t(l.live.size())), l.live.size() == 1 ? tr("block") : tr("blocks"),
                           bytesText(l.freeBytes()))
                      .arg(l.internalShare() * 100, 0, 'f', 1)
                      .arg(countText(int64_t(l.holes.size())), holes, bytesText(l.largest_hole)) +
                  tr("free / span %1%, external fragmentation %2%<br>span %3 (%4)")
                      .arg(l.freeRatio() * 100, 0, 'f', 1)
                      .arg(l.externalFragmentation() * 100, 0, 'f', 1)
                      .arg(bytesText(l.span_to - l.span_from),
                           h.region.reserved ? tr("the pool's reserved range") : tr("first to last live block")));
  updateLegend();
  if (selectEvent && l.applied > 0) {
    const uint32_t b = h.events[l.applied - 1].block;
    map_->setSelected(b);
    showBlock(b);
  } else if (auto s = map_->selected()) {
    showBlock(*s);  // the same block, its age at the new instant
  }
}

void FragmentationView::updateLegend() {
  if (!history_ || !layout_) return legend_->clear();
  const an::MapLayout& l = *layout_;
  QString html = "<table cellspacing=2>";
  auto row = [&](const QColor& c, const QString& text) {
    html += QString("<tr><td>%1</td><td>%2</td></tr>").arg(swatch(c), text);
  };
  if (map_->colouring() == HeapMapWidget::Colouring::Site) {
    for (const auto& [id, name] : siteNames_)
      for (const an::MapSite& s : l.sites)
        if (s.stack_id == id)
          row(HeapMapWidget::siteColour(id), tr("%1 · %2 in %3").arg(name.toHtmlEscaped(), bytesText(s.bytes), countText(s.count)));
    if (l.sites.size() > siteNames_.size())
      html += tr("<tr><td></td><td>and %1 other sites</td></tr>").arg(countText(int64_t(l.sites.size() - siteNames_.size())));
  } else {
    row(HeapMapWidget::ageColour(0), tr("young (1 us)"));
    row(HeapMapWidget::ageColour(0.5), tr("middle (log scale)"));
    row(HeapMapWidget::ageColour(1), tr("oldest in view (%1)").arg(timeText(map_->oldestAge())));
  }
  if (l.exact) {
    row(HeapMapWidget::holeColour(), tr("hole: free between live blocks"));
  } else {
    row(map_->unknownColour(), tr("unknown: free, or blocks without a row"));
  }
  if (history_->slack_limit) row(map_->slackColour(), tr("rounding and headers (gaps under %1)").arg(bytesText(history_->slack_limit)));
  if (!history_->region.reserved && l.exact) row(map_->outsideColour(), tr("nothing live (before the first, after the last block)"));
  html += "</table>";
  if (map_->viewFrom() != history_->region.from || map_->viewTo() != history_->region.to)
    html += tr("Zoomed to %1-%2 (Backspace: the whole range)").arg(hex(map_->viewFrom()), hex(map_->viewTo()));
  else
    html += tr("Wheel: zoom; click: a block's stack");
  legend_->setText(html);
}

void FragmentationView::showBlock(std::optional<uint32_t> block) {
  if (!block || !history_ || !layout_ || *block >= history_->blocks.size()) {
    details_->clear();
    stackText_.clear();
    copy_->setEnabled(false);
    return;
  }
  const an::MapBlock b = history_->blocks[*block];
  const QString op = QString::fromStdString(history_->ops[b.op]);
  const int64_t t = layout_->t_ns;
  const bool live = b.t_alloc <= t && (!b.t_free || *b.t_free > t);
  QString head = tr("<b>%1 B at %2</b> (%3)<br>allocated at %4, %5<br>%6<br><br>")
                     .arg(countText(int64_t(b.size)), hex(b.address), op.toHtmlEscaped(), timeText(b.t_alloc),
                          b.t_free ? tr("freed at %1").arg(timeText(*b.t_free)) : tr("never freed (live at the process's end)"),
                          live ? tr("%1 old at this instant").arg(timeText(t - b.t_alloc)) : tr("not live at this instant"));
  const uint64_t gen = ++stackGeneration_;
  details_->setHtml(head + tr("<i>reading the stack...</i>"));
  copy_->setEnabled(false);
  auto rec = data_->rec;
  QPointer<FragmentationView> self(this);
  jobs_.append(QtConcurrent::run([self, rec, gen, head, id = b.stack_id] {
    an::Stack stack;
    try {
      stack = rec->stack(id);
    } catch (const std::exception&) {
    }
    if (!self) return;
    QMetaObject::invokeMethod(self.data(), [self, gen, head, stack] {
      if (!self || self->stackGeneration_ != gen) return;
      QStringList lines;
      for (const an::Frame& f : stack) lines << QString::fromStdString(an::printable(an::frameText(f)));
      self->stackText_ = lines.join('\n');
      self->details_->setHtml(head + stackHtml(stack));
      self->copy_->setEnabled(!stack.empty());
    }, Qt::QueuedConnection);
  }));
}

}  // namespace memledger::gui
