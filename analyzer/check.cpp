#include "analyzer/check.h"
#include "analyzer/devices.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "analyzer/diff.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

constexpr size_t kPeakSitesShown = 10;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string bytesText(int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (std::fabs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(n));
  else
    std::snprintf(buf, sizeof buf, "%lld B (%.1f %s)", static_cast<long long>(n), v, units[u]);
  return buf;
}

// The images of the started program itself: the first image's pid, through its execs.
std::set<int64_t> programImages(const std::vector<Process>& procs) {
  std::set<int64_t> out;
  if (procs.empty()) return out;
  // The started program is the first image without a parent (ids are assigned in start order).
  const Process* first = nullptr;
  for (const auto& p : procs)
    if (!p.parent_image && (!first || p.image_id < first->image_id)) first = &p;
  if (!first) first = &procs.front();
  for (const auto& p : procs)
    if (p.pid == first->pid && !p.forked) out.insert(p.image_id);
  return out;
}

struct PeakOfKind {
  int64_t bytes = 0;
  int64_t image = 0;
};

// The peak a limit is checked against: heap and mmap as the report states them (summed over the
// processes alive at once, where the file has it), RSS per process (it is sampled per process).
// `image` is the process with the largest own peak of that kind, whose sites are listed.
PeakOfKind peakOf(const Recording& rec, const std::vector<Process>& procs, PeakKind kind) {
  PeakOfKind best;
  for (const auto& p : procs) {
    int64_t v = kind == PeakKind::Heap ? p.peak_heap_bytes : kind == PeakKind::Mmap ? p.peak_mmap_bytes : p.peak_rss;
    if (v > best.bytes) best = {v, p.image_id};
  }
  if (kind != PeakKind::Rss)
    if (auto s = detail::simultaneousPeak(rec, kind == PeakKind::Heap ? "heap" : "mmap")) best.bytes = s->bytes;
  return best;
}

// What was live at an image's peak: the heap peak's live set (sites.peak_*), or for mmap the
// sites of that kind by their own most-live bytes (the schema keeps no mmap-peak live set).
std::vector<Site> sitesAtPeak(const Recording& rec, const std::vector<Site>& all, int64_t image, PeakKind kind) {
  std::vector<Site> out;
  for (const auto& s : all) {
    if (s.image_id != image) continue;
    // Only the kind's own blocks: heap sites for the heap peak, never mmap or pool blocks.
    if (kind == PeakKind::Mmap ? (s.kind == "mmap" && s.max_live_bytes > 0) : (s.space == "heap" && s.peak_bytes > 0))
      out.push_back(s);
  }
  auto key = [kind](const Site& s) { return kind == PeakKind::Mmap ? s.max_live_bytes : s.peak_bytes; };
  std::stable_sort(out.begin(), out.end(), [&](const Site& x, const Site& y) { return key(x) > key(y); });
  if (out.size() > kPeakSitesShown) out.resize(kPeakSitesShown);
  for (Site& s : out) s.stack = rec.uncachedStack(s.stack_id);
  return out;
}

// --- CUDA spaces (issue 16) ---
bool isCudaKind(PeakKind k) { return k == PeakKind::Device || k == PeakKind::Pinned || k == PeakKind::Managed; }
bool inCudaKind(const std::string& space, PeakKind k) {
  return k == PeakKind::Device ? space.rfind("device:", 0) == 0 : space == peakKindName(k);
}
// The largest simultaneous peak among the CUDA spaces of kind `k`, with its live set.
void cudaPeak(const Recording& rec, PeakKind k, CheckResult& r) {
  for (const DeviceSpace& d : deviceSpaces(rec, kPeakSitesShown)) {
    if (!inCudaKind(d.name, k) || d.peak_bytes <= r.peak_bytes) continue;
    r.peak_bytes = d.peak_bytes;
    r.peak_image = 0;
    r.peak_sites.clear();
    for (const SiteAmount& a : d.peak_sites) {
      Site s;
      s.stack_id = a.stack_id;
      s.kind = a.kind;
      s.image_id = a.image_id;
      s.pid = a.pid;
      s.space = d.name;
      s.peak_count = a.count;
      s.peak_bytes = a.bytes;
      s.stack = a.stack;
      r.peak_sites.push_back(std::move(s));
    }
  }
}

std::string processName(const Process& p) {
  return p.command.empty() ? (p.exe ? *p.exe : std::string("?")) : p.command;
}

}  // namespace

std::optional<int64_t> parseSize(std::string_view text) {
  std::string s = lower(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return std::nullopt;
  double number = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + i, number);
  if (ec != std::errc() || end != s.data() + i || number < 0) return std::nullopt;
  std::string suffix = s.substr(i);
  double mult = 0;
  static const std::pair<const char*, double> table[] = {
      {"", 1}, {"b", 1},
      {"k", 1024.0}, {"kib", 1024.0}, {"kb", 1e3},
      {"m", 1048576.0}, {"mib", 1048576.0}, {"mb", 1e6},
      {"g", 1073741824.0}, {"gib", 1073741824.0}, {"gb", 1e9},
      {"t", 1099511627776.0}, {"tib", 1099511627776.0}, {"tb", 1e12}};
  for (const auto& [name, m] : table)
    if (suffix == name) mult = m;
  if (mult == 0) return std::nullopt;
  double bytes = number * mult;
  if (bytes > 9.0e18 || bytes != std::floor(bytes)) return std::nullopt;  // "1.3B" is not a size
  return static_cast<int64_t>(bytes);
}

std::optional<PeakKind> parsePeakKind(std::string_view text) {
  if (text == "heap") return PeakKind::Heap;
  if (text == "mmap") return PeakKind::Mmap;
  if (text == "rss") return PeakKind::Rss;
  if (text == "device") return PeakKind::Device;
  if (text == "pinned") return PeakKind::Pinned;
  if (text == "managed") return PeakKind::Managed;
  return std::nullopt;
}

const char* peakKindName(PeakKind kind) {
  switch (kind) {
    case PeakKind::Heap: return "heap";
    case PeakKind::Mmap: return "mmap";
    case PeakKind::Rss: return "rss";
    case PeakKind::Device: return "device";
    case PeakKind::Pinned: return "pinned";
    case PeakKind::Managed: return "managed";
  }
  return "?";
}

CheckResult check(const Recording& rec, const Limits& limits, SuppressionList& suppressions,
                  const Recording* baseline) {
  if ((limits.max_peak_growth_pct || limits.max_new_leak_sites) && !baseline)
    throw std::invalid_argument("--max-peak-growth and --max-new-leak-sites need --baseline");
  CheckResult r;
  r.processes = processes(rec);
  r.python_processes = detail::pythonImageCount(rec);
  std::vector<Site> all = detail::siteRows(rec, {});  // stacks read below, only where needed
  // Leak kinds: a heap site counts only its blocks of the chosen kinds.
  const auto byKind = leakKindsBySite(rec);
  for (Site& s : all) {
    auto it = byKind.find({s.stack_id, s.kind, s.image_id});
    if (it == byKind.end()) continue;
    int64_t count = 0, bytes = 0;
    for (int k = 0; k < kLeakKindSlots; ++k) {
      if (!it->second[k].count) continue;
      if (!limits.leak_kinds[k]) {
        r.uncounted_count += it->second[k].count;
        r.uncounted_bytes += it->second[k].bytes;
        continue;
      }
      count += it->second[k].count;
      bytes += it->second[k].bytes;
      if (k != kNotClassified) s.leak_kinds += std::string(s.leak_kinds.empty() ? "" : ", ") + leakKindName(k);
    }
    s.leak_count = count;
    s.leak_bytes = bytes;
  }

  // Leaks, after suppressions.
  for (const auto& s : all) {
    if (s.leak_count <= 0 && s.leak_bytes <= 0) continue;
    if (isCudaKind(limits.peak_kind) && !inCudaKind(s.space, limits.peak_kind)) continue;
    // Python's objects (record --python-allocators) are inside pymalloc's arenas, which count
    // here as the mmap blocks they are: not twice.
    if (detail::insideCountedMemory(s.kind)) continue;
    Stack stack = rec.uncachedStack(s.stack_id);
    if (Suppression* sup = suppressions.match(stack, s.kind)) {
      sup->matched_sites += 1;
      sup->matched_leaks += s.leak_count;
      sup->matched_bytes += s.leak_bytes;
      r.suppressed_count += s.leak_count;
      r.suppressed_bytes += s.leak_bytes;
      continue;
    }
    r.leak_count += s.leak_count;
    r.leak_bytes += s.leak_bytes;
    r.leak_sites.push_back(s);
    r.leak_sites.back().stack = std::move(stack);
  }
  std::stable_sort(r.leak_sites.begin(), r.leak_sites.end(),
                   [](const Site& a, const Site& b) { return a.leak_bytes > b.leak_bytes; });
  r.suppressions = suppressions.entries();

  // Peak of the chosen kind.
  r.peak_kind = limits.peak_kind;
  if (isCudaKind(limits.peak_kind)) {
    cudaPeak(rec, limits.peak_kind, r);
  } else {
    PeakOfKind pk = peakOf(rec, r.processes, limits.peak_kind);
    r.peak_bytes = pk.bytes;
    r.peak_image = pk.image;
    r.peak_sites = sitesAtPeak(rec, all, pk.image, limits.peak_kind == PeakKind::Rss ? PeakKind::Heap : limits.peak_kind);
  }

  auto fmt = [](const char* what, int64_t actual, const char* rel, int64_t limit) {
    std::ostringstream o;
    o << actual << " " << what << " " << rel << " limit " << limit;
    return o.str();
  };

  // The program's own failure fails the check whatever the limits say.
  if (r.processes.empty()) {
    r.violations.push_back({"program-failed", "no process was recorded", {}, std::nullopt});
  }
  std::set<int64_t> program = programImages(r.processes);
  for (const auto& p : r.processes) {
    if (!program.count(p.image_id)) continue;
    std::string why;
    if (p.ended_by && *p.ended_by == "signal")
      why = "killed by signal " + std::to_string(p.signal.value_or(0));
    else if (p.ended_by && *p.ended_by == "exit" && p.exit_code.value_or(0) != 0)
      why = "exited with status " + std::to_string(*p.exit_code);
    if (!why.empty())
      r.violations.push_back({"program-failed", "program '" + processName(p) + "' (pid " + std::to_string(p.pid) +
                                                    ") " + why, {}, p.image_id});
  }

  if (limits.max_leaked_bytes && r.leak_bytes > *limits.max_leaked_bytes)
    r.violations.push_back({"max-leaked-bytes", fmt("leaked bytes", r.leak_bytes, ">", *limits.max_leaked_bytes),
                            r.leak_sites, std::nullopt});
  if (limits.max_leaks && r.leak_count > *limits.max_leaks)
    r.violations.push_back({"max-leaks", fmt("leaked blocks", r.leak_count, ">", *limits.max_leaks),
                            r.leak_sites, std::nullopt});
  if (limits.max_peak && r.peak_bytes > *limits.max_peak)
    r.violations.push_back({"max-peak",
                            fmt((std::string(peakKindName(r.peak_kind)) + " peak bytes").c_str(), r.peak_bytes, ">",
                                *limits.max_peak),
                            r.peak_sites, r.peak_image});

  if (baseline) {
    std::vector<Process> bprocs = processes(*baseline);
    if (isCudaKind(limits.peak_kind)) {
      CheckResult b;
      cudaPeak(*baseline, limits.peak_kind, b);
      r.baseline_peak_bytes = b.peak_bytes;
    } else {
      r.baseline_peak_bytes = peakOf(*baseline, bprocs, limits.peak_kind).bytes;
    }
    if (limits.max_peak_growth_pct) {
      int64_t old = *r.baseline_peak_bytes;
      double growth = old > 0 ? 100.0 * static_cast<double>(r.peak_bytes - old) / static_cast<double>(old)
                              : (r.peak_bytes > 0 ? INFINITY : 0.0);
      if (growth > *limits.max_peak_growth_pct) {
        char buf[256];
        std::snprintf(buf, sizeof buf, "%s peak grew %.1f%% (%lld -> %lld bytes) > limit %.1f%%",
                      peakKindName(r.peak_kind), growth, static_cast<long long>(old),
                      static_cast<long long>(r.peak_bytes), *limits.max_peak_growth_pct);
        r.violations.push_back({"max-peak-growth", buf, r.peak_sites, r.peak_image});
      }
    }
    if (limits.max_new_leak_sites) {
      // Baseline leak sites count as known whether or not they were suppressed there.
      std::set<std::pair<std::string, std::string>> known;
      for (const auto& s : detail::siteRows(*baseline, {}))
        if (s.leak_count > 0 || s.leak_bytes > 0) known.insert({siteKey(baseline->uncachedStack(s.stack_id)), s.kind});
      for (const auto& s : r.leak_sites)
        if (!known.count({siteKey(s.stack), s.kind})) r.new_leak_sites.push_back(s);
      int64_t n = static_cast<int64_t>(r.new_leak_sites.size());
      if (n > *limits.max_new_leak_sites)
        r.violations.push_back({"max-new-leak-sites", fmt("new leak sites", n, ">", *limits.max_new_leak_sites),
                                r.new_leak_sites, std::nullopt});
    }
  }
  return r;
}

std::string frameLine(const Frame& f) {
  std::string out = f.function || !f.module ? f.function.value_or("??") : unknownFrameName(f);
  if (f.file) {
    out += " (" + *f.file;
    if (f.line) out += ":" + std::to_string(*f.line);
    out += ")";
  }
  if (f.module) {
    auto slash = f.module->rfind('/');
    out += " [" + (slash == std::string::npos ? *f.module : f.module->substr(slash + 1)) + "]";
  }
  return out;
}

std::string formatCheck(const CheckResult& r, const std::string& title, size_t top) {
  std::ostringstream o;
  o << "memledger check " << title << ": " << (r.passed() ? "PASS" : "FAIL") << "\n";
  o << "  leaks: " << r.leak_count << " blocks, " << bytesText(r.leak_bytes) << " in " << r.leak_sites.size()
    << " sites";
  if (r.suppressed_count || r.suppressed_bytes)
    o << " (suppressed: " << r.suppressed_count << " blocks, " << bytesText(r.suppressed_bytes) << ")";
  if (r.uncounted_count)
    o << " (not counted: " << r.uncounted_count << " blocks, " << bytesText(r.uncounted_bytes)
      << " of other leak kinds; --leak-kinds all counts them)";
  if (r.python_processes)
    o << "\n  (Python: live when the interpreter started finalizing, in " << r.python_processes
      << (r.python_processes == 1 ? " process)" : " processes)");
  o << "\n  " << peakKindName(r.peak_kind) << " peak: " << bytesText(r.peak_bytes);
  if (r.baseline_peak_bytes) o << " (baseline " << bytesText(*r.baseline_peak_bytes) << ")";
  o << "\n";
  for (const auto& v : r.violations) {
    o << "violation [" << v.rule << "]: " << v.message << "\n";
    size_t n = 0;
    for (const auto& s : v.sites) {
      if (top && n >= top) {
        size_t more = v.sites.size() - n;
        o << "  ... " << more << " more site" << (more == 1 ? "" : "s") << " (--top N shows more, --top 0 all)\n";
        break;
      }
      int64_t bytes = v.rule.starts_with("max-peak") ? (s.kind == "mmap" && r.peak_kind == PeakKind::Mmap ? s.max_live_bytes : s.peak_bytes)
                                                      : s.leak_bytes;
      int64_t count = v.rule.starts_with("max-peak") ? s.peak_count : s.leak_count;
      bool leak = !v.rule.starts_with("max-peak");
      o << "  site " << ++n << ": " << bytesText(bytes) << " in " << count << " blocks (" << s.kind
        << (leak && !s.leak_kinds.empty() ? ", " + s.leak_kinds : "") << ", pid " << s.pid << ")\n";
      for (size_t i = 0; i < s.stack.size(); ++i) o << "    #" << i << " " << frameLine(s.stack[i]) << "\n";
      if (s.stack.empty()) o << "    (no stack)\n";
    }
  }
  bool header = false;
  for (const auto& s : r.suppressions) {
    // Built-in entries are listed only when they matched something, user entries always.
    if (s.origin.starts_with("built-in") && s.matched_sites == 0) continue;
    if (!header) o << "suppressions:\n";
    header = true;
    o << "  " << (s.rule ? "" : "leak:") << s.pattern << " (" << s.origin << "): " << s.matched_leaks << " leaks, " << s.matched_bytes
      << " bytes in " << s.matched_sites << " sites\n";
  }
  return o.str();
}

}  // namespace memledger::analyzer
