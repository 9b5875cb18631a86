#include "gui/summary_view.h"

#include <QApplication>

#include <algorithm>
#include <cstdlib>
#include <span>

#include "analyzer/format.h"
#include "gui/change_models.h"
#include "gui/theme.h"

namespace memledger::gui {

namespace an = memledger::analyzer;

namespace {
QString esc(const std::string& s) { return QString::fromStdString(an::printable(s)).toHtmlEscaped(); }
QString bytes(int64_t b) { return QString::fromStdString(an::formatBytes(b)); }
QString dur(int64_t ns) { return QString::fromStdString(an::formatDuration(ns)); }
QString count(int64_t n) { return QString::fromStdString(an::formatCount(n)); }

QString endedText(const an::Process& p) {
  if (!p.ended_by) return QObject::tr("still running when the recording ended");
  if (*p.ended_by == "signal" && p.signal) return QObject::tr("killed by signal %1").arg(*p.signal);
  if (*p.ended_by == "exit") return QObject::tr("exit %1").arg(p.exit_code.value_or(0));
  return QString::fromStdString(*p.ended_by);
}

QString topList(const QString& title, const QString& link, const std::vector<an::SiteAmount>& sites, bool counts) {
  QString h = QString("<h3><a href='%1'>%2</a></h3><table cellspacing=0 cellpadding=2>").arg(link, title);
  // Only the head of the list is added up: keying all of a PyTorch run's 1000 listed stacks of ~55
  // frames each held the GUI thread for 60 ms.
  const std::span<const an::SiteAmount> head = std::span(sites).first(std::min<size_t>(sites.size(), 50));
  const std::vector<an::SiteAmount> shown = an::sitesBySameFrames(head, 5, counts);
  std::vector<const an::Stack*> stacks;
  for (const auto& s : shown) stacks.push_back(&s.stack);
  const std::vector<std::string> texts = an::distinctSiteTexts(stacks);
  for (size_t i = 0; i < texts.size(); ++i)
    h += QString("<tr><td align=right><b>%1</b></td><td>&nbsp;%2</td></tr>")
             .arg(counts ? count(shown[i].count) : bytes(shown[i].bytes), esc(texts[i]));
  if (sites.empty()) h += "<tr><td><i>" + QObject::tr("none") + "</i></td></tr>";
  return h + "</table>";
}
}  // namespace

SummaryView::SummaryView(QWidget* parent) : QTextBrowser(parent) {
  setOpenLinks(false);
  setObjectName("summary");
  // Always there: a page that shows or hides it at each setHtml() narrows or widens the viewport
  // and is laid out a second time (2-3 ms of a range's 12-14 on the GUI thread, a PyTorch run).
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
  connect(this, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) { emit linkActivated(url.toString()); });
}

void SummaryView::setData(std::shared_ptr<const RecordingData> data, std::shared_ptr<const RangeData> range) {
  data_ = std::move(data);
  range_ = std::move(range);
  // Laying out the page takes tens of ms: done when it is shown, not for every range change.
  dirty_ = true;
  if (isVisible()) refresh();
}

void SummaryView::refresh() {
  if (!dirty_) return;
  dirty_ = false;
  if (!data_) clear();
  else setHtml(html(*data_, range_.get()));
}

void SummaryView::showEvent(QShowEvent* e) {
  refresh();
  QTextBrowser::showEvent(e);
}

QString SummaryView::compareHtml(const RangeData& range) {
  const an::Report& a = range.shown->report;
  const an::Report& b = range.other->report;
  auto title = [](const an::Report& r) {
    std::string t = r.recording.command.empty() ? r.recording.path : r.recording.command;
    return esc(t.size() > 100 ? t.substr(0, 90) + "..." : t);
  };
  QString h = "<html><body><h2>" + QObject::tr("B \u2212 A") + "</h2><p>" + QObject::tr("A: %1<br>B: %2").arg(title(a), title(b)) + "</p>";
  auto text = [](const an::HeadlineChange& c, int64_t v) {
    return c.unit == "ns" ? dur(v) : c.unit == "bytes" ? bytes(v) : count(v);
  };
  h += "<table cellspacing=0 cellpadding=3><tr><th></th><th align=right>A</th><th align=right>B</th><th align=right>B \u2212 A</th></tr>";
  for (const an::HeadlineChange& c : range.headlines) {
    const int64_t d = c.b - c.a;
    QString delta = c.unit == "ns" ? (d > 0 ? "+" : d < 0 ? "-" : "") + (d ? dur(std::llabs(d)) : QString("0"))
                    : c.unit == "bytes" ? signedBytes(d)
                                        : signedCount(d);
    const QVariant colour = c.unit == "ns" ? QVariant() : deltaForeground(d);
    if (colour.isValid()) delta = QString("<span style='color:%1'>%2</span>").arg(colour.value<QColor>().name(), delta);
    h += QString("<tr><td>%1</td><td align=right>%2</td><td align=right>%3</td><td align=right><b>%4</b></td></tr>")
             .arg(esc(c.name), c.in_a ? text(c, c.a) : QObject::tr("none"), c.in_b ? text(c, c.b) : QObject::tr("none"), delta);
  }
  h += "</table><p><small>" + QObject::tr("Whole runs; the lists below follow the selection.") + "</small></p>";
  // The largest leak changes (of the selected range when one is).
  h += "<h3><a href='view:leaks'>" + QObject::tr("Largest leak changes") + "</a></h3><table cellspacing=0 cellpadding=2>";
  static const an::ListChanges none;
  const auto& leaks = (range.leak_changes ? *range.leak_changes : none).sites;
  for (size_t i = 0; i < leaks.size() && i < 8; ++i) {
    const an::SiteChange& c = leaks[i];
    h += QString("<tr><td align=right><b><span style='color:%1'>%2</span></b></td><td align=right>&nbsp;%3&nbsp;</td><td>%4 (%5)</td></tr>")
             .arg(c.deltaBytes() ? deltaForeground(c.deltaBytes()).value<QColor>().name()
                                 : QApplication::palette().color(QPalette::Text).name(),
                  signedBytes(c.deltaBytes()),
                  QObject::tr("%1 blocks").arg(signedCount(c.deltaCount())), esc(an::siteText(c.stack)), changeStatusText(c).toHtmlEscaped());
  }
  if (leaks.empty()) h += "<tr><td><i>" + QObject::tr("none: the same leaks in both") + "</i></td></tr>";
  h += "</table>";
  // The size bucket that changed most.
  const an::SizeBucketChange* most = nullptr;
  for (const auto& c : range.size_changes)
    if (!most || std::llabs(c.count_b - c.count_a) > std::llabs(most->count_b - most->count_a)) most = &c;
  h += "<h3><a href='view:sizes'>" + QObject::tr("Allocation sizes") + "</a></h3><p>";
  if (most && most->count_b != most->count_a)
    h += QObject::tr("Most changed: %1 to &lt; %2, %3 blocks (A %4, B %5)")
             .arg(bytes(int64_t(most->from)), bytes(int64_t(most->to) + 1), signedCount(most->count_b - most->count_a),
                  count(most->count_a), count(most->count_b));
  else
    h += "<i>" + QObject::tr("the same in both") + "</i>";
  h += "</p><p><a href='view:compare'>" + QObject::tr("Every changed site (Compare)") + "</a> &middot; " +
       QObject::tr("the trees, the flame graph and the charts show B \u2212 A too") + "</p></body></html>";
  return h;
}

QString SummaryView::html(const RecordingData& d, const RangeData* range) {
  if (range && range->diff() && range->shown && range->other) return compareHtml(*range);
  const an::Report& r = d.report;
  QString h = "<html><body>";
  std::string title = r.recording.command.empty() ? r.recording.path : r.recording.command;
  if (title.size() > 160) title = title.substr(0, 150) + "...";
  h += QString("<h2>%1</h2>").arg(esc(title));
  const QString warn = warningColor(QApplication::palette()).name();
  if (!r.recording.complete)
    h += "<p style='color:" + warn + "'><b>" +
         QObject::tr("This recording is incomplete: the recorder did not finish (it is still recording, or it "
                     "was killed). What it wrote is shown; the end of the run may be missing.") +
         "</b></p>";
  h += "<table cellspacing=0 cellpadding=3>";
  auto row = [&](const QString& k, const QString& v) { h += QString("<tr><td>%1</td><td><b>%2</b></td></tr>").arg(k, v); };
  row(QObject::tr("Duration"), dur(r.recording.duration_ns));
  row(QObject::tr("Recorded"), esc(r.recording.start_wall) + " &middot; memledger " + esc(r.recording.version));
  row(QObject::tr("Allocations"), QObject::tr("%1 (%2)").arg(count(r.totals.allocations), bytes(r.totals.allocated_bytes)));
  if (r.recording.duration_ns > 0)
    row(QObject::tr("Allocation rate"),
        QObject::tr("%1 per second").arg(count(int64_t(double(r.totals.allocations) * 1e9 / double(r.recording.duration_ns)))));
  row(QObject::tr("Temporary"),
      (r.totals.temporary_count == 1 ? QObject::tr("%1 allocation (%2%), %3") : QObject::tr("%1 allocations (%2%), %3"))
          .arg(count(r.totals.temporary_count))
          .arg(r.totals.allocations ? 100.0 * double(r.totals.temporary_count) / double(r.totals.allocations) : 0.0, 0, 'f', 1)
          .arg(bytes(r.totals.temporary_bytes)));
  row(QObject::tr("<a href='view:leaks'>Leaked</a>"),
      (r.leaks.count == 1 ? QObject::tr("%1 in %2 block") : QObject::tr("%1 in %2 blocks")).arg(bytes(r.leaks.bytes), count(r.leaks.count)));
  h += "</table>";

  // Peaks: every space, each on its own (never summed across spaces).
  h += "<h3>" + QObject::tr("Peaks") + " <small>(" + QString::fromStdString(r.peak.scope) + ")</small></h3>";
  h += "<table cellspacing=0 cellpadding=3>";
  for (const auto& s : d.series) {
    if (!s.series.exact_peak) continue;
    QString name = QString::fromStdString(s.name);
    h += QString("<tr><td><a href='peak:%1'>%1</a></td><td align=right><b>%2</b></td><td>&nbsp;at %3</td></tr>")
             .arg(name, bytes(s.series.exact_peak->bytes), dur(s.series.exact_peak->t_ns));
  }
  for (const auto& p : r.peak.pools)
    h += QString("<tr><td>%1</td><td align=right><b>%2</b></td><td>&nbsp;in use at %3 (reserved %4)</td></tr>")
             .arg(esc(p.name), bytes(p.bytes), dur(p.time_ns), p.reserved_bytes ? bytes(p.reserved_bytes) : QObject::tr("not told"));
  h += "</table>";
  if (!r.peak.gap_explanation.empty()) h += "<p><small>" + esc(r.peak.gap_explanation) + "</small></p>";

  // Processes.
  h += "<h3>" + QObject::tr("Processes") + "</h3><table cellspacing=0 cellpadding=3>";
  h += "<tr><th align=left>pid</th><th align=left>command</th><th align=left>ended</th><th align=right>heap peak</th>"
       "<th align=right>RSS peak</th><th align=right>lived</th></tr>";
  size_t shown = 0;
  for (const auto& p : r.processes) {
    // A fork loop has thousands: the first ones, then how many more (each costs layout time).
    if (shown++ == 25) {
      h += QString("<tr><td colspan=6><i>%1</i></td></tr>").arg(QObject::tr("... and %1 more processes").arg(r.processes.size() - 25));
      break;
    }
    QString ended = endedText(p);
    bool bad = p.signal || (p.exit_code && *p.exit_code != 0);
    h += QString("<tr><td>%1</td><td>%2</td><td>%3</td><td align=right>%4</td><td align=right>%5</td><td align=right>%6</td></tr>")
             .arg(p.pid)
             .arg(p.command.size() > 110 ? esc(p.command.substr(0, 100)) + "&hellip;" : esc(p.command))
             .arg(bad ? "<span style='color:" + warn + "'>" + ended + "</span>" : ended)
             .arg(bytes(p.peak_heap_bytes), bytes(p.peak_rss),
                  p.end_ns ? dur(*p.end_ns - p.start_ns) : QObject::tr("?"));
  }
  h += "</table>";

  // Suggestions with their evidence.
  h += "<h3><a href='view:suggestions'>" + QObject::tr("Suggestions") + "</a></h3>";
  const QString computing = "<p><i>" + QObject::tr("computing...") + "</i></p>";
  if (!d.complete) h += computing;
  else if (r.suggestions.empty()) h += "<p><i>" + QObject::tr("none") + "</i></p>";
  h += "<ol>";
  size_t n = 0;
  for (const auto& s : r.suggestions) {
    if (n++ == 3) break;
    h += QString("<li><b>[%1]</b> %2<br><small>%3</small></li>")
             .arg(QString::fromStdString(s.severity), esc(s.message), esc(an::formatEvidence(s.evidence)));
  }
  h += "</ol>";

  // Four top lists (of the selected range when one is selected: the leaks).
  h += "<table width='100%'><tr><td valign=top width='50%'>";
  h += topList(QObject::tr("Live at the heap peak"), "view:flamegraph?metric=peak", r.peak.sites, false);
  h += "</td><td valign=top>";
  const an::Leaks& leaks = range ? range->leaks() : r.leaks;
  h += topList(range && range->ranged() ? QObject::tr("Leaked (made in the selection)") : QObject::tr("Largest leaks"),
               "view:leaks", leaks.sites, false);
  h += "</td></tr><tr><td valign=top>";
  // Most allocations: the sites by count, from the whole-run site list of the range data.
  std::vector<an::SiteAmount> most;
  if (range) {
    std::vector<const an::SymbolCost*> byCount;
    for (const auto& s : range->symbols) byCount.push_back(&s);
    std::sort(byCount.begin(), byCount.end(), [](auto* a, auto* b) { return a->self.count > b->self.count; });
    h += QString("<h3><a href='view:bottom-up'>%1</a></h3><table cellspacing=0 cellpadding=2>").arg(QObject::tr("Most allocations"));
    for (size_t k = 0; k < byCount.size() && k < 5 && byCount[k]->self.count > 0; ++k)
      h += QString("<tr><td align=right><b>%1</b></td><td>&nbsp;%2</td></tr>").arg(count(byCount[k]->self.count), esc(byCount[k]->symbol));
    h += "</table>";
  } else {
    h += "<h3>" + QObject::tr("Most allocations") + "</h3><p><i>" + QObject::tr("building call trees...") + "</i></p>";
  }
  h += "</td><td valign=top>";
  if (d.complete)
    h += topList(QObject::tr("Most temporary allocations"), "view:flamegraph?metric=temporary", r.temporaries, true);
  else
    h += "<h3>" + QObject::tr("Most temporary allocations") + "</h3>" + computing;
  h += "</td></tr></table></body></html>";
  return h;
}

}  // namespace memledger::gui
