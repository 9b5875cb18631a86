// Human formatting of the analyzer's answers. Nothing is computed here beyond layout.
#include "report_text.h"

#include <cstdarg>
#include <cstdio>

#include "analyzer/format.h"
#include "analyzer/python_sites.h"

namespace memledger::cli {

namespace an = memledger::analyzer;
using an::formatBytes;
using an::formatCount;
using an::formatDuration;
using an::printable;

namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return formatCount(n) + " " + (n == 1 ? one : many);
}

std::string moreFrames(const char* indent, size_t n) {
  return fmt("%s... %zu more frame%s\n", indent, n, n == 1 ? "" : "s");
}

std::string stackText(const an::Stack& stack, const TextOptions& opt, const char* indent) {
  std::string out;
  if (stack.empty()) return std::string(indent) + "(no stack)\n";
  // The C++ standard library's frames at the inner end (the allocator, a vector's growth) take one
  // line, naming the outermost of them (which container, which call), so the frames shown are
  // the program's.
  size_t first = 0;
  while (first < stack.size() && an::isStandardLibraryFrame(stack[first])) ++first;
  if (first >= 2 && first < stack.size())
    out += fmt("%s(%zu C++ standard library frames) ", indent, first) + an::frameText(stack[first - 1]) + "\n";
  else
    first = 0;
  size_t shown = std::min(stack.size(), first + opt.frames);
  for (size_t i = first; i < shown; ++i) out += indent + an::frameText(stack[i]) + "\n";
  // Python code under a deep native part (numpy's, the interpreter's): its first lines are the
  // user's code, so they are shown after the cut rather than hidden in it.
  size_t py = shown;
  bool pyShown = false;
  for (size_t i = 0; i < shown; ++i) pyShown = pyShown || an::isPythonFrame(stack[i]);
  while (!pyShown && py < stack.size() && !an::isPythonFrame(stack[py])) ++py;
  if (!pyShown && py < stack.size()) {
    if (py > shown) out += moreFrames(indent, py - shown);
    size_t end = py;
    while (end < stack.size() && end < py + 2 && an::isPythonFrame(stack[end])) ++end;
    for (size_t i = py; i < end; ++i) out += indent + an::frameText(stack[i]) + "\n";
    shown = end;
  }
  if (stack.size() > shown) out += moreFrames(indent, stack.size() - shown);
  return out;
}

// "pid 123", or "3 processes: pid 123 100 B, pid 124 100 B, +1 more" for a merged site.
std::string processText(const an::SiteAmount& s) {
  if (s.processes.size() <= 1) return fmt("pid %lld", static_cast<long long>(s.pid));
  std::string out = fmt("%zu processes: ", s.processes.size());
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < s.processes.size() && i < kShown; ++i)
    out += fmt("%spid %lld %s", i ? ", " : "", static_cast<long long>(s.processes[i].pid),
               formatBytes(s.processes[i].bytes).c_str());
  if (s.processes.size() > kShown) out += fmt(", +%zu more", s.processes.size() - kShown);
  return out;
}

std::string siteList(const std::vector<an::SiteAmount>& sites, const TextOptions& opt, const char* what) {
  std::string out;
  size_t n = std::min(sites.size(), opt.top);
  for (size_t i = 0; i < n; ++i) {
    const auto& s = sites[i];
    out += fmt("  #%-3zu %10s in %s %s  (%s, %s)\n", i + 1, formatBytes(s.bytes).c_str(),
               formatCount(s.count).c_str(), s.count == 1 ? "block" : "blocks", s.kind.c_str(),
               processText(s).c_str());
    if (s.origin != an::kOriginProgram)
      out += "         [" + s.origin + "] " + s.origin_reason + " Not the program's to free.\n";
    if (std::string kinds = textSiteKinds(s); !kinds.empty() && s.leak_kinds[an::kNotClassified].count != s.count)
      out += "         kinds: " + kinds + "\n";  // leak kinds (leak sites only)
    out += stackText(s.stack, opt, "         ");
  }
  if (sites.size() > n) out += fmt("  ... %zu more %s (--top N to see more)\n", sites.size() - n, what);
  return out;
}

std::string pct(double v) { return fmt("%.0f%%", v * 100); }

}  // namespace

std::string textFilter(const an::Filter& f, const std::string& view) {
  std::string parts;
  auto add = [&](const std::string& p) { parts += (parts.empty() ? "" : ", ") + p; };
  if (f.pid) add(fmt("pid %lld", static_cast<long long>(*f.pid)));
  if (f.kind) add("kind " + *f.kind);
  if (f.t_from_ns || f.t_to_ns)
    add("allocated " + formatDuration(f.t_from_ns.value_or(0)) + " to " +
        (f.t_to_ns ? formatDuration(*f.t_to_ns) : std::string("the end")));
  if (f.by_process) add("sites per process");
  if (parts.empty()) return {};
  std::string out = "  filter: " + parts + "\n";
  for (const auto& note : an::unfilteredNumbers(f, view)) out += "  unfiltered: " + note + "\n";
  return out;
}

std::string textRecordingLine(const an::RecordingInfo& info) {
  std::string out = printable(info.path) + ": ";
  out += info.command.empty() ? std::string("(unknown command)") : printable(info.command);
  out += ", " + formatDuration(info.duration_ns);
  out += info.complete ? ", complete" : ", INCOMPLETE";
  out += "\n";
  if (!info.complete)
    out += "  warning: the recording is incomplete (the recorder did not finish, e.g. it was killed);\n"
           "  the numbers cover what was written before it stopped.\n";
  if (info.lost_records > 0)
    out += "  warning: " + formatCount(info.lost_records) + " records were lost; counts are lower bounds.\n";
  if (info.wait_ns >= 1000000)
    out += "  note: the traced programs waited " + formatDuration(info.wait_ns) +
           " in total for the recorder (ring full).\n";
  return out;
}

// "all processes at once" or "pid N": what a peak's number sums.
std::string peakScope(const an::Peak& p) {
  if (p.scope == "all processes") return "all processes at once";
  return "pid " + std::to_string(p.pid);
}

// Python (docs/python.md): which instant a Python process's leaks were counted at.
std::string pythonLeakBasis(const an::Leaks& l) {
  if (!l.python_processes)
    return fmt("(Python: live at exit, in %s: this recording keeps no allocation times for what was live when "
               "the interpreter started finalizing, which a time filter needs)",
               plural(l.python_exit_rule_processes, "process", "processes").c_str());
  std::string range = l.python_bucket_ns ? " and allocated in the range (to its " +
                                               formatDuration(l.python_bucket_ns) + " timeline bucket)"
                                         : std::string();
  return fmt("(Python: live when the interpreter started finalizing%s, in %s; finalization left %s, %s)",
             range.c_str(), plural(l.python_processes, "process", "processes").c_str(),
             plural(l.finalization_left_count, "block", "blocks").c_str(), formatBytes(l.finalization_left_bytes).c_str());
}

// record --python-allocators: leaking Python objects, listed with the sites, inside the arenas
// the totals already count.
std::string poolLeakNote(const an::Leaks& l) {
  return fmt("(and %s, %s in %s, in use inside pymalloc's arenas, which the total counts as mmap)",
             plural(l.pool_count, "Python object", "Python objects").c_str(), formatBytes(l.pool_bytes).c_str(),
             plural(static_cast<int64_t>(l.pool_site_count), "site", "sites").c_str());
}

std::string textSummary(const an::Report& r) {
  std::string out = "Summary\n";
  out += fmt("  leaks          %s, %s in %s\n", plural(r.leaks.count, "block", "blocks").c_str(),
             formatBytes(r.leaks.bytes).c_str(),
             plural(static_cast<int64_t>(r.leaks.site_count - r.leaks.pool_site_count), "site", "sites").c_str());
  if (r.leaks.pool_site_count) out += "                 " + poolLeakNote(r.leaks) + "\n";
  if (r.leaks.python_processes || r.leaks.python_exit_rule_processes)
    out += "                 " + pythonLeakBasis(r.leaks) + "\n";
  out += fmt("  heap peak      %s at %s (%s)\n", formatBytes(r.peak.bytes).c_str(),
             formatDuration(r.peak.time_ns).c_str(), peakScope(r.peak).c_str());
  for (const auto& s : r.peak.spaces)
    if (s.name != "heap" && s.name != "mmap" && s.bytes > 0)
      out += fmt("  %-14s %s at %s\n", (s.name + " peak").c_str(), formatBytes(s.bytes).c_str(),
                 formatDuration(s.time_ns).c_str());
  if (r.peak.rss_bytes > 0)
    out += fmt("  RSS peak       %s in pid %lld (%s%s than that process's own heap peak)\n",
               formatBytes(r.peak.rss_bytes).c_str(), static_cast<long long>(r.peak.rss_pid),
               formatBytes(r.peak.gap_bytes < 0 ? -r.peak.gap_bytes : r.peak.gap_bytes).c_str(),
               r.peak.gap_bytes < 0 ? " less" : " more");
  std::string kinds;  // what the sum adds up: "malloc 44.8 MiB, mmap 25.0 MiB"
  for (const auto& k : r.totals.by_kind)
    kinds += (kinds.empty() ? "" : ", ") + k.kind + " " + formatBytes(k.bytes);
  out += fmt("  allocations    %s (%s freed), %s allocated%s\n", formatCount(r.totals.allocations).c_str(),
             formatCount(r.totals.frees).c_str(), formatBytes(r.totals.allocated_bytes).c_str(),
             r.totals.by_kind.size() > 1 ? (": " + kinds).c_str() : "");
  out += fmt("  temporaries    %s (%s)\n", formatCount(r.totals.temporary_count).c_str(),
             formatBytes(r.totals.temporary_bytes).c_str());
  out += fmt("  processes      %zu    phases %zu", r.processes.size(), r.phases.size());
  if (r.fragmentation.peak_ratio) out += "    fragmentation at peak " + pct(*r.fragmentation.peak_ratio);
  out += "\n";
  size_t high = 0;
  for (const auto& s : r.suggestions) high += s.severity == "high";
  out += fmt("  suggestions    %zu (%zu high)\n", r.suggestions.size(), high);
  return out;
}

std::string textLeaks(const an::Leaks& l, const TextOptions& opt) {
  if (l.count == 0 && l.pool_count == 0 && !opt.complete)
    return "Leaks\n  unknown: the recording is incomplete (the recorder stopped before it wrote which "
           "blocks were still live)\n";
  if (l.count == 0 && l.pool_count == 0) return "Leaks\n  none: every block was freed before its process ended\n";
  std::string out = fmt("Leaks: %s, %s in %s\n", plural(l.count, "block", "blocks").c_str(),
                        formatBytes(l.bytes).c_str(),
                        plural(static_cast<int64_t>(l.site_count - l.pool_site_count), "site", "sites").c_str());
  if (l.pool_site_count) out += "  " + poolLeakNote(l) + "\n";
  if (l.python_processes || l.python_exit_rule_processes) out += "  " + pythonLeakBasis(l) + "\n";
  out += textLeakSummary(l);  // leak kinds
  out += siteList(l.sites, opt, "sites");
  if (l.site_count > std::max(l.sites.size(), opt.top))
    out += fmt("  ... %zu more sites (--top N to see more)\n", l.site_count - l.sites.size());
  return out;
}

std::string textPeak(const an::Peak& p, const TextOptions& opt) {
  std::string out = "Peak (" + peakScope(p) + ")\n";
  for (const auto& s : p.spaces)
    out += fmt("  %-14s %12s at %s\n", s.name.c_str(), formatBytes(s.bytes).c_str(), formatDuration(s.time_ns).c_str());
  for (const auto& s : p.pools)
    out += fmt("  %-14s %12s in use at its peak (%s), %s, pid %lld\n", s.name.c_str(),
               formatBytes(s.bytes).c_str(), formatDuration(s.time_ns).c_str(),
               s.reserved_bytes ? (formatBytes(s.reserved_bytes) + " reserved").c_str() : "reserved size not told",
               static_cast<long long>(s.pid));
  if (p.rss_bytes > 0) out += fmt("  RSS   %12s\n", formatBytes(p.rss_bytes).c_str());
  out += "  " + p.gap_explanation + "\n";
  if (p.sites.empty()) return out;
  out += fmt("  Live at the heap peak (%s at %s, %s; heap blocks only):\n", formatBytes(p.bytes).c_str(),
             formatDuration(p.time_ns).c_str(), peakScope(p).c_str());
  return out + siteList(p.sites, opt, "sites");
}

std::string textProcesses(const std::vector<an::Process>& ps) {
  std::string out = "Processes\n";
  out += fmt("  %8s %8s  %-12s %12s %12s  %s\n", "PID", "PPID", "ENDED", "PEAK HEAP", "PEAK RSS", "COMMAND");
  for (const auto& p : ps) {
    std::string ended = p.ended_by.value_or("running");
    if (p.exit_code && ended == "exit") ended += " " + std::to_string(*p.exit_code);
    if (p.signal && ended == "signal") ended += " " + std::to_string(*p.signal);
    std::string cmd = printable(p.command);
    if (cmd.size() > 60) cmd = cmd.substr(0, 57) + "...";
    // peak_rss 0: the process ended before its RSS was first sampled (nothing to say, not 0 B).
    std::string rss = p.peak_rss > 0 ? formatBytes(p.peak_rss) : std::string("n/a");
    out += fmt("  %8lld %8lld  %-12s %12s %12s  %s%s\n", static_cast<long long>(p.pid),
               static_cast<long long>(p.ppid), ended.c_str(), formatBytes(p.peak_heap_bytes).c_str(),
               rss.c_str(), p.forked ? "(fork) " : "", cmd.c_str());
  }
  return out;
}

std::string textPhases(const std::vector<an::Phase>& phs, const TextOptions& opt) {
  if (phs.empty()) return "Phases\n  none (no timeline)\n";
  std::string out = phs.front().from_marker || (phs.size() > 1 && phs[1].from_marker)
                        ? "Phases (from markers)\n"
                        : "Phases (found on the heap curve: a ramp, then a release)\n";
  out += fmt("  %-20s %10s %10s %12s %10s %12s %12s\n", "NAME", "START", "END", "PEAK", "PEAK AT", "ALLOCATED",
             "FREED");
  for (const auto& p : phs) {
    std::string name = printable(p.name);
    if (name.size() > 20) name = name.substr(0, 17) + "...";
    out += fmt("  %-20s %10s %10s %12s %10s %12s %12s\n", name.c_str(), formatDuration(p.start_ns).c_str(),
               formatDuration(p.end_ns).c_str(), formatBytes(p.peak_bytes).c_str(),
               formatDuration(p.peak_time_ns).c_str(), formatBytes(p.allocated_bytes).c_str(),
               formatBytes(p.freed_bytes).c_str());
    size_t n = std::min<size_t>(p.top_sites.size(), std::min<size_t>(opt.top, 3));
    for (size_t i = 0; i < n; ++i) {
      const auto& s = p.top_sites[i];
      out += fmt("      %10s  %s\n", formatBytes(s.bytes).c_str(), an::siteText(s.stack).c_str());
    }
  }
  return out;
}

std::string textFragmentation(const an::Fragmentation& f) {
  std::string out = "Fragmentation\n";
  // A sample with nothing live has no ratio (0 live of any resident size would read 100%).
  std::string nothingLive;
  if (f.nothing_live_samples > 0) {
    nothingLive = "  nothing live in " + plural(f.nothing_live_samples, "sample", "samples") + " (no ratio there)";
    if (f.nothing_live_from_ns) nothingLive += ", from " + formatDuration(*f.nothing_live_from_ns) + " to the end";
    nothingLive += "\n";
  }
  if (!f.peak_ratio) {
    if (f.nothing_live_samples > 0)
      return out + "  no ratio: nothing was live in any of the " + plural(f.nothing_live_samples, "sample", "samples") +
             " of resident memory\n";
    return out + "  unknown: no resident-memory samples in the recording\n";
  }
  out += fmt("  at the heap peak %s of the heap's resident memory held no live block (%s unused of %s)\n",
             pct(*f.peak_ratio).c_str(),
             formatBytes(std::max<int64_t>(0, f.peak_resident_bytes - f.peak_heap_bytes)).c_str(),
             formatBytes(f.peak_resident_bytes).c_str());
  if (f.series.size() > 1) {
    double lo = 1, hi = 0;
    for (const auto& p : f.series) {
      lo = std::min(lo, p.ratio);
      hi = std::max(hi, p.ratio);
    }
    out += fmt("  over the run: %s to %s across %zu samples\n", pct(lo).c_str(), pct(hi).c_str(), f.series.size());
    // A coarse picture of the series: up to 8 evenly spaced points.
    size_t step = std::max<size_t>(1, f.series.size() / 8);
    out += "  ";
    for (size_t i = 0; i < f.series.size(); i += step)
      out += fmt("%s %s  ", formatDuration(f.series[i].t_ns).c_str(), pct(f.series[i].ratio).c_str());
    out += "\n";
  }
  return out + nothingLive;
}

std::string textTemporaries(const std::vector<an::SiteAmount>& temps, const an::Totals& t, const TextOptions& opt) {
  if (t.temporary_count == 0) return "Temporaries\n  none\n";
  std::string out = fmt("Temporaries: %s (%s) freed before the same thread allocated again\n",
                        plural(t.temporary_count, "allocation", "allocations").c_str(),
                        formatBytes(t.temporary_bytes).c_str());
  TextOptions few = opt;
  few.top = std::min<size_t>(opt.top, 5);
  return out + siteList(temps, few, "sites");
}

std::string textSuggestions(const std::vector<an::Suggestion>& ss, const TextOptions& opt) {
  if (ss.empty()) return "Suggestions\n  none: nothing stood out\n";
  std::string out = "Suggestions\n";
  TextOptions short_ = opt;
  short_.frames = std::min<size_t>(opt.frames, 4);
  size_t n = std::min(ss.size(), opt.top);
  for (size_t i = 0; i < n; ++i) {
    const auto& s = ss[i];
    out += fmt("  [%s] %s: ", s.severity.c_str(), s.kind.c_str()) + s.message + "\n";
    out += "         confidence " + s.confidence + ": " + s.confidence_reason + "\n";
    if (!s.stack.empty()) out += stackText(s.stack, short_, "         ");
  }
  if (ss.size() > n) out += fmt("  ... %zu more (--top N to see more)\n", ss.size() - n);
  return out;
}

std::string textReport(const an::Report& r, const TextOptions& opt) {
  std::string out = "memledger report: " + textRecordingLine(r.recording) + textFilter(r.filter) + "\n";
  out += textSummary(r) + "\n";
  out += textLeaks(r.leaks, opt) + "\n";
  out += textPeak(r.peak, opt) + "\n";
  out += textPhases(r.phases, opt) + "\n";
  out += textFragmentation(r.fragmentation) + "\n";
  out += textTemporaries(r.temporaries, r.totals, opt) + "\n";
  out += textProcesses(r.processes) + "\n";
  out += textSuggestions(r.suggestions, opt);
  return out;
}

}  // namespace memledger::cli
