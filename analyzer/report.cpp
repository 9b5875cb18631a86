// The whole report, and every result as JSON (schemas/report.schema.json).
#include "analyzer/analyzer.h"
#include "analyzer/control.h"

namespace memledger::analyzer {

using nlohmann::json;

namespace {

template <typename T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json siteJson(const SiteAmount& s) {
  json procs = json::array();
  if (s.processes.empty())
    procs.push_back({{"pid", s.pid}, {"count", s.count}, {"bytes", s.bytes}});
  for (const auto& p : s.processes) procs.push_back({{"pid", p.pid}, {"count", p.count}, {"bytes", p.bytes}});
  json out = {{"count", s.count}, {"bytes", s.bytes}, {"kind", s.kind}, {"pid", s.pid},
              {"process_count", procs.size()}, {"processes", procs},
              {"stack_id", s.stack_id}, {"stack", toJson(s.stack)}};
  return out;
}

json amounts(const std::vector<SiteAmount>& sites) {
  json out = json::array();
  for (const auto& s : sites) out.push_back(siteJson(s));
  return out;
}

// The series can have one point per millisecond of a long run; a report needs its shape, so it
// keeps at most this many points, always including the highest ratio of each stretch.
constexpr size_t kMaxSeriesPoints = 1000;

}  // namespace

// Without a `top`, a report lists every leaking site (CI gates on them), but only the largest
// sites of the long tails: a big program has 10^5 sites live at its peak or making temporaries,
// and a report with every one of their stacks runs to gigabytes.
constexpr size_t kPeakSitesMax = 1000;
constexpr size_t kTemporariesMax = 100;

namespace {
// Runs each part of a report as a stage of the progress a QueryControl sees (analyzer/control.h),
// weighted by what it roughly costs on a big recording (phases and suggestions scan every site's
// activity); the weights of both parts add up to 1.
struct Stages {
  double done = 0, scale = 1;
  template <class F>
  void operator()(double weight, F&& part) {
    detail::Stage s(done, done + weight * scale);
    done += weight * scale;
    part();
  }
};
}  // namespace

Report reportFirstPart(const Recording& rec, const Filter& filter) {
  Stages stage{0, 1 / 0.32};
  Report r;
  r.recording = rec.info();
  validateFilter(rec, filter);
  Filter tail = filter;
  if (!tail.top) tail.top = kPeakSitesMax;
  stage(0.10, [&] {
    // Once, with the sites the suggestions' rules read when the asked list is shorter.
    if (filter.top && *filter.top < kRuleLeakSites) {
      Filter wide = filter;
      wide.top = kRuleLeakSites;
      auto all = std::make_shared<Leaks>(leaks(rec, wide));
      r.leaks = *all;
      if (r.leaks.sites.size() > *filter.top) r.leaks.sites.resize(*filter.top);
      r.rule_leaks = std::move(all);
    } else {
      r.leaks = leaks(rec, filter);
    }
  });
  stage(0.15, [&] { r.peak = peak(rec, tail); });
  stage(0.05, [&] { r.totals = totals(rec, filter); });
  stage(0.02, [&] {
    r.processes = processes(rec);
    if (filter.pid) std::erase_if(r.processes, [&](const Process& p) { return p.pid != *filter.pid; });
  });
  r.filter = filter;
  r.unfiltered = unfilteredNumbers(filter);
  return r;
}

void reportSecondPart(const Recording& rec, Report& r) {
  Stages stage{0, 1 / 0.68};
  const Filter& filter = r.filter;
  Filter tail = filter;
  if (!tail.top) tail.top = kTemporariesMax;
  stage(0.25, [&] { r.phases = phases(rec, filter); });
  stage(0.05, [&] { r.fragmentation = fragmentation(rec, filter); });
  stage(0.08, [&] { r.temporaries = temporaries(rec, tail); });
  stage(0.12, [&] { r.patterns = patterns(rec, filter); });
  stage(0.18, [&] { r.suggestions = suggestions(rec, filter, r.rule_leaks.get()); });
  r.rule_leaks.reset();
}

Report report(const Recording& rec, const Filter& filter) {
  Report r;
  {
    detail::Stage first(0, 0.32);
    r = reportFirstPart(rec, filter);
  }
  // The whole list when it was not cut below what the rules read: lent to the second part.
  if (!r.rule_leaks) r.rule_leaks = std::shared_ptr<const Leaks>(std::shared_ptr<const Leaks>(), &r.leaks);
  detail::Stage second(0.32, 1);
  reportSecondPart(rec, r);
  return r;
}

json toJson(const Frame& f) {
  return {{"function", opt(f.function)}, {"file", opt(f.file)}, {"line", opt(f.line)},
          {"module", opt(f.module)}, {"offset", opt(f.offset)}};
}

json toJson(const Stack& stack) {
  json out = json::array();
  for (const auto& f : stack) out.push_back(toJson(f));
  return out;
}

json toJson(const Leaks& l) {
  json sites = json::array();
  for (const auto& s : l.sites) {
    json j = siteJson(s);
    j["origin"] = s.origin;
    if (!s.origin_reason.empty()) j["origin_reason"] = s.origin_reason;
    if (s.python_owned) j["python_owned"] = true;
    // Leak kinds: the site's nonzero ones (heap sites; other kinds are never scanned).
    json lk = json::object();
    for (int k = 0; k < kLeakKindSlots; ++k)
      if (s.leak_kinds[k].count) lk[leakKindName(k)] = {{"bytes", s.leak_kinds[k].bytes}, {"count", s.leak_kinds[k].count}};
    j["leak_kinds"] = std::move(lk);
    sites.push_back(std::move(j));
  }
  json kinds = json::object();
  for (int k = 0; k < kLeakKindSlots; ++k) kinds[leakKindName(k)] = {{"bytes", l.kinds[k].bytes}, {"count", l.kinds[k].count}};
  json j = {{"count", l.count}, {"bytes", l.bytes}, {"site_count", l.site_count}, {"sites", sites},
            {"kinds", kinds}, {"scanned", l.scanned}};
  if (l.pool_site_count)  // listed above, not in count/bytes: inside memory those count already
    j["pool_blocks"] = {{"count", l.pool_count}, {"bytes", l.pool_bytes}, {"site_count", l.pool_site_count}};
  if (l.python_processes) {  // Python images: counted when the interpreter started finalizing
    j["python"] = {{"processes", l.python_processes}, {"counted_at", "interpreter finalization"},
                   {"left_by_finalization", {{"count", l.finalization_left_count}, {"bytes", l.finalization_left_bytes}}}};
    if (l.python_bucket_ns) j["python"]["allocation_bucket_ns"] = l.python_bucket_ns;
  } else if (l.python_exit_rule_processes) {  // a time filter on a file without allocation times
    j["python"] = {{"processes", l.python_exit_rule_processes}, {"counted_at", "exit"}};
  }
  return j;
}

json toJson(const Peak& p) {
  json byKind = json::object();
  for (const auto& k : p.by_kind)
    byKind[k.kind] = {{"bytes", k.bytes}, {"time_ns", k.time_ns}, {"pid", k.pid}};
  json spaces = json::array(), pools = json::array();
  for (const auto& s : p.spaces) spaces.push_back(toJson(s));
  for (const auto& s : p.pools) pools.push_back(toJson(s));
  return {{"bytes", p.bytes},         {"time_ns", p.time_ns},         {"pid", p.pid},
          {"scope", p.scope},         {"by_kind", byKind},            {"spaces", spaces},
          {"pools", pools},           {"rss_bytes", p.rss_bytes},     {"rss_pid", p.rss_pid},
          {"rss_heap_bytes", p.rss_heap_bytes},                       {"gap_bytes", p.gap_bytes},
          {"gap_explanation", p.gap_explanation}, {"sites", amounts(p.sites)}};
}

json toJson(const Totals& t) {
  json byKind = json::object();
  for (const KindTotal& k : t.by_kind) byKind[k.kind] = {{"allocations", k.allocations}, {"bytes", k.bytes}};
  return {{"by_kind", byKind},
          {"allocations", t.allocations},
          {"frees", t.frees},
          {"allocated_bytes", t.allocated_bytes},
          {"freed_bytes", t.freed_bytes},
          {"temporary", {{"count", t.temporary_count}, {"bytes", t.temporary_bytes}}}};
}

json toJson(const std::vector<Process>& ps) {
  json out = json::array();
  for (const auto& p : ps)
    out.push_back({{"pid", p.pid},
                   {"ppid", p.ppid},
                   {"command", p.command},
                   {"exit_code", opt(p.exit_code)},
                   {"signal", opt(p.signal)},
                   {"ended_by", opt(p.ended_by)},
                   {"start_ns", p.start_ns},
                   {"end_ns", opt(p.end_ns)},
                   {"forked", p.forked},
                   {"peak_heap_bytes", p.peak_heap_bytes},
                   // 0 is what the recording stores for a process that ended before its RSS
                   // was first sampled: not sampled, so null (not "0 bytes resident").
                   {"peak_rss", p.peak_rss > 0 ? json(p.peak_rss) : json(nullptr)},
                   {"unknown_frees", p.unknown_frees}});
  return out;
}

json toJson(const std::vector<Phase>& phs) {
  json out = json::array();
  for (const auto& p : phs)
    out.push_back({{"name", p.name},
                   {"from_marker", p.from_marker},
                   {"start_ns", p.start_ns},
                   {"end_ns", p.end_ns},
                   {"peak_bytes", p.peak_bytes},
                   {"peak_time_ns", p.peak_time_ns},
                   {"allocated_bytes", p.allocated_bytes},
                   {"freed_bytes", p.freed_bytes},
                   {"top_sites", amounts(p.top_sites)}});
  return out;
}

json toJson(const Fragmentation& f) {
  json series = json::array();
  size_t stride = (f.series.size() + kMaxSeriesPoints - 1) / kMaxSeriesPoints;
  if (stride == 0) stride = 1;
  for (size_t i = 0; i < f.series.size(); i += stride) {
    const FragmentationPoint* best = &f.series[i];
    for (size_t j = i; j < std::min(f.series.size(), i + stride); ++j)
      if (f.series[j].ratio > best->ratio) best = &f.series[j];
    series.push_back({{"t_ns", best->t_ns}, {"ratio", best->ratio}, {"heap_bytes", best->heap_bytes},
                      {"resident_bytes", best->resident_bytes}});
  }
  return {{"peak_ratio", opt(f.peak_ratio)},
          {"peak_resident_bytes", f.peak_resident_bytes},
          {"peak_heap_bytes", f.peak_heap_bytes},
          {"series", series},
          {"nothing_live_samples", f.nothing_live_samples},
          {"nothing_live_from_ns", opt(f.nothing_live_from_ns)}};
}

json toJson(const std::vector<Suggestion>& ss) {
  json out = json::array();
  for (const auto& s : ss)
    out.push_back({{"kind", s.kind},
                   {"severity", s.severity},
                   {"confidence", s.confidence},
                   {"confidence_reason", s.confidence_reason},
                   {"message", s.message},
                   {"stack", toJson(s.stack)},
                   {"evidence", s.evidence}});
  return out;
}

json toJson(const RecordingInfo& i) {
  json out = {{"path", i.path},
              {"complete", i.complete},
              {"duration_ns", i.duration_ns},
              {"wait_ns", i.wait_ns},
              {"lost_records", i.lost_records},
              {"bucket_ns", i.bucket_ns},
              {"version", i.version},
              {"schema_version", i.schema_version},
              {"allocation_rows", i.allocation_rows},
              {"command", i.command}};
  if (i.recorder_cpu_ns >= 0) out["recorder_cpu_ns"] = i.recorder_cpu_ns;
  return out;
}

json toJson(const Report& r) {
  json temps = json::array();
  for (const auto& s : r.temporaries) temps.push_back(siteJson(s));
  json pats = json::array();
  for (const auto& p : r.patterns)
    pats.push_back({{"kind", patternName(p.kind)},
                    {"site", {{"kind", p.site.kind}, {"pid", p.site.pid}, {"stack_id", p.site.stack_id},
                              {"stack", toJson(p.site.stack)}}},
                    {"evidence", p.evidence}});
  json out = {{"recording", toJson(r.recording)},
          {"leaks", toJson(r.leaks)},
          {"peak", toJson(r.peak)},
          {"totals", toJson(r.totals)},
          {"processes", toJson(r.processes)},
          {"phases", toJson(r.phases)},
          {"fragmentation", toJson(r.fragmentation)},
          {"temporaries", temps},
          {"patterns", pats},
          {"suggestions", toJson(r.suggestions)}};
  if (json f = toJson(r.filter); !f.is_null()) out["filter"] = f;
  return out;
}

json toJson(const Filter& f, const std::string& view) {
  if (!f.pid && !f.kind && !f.t_from_ns && !f.t_to_ns && !f.by_process) return nullptr;
  json out = {{"by_process", f.by_process}, {"unfiltered", unfilteredNumbers(f, view)}};
  if (f.pid) out["pid"] = *f.pid;
  if (f.kind) out["kind"] = *f.kind;
  if (f.t_from_ns) out["time_from_ns"] = *f.t_from_ns;
  if (f.t_to_ns) out["time_to_ns"] = *f.t_to_ns;
  return out;
}

}  // namespace memledger::analyzer
