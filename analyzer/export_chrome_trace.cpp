#include <set>

#include "analyzer/control.h"
#include "analyzer/curve.h"
#include "analyzer/devices.h"
#include "analyzer/export_formats.h"

namespace memledger::analyzer {

namespace {

// Trace Event timestamps are microseconds; fractions keep nanosecond precision.
double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

constexpr int kCounterTid = 0;
constexpr int kPhaseTid = 1;
constexpr size_t kSitesNamed = 5;

// Sites as the report's one-line lists name them ("py_leaker (leaky.py:7)"), with their bytes.
nlohmann::json siteList(const std::vector<SiteAmount>& sites) {
  nlohmann::json out = nlohmann::json::array();
  for (const SiteAmount& s : sites) {
    if (out.size() == kSitesNamed) break;
    out.push_back({{"site", siteText(s.stack)}, {"kind", s.kind}, {"bytes", s.bytes}, {"pid", s.pid}});
  }
  return out;
}

}  // namespace

nlohmann::json exportChromeTrace(const Recording& rec) {
  nlohmann::json events = nlohmann::json::array();
  std::vector<Process> procs = processes(rec);
  std::set<int64_t> named;
  // The sites live at the report's heap peak go on that process's "heap peak" instant.
  Filter topPeak;
  topPeak.top = kSitesNamed;
  Peak pk = peak(rec, topPeak);
  std::optional<detail::Stage> curves(std::in_place, 0, 0.6);
  for (size_t i = 0; i < procs.size(); ++i) {
    const Process& p = procs[i];
    detail::progress(double(i) / double(procs.size()));
    // An exec'd image keeps its pid: one track per pid, named after the first image seen.
    if (named.insert(p.pid).second) {
      events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", p.pid}, {"tid", kCounterTid},
                        {"args", {{"name", p.command}}}});
    }
    for (const auto& t : timeline(rec, p.image_id)) {
      events.push_back({{"ph", "C"}, {"name", "heap"}, {"pid", p.pid}, {"tid", kCounterTid}, {"ts", us(t.t_ns)},
                        {"args", {{"bytes", t.heap_bytes}}}});
      events.push_back({{"ph", "C"}, {"name", "mmap"}, {"pid", p.pid}, {"tid", kCounterTid}, {"ts", us(t.t_ns)},
                        {"args", {{"bytes", t.mmap_bytes}}}});
      if (t.rss_bytes)
        events.push_back({{"ph", "C"}, {"name", "RSS"}, {"pid", p.pid}, {"tid", kCounterTid}, {"ts", us(t.t_ns)},
                          {"args", {{"bytes", *t.rss_bytes}}}});
    }
    // CUDA memory (docs/cuda.md): a counter track per device, pinned and managed space.
    for (const SpacePeak& sp : p.spaces) {
      if (sp.pool || !isCudaSpace(sp.name)) continue;
      for (const SeriesPoint& pt : spaceSeries(rec, sp.name, p.image_id).points)
        events.push_back({{"ph", "C"}, {"name", sp.name}, {"pid", p.pid}, {"tid", kCounterTid}, {"ts", us(pt.t_ns)},
                          {"args", {{"bytes", pt.value}}}});
      if (sp.bytes > 0)
        events.push_back({{"ph", "i"}, {"name", sp.name + " peak"}, {"s", "p"}, {"pid", p.pid}, {"tid", kCounterTid},
                          {"ts", us(sp.time_ns)}, {"args", {{"bytes", sp.bytes}}}});
    }
    if (p.peak_heap_bytes > 0) {
      nlohmann::json args = {{"bytes", p.peak_heap_bytes}};
      if (p.image_id == pk.image_id && !pk.sites.empty()) args["sites_at_report_peak"] = siteList(pk.sites);
      events.push_back({{"ph", "i"}, {"name", "heap peak"}, {"s", "p"}, {"pid", p.pid}, {"tid", kCounterTid},
                        {"ts", us(p.peak_heap_ns)}, {"args", std::move(args)}});
    }
    if (p.end_ns)
      events.push_back({{"ph", "i"}, {"name", "process end"}, {"s", "p"}, {"pid", p.pid}, {"tid", kCounterTid},
                        {"ts", us(*p.end_ns)},
                        {"args", {{"ended_by", p.ended_by.value_or("unknown")},
                                  {"exit_code", p.exit_code ? nlohmann::json(*p.exit_code) : nlohmann::json()},
                                  {"signal", p.signal ? nlohmann::json(*p.signal) : nlohmann::json()}}}});
  }
  curves.reset();
  for (const auto& m : markers(rec))
    events.push_back({{"ph", "i"}, {"name", m.name}, {"s", "p"}, {"pid", rec.pidOf(m.image_id)},
                      {"tid", kCounterTid}, {"ts", us(m.t_ns)}, {"cat", "marker"}});
  // Phases span the whole recording: they go on their own thread of the started program.
  int64_t phasePid = procs.empty() ? 0 : procs.front().pid;
  std::vector<Phase> ph = phases(rec);
  if (!ph.empty())
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", phasePid}, {"tid", kPhaseTid},
                      {"args", {{"name", "phases"}}}});
  for (const auto& p : ph)
    events.push_back({{"ph", "X"}, {"name", p.name}, {"cat", "phase"}, {"pid", phasePid}, {"tid", kPhaseTid},
                      {"ts", us(p.start_ns)}, {"dur", us(p.end_ns - p.start_ns)},
                      {"args", {{"peak_bytes", p.peak_bytes}, {"allocated_bytes", p.allocated_bytes},
                                {"freed_bytes", p.freed_bytes}, {"from_marker", p.from_marker},
                                {"top_sites", siteList(p.top_sites)}}}});
  const RecordingInfo& info = rec.info();
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"generator", "memledger " + info.version}, {"command", info.command},
                         {"start_wall", info.start_wall}}}};
}

}  // namespace memledger::analyzer
