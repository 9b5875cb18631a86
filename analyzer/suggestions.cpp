// Allocation patterns and the suggestions rules engine. Every suggestion carries the numbers
// that triggered it; a rule without evidence does not fire.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "analyzer/analyzer.h"
#include "analyzer/devices.h"
#include "analyzer/format.h"
#include "analyzer/python_sites.h"
#include "analyzer/site_merge.h"
#include "analyzer/sql.h"
#include "analyzer/suppressions.h"

namespace memledger::analyzer {

namespace {

// Thresholds. Chosen so that one-off allocations of ordinary programs stay silent and only a
// pattern that repeats enough to cost time or memory speaks.
constexpr int64_t kReallocChainMin = 8;        // reallocs of one block
constexpr int64_t kReallocCountMin = 1000;     // reallocs at one site
constexpr int64_t kChurnSameSizeMin = 10000;   // same-size allocations at one site
constexpr int64_t kChurnLifetimeMaxNs = 1000000;  // mean lifetime below 1 ms is "freed fast"
constexpr int64_t kSameSizeLiveMin = 1000;     // blocks of one size alive at once
constexpr int64_t kPythonSmallObjectMax = 512;  // pymalloc's limit: a Python object's header matters
constexpr int64_t kTempStormMin = 10000;       // temporaries at one site
constexpr int64_t kLeakBytesMin = 1024;        // a site leaking less than this and
constexpr int64_t kLeakCountMin = 10;          //   fewer blocks than this is not worth a line
constexpr size_t kLeakSuggestionsMax = 10;
constexpr size_t kPerKindMax = 10;      // lines per rule: a big program matches thousands of sites
constexpr size_t kPatternsMax = 200;    // patterns listed when no top N was asked for
constexpr int64_t kPeakShareMinBytes = 1 << 20;  // "free earlier" needs a peak worth shrinking
constexpr double kFragRatioMin = 0.3;
constexpr int64_t kFragResidentMin = 16 << 20;

// The first Python frame of a stack, or nullptr.
const Frame* firstPythonFrame(const Stack& stack) {
  for (const Frame& f : stack)
    if (isPythonFrame(f)) return &f;
  return nullptr;
}

// A library's Python code (the standard library, an installed package, a frozen module), not
// the program's own: numpy's `ones` (numeric.py) is how the program's line made the array.
bool isLibraryPython(const Frame& f) {
  const std::string& file = *f.file;
  return file.starts_with("<frozen ") || file.find("/site-packages/") != std::string::npos ||
         file.find("/dist-packages/") != std::string::npos || file.find("/lib/python3.") != std::string::npos ||
         file.find("/lib/python2.") != std::string::npos;
}

// For advice through an extension: the program's own Python line that led there (the first
// Python frame outside the libraries), else the innermost Python frame.
const Frame* programPythonFrame(const Stack& stack) {
  for (const Frame& f : stack)
    if (isPythonFrame(f) && !isLibraryPython(f)) return &f;
  return firstPythonFrame(stack);
}

// "`grow_buffer` (growth.c:12)": the function a reader should open; for a Python site the
// Python function and line, not the interpreter's allocator. `pythonOwned`: Python objects kept
// the blocks (python_owned leaks), so the Python line that made them is the one to open even when
// an extension's named C++ code (libtorch's allocator) allocated.
std::string where(const Stack& stack, bool pythonOwned = false) {
  const Frame* f = siteFrame(stack);
  // Through an extension's code (numpy's, libtorch's): the program's line that called it.
  if ((pythonOwned || (f && isPythonFrame(*f))) && !pythonSiteFrame(stack))
    if (const Frame* py = programPythonFrame(stack)) f = py;
  if (!f) {
    for (const Frame& any : stack)
      if (any.module) {
        auto slash = any.module->rfind('/');
        return "code in " + (slash == std::string::npos ? *any.module : any.module->substr(slash + 1));
      }
    return "an unknown site";
  }
  std::string out = "`" + *f->function + "`";
  std::string text = frameText(*f);
  auto paren = text.rfind(" (");
  if (paren != std::string::npos) out += text.substr(paren);
  // A Python line that called an extension's code which allocated: say whose code that was (the
  // innermost module that is not the interpreter's: a Python object an extension made comes
  // through the interpreter's allocator, PyObject_Malloc).
  if (isPythonFrame(*f) && !pythonSiteFrame(stack))
    for (const Frame& native : stack) {
      if (isPythonFrame(native)) break;
      if (!native.module || isInterpreterModule(*native.module)) continue;
      auto slash = native.module->rfind('/');
      out += " in " + native.module->substr(slash == std::string::npos ? 0 : slash + 1);
      break;
    }
  return out;
}

// Python's small objects (kind pyobject, record --python-allocators) come from pymalloc, which is
// already a pool of same-size blocks with free lists: a loop that makes and drops a tuple or an
// int costs no allocator call, and the heap's advice (a free list, a pool, one reused buffer) is
// what pymalloc does. What a program can change about them is how many it keeps and how it
// builds a value, in Python.
bool isPyObject(const std::string& kind) { return kind == "pyobject"; }

// The interpreter's own work (its start-up, the import system, its C code with no Python code
// running: pythonRuntimeClass) named by no Python line of the program's: nothing its code can
// change. A module of the program's whose top-level code runs while it is imported keeps advice.
bool interpreterOwnWork(const Stack& stack, const std::string& kind) {
  if (!pythonRuntimeClass(stack, kind)) return false;
  const Frame* py = firstPythonFrame(stack);
  return !py || isLibraryPython(*py);
}

std::string percent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
  return buf;
}

std::string factorText(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

bool matches(PatternKind kind, const Site& s) {
  switch (kind) {
    case PatternKind::ReallocGrowth:
      return s.max_realloc_chain >= kReallocChainMin || s.realloc_count >= kReallocCountMin;
    case PatternKind::SameSizeChurn:
      return s.same_size_count >= kChurnSameSizeMin && s.free_count > 0 &&
             s.lifetime_ns_sum / s.free_count <= kChurnLifetimeMaxNs;
    case PatternKind::ManySameSizeLive:
      return s.max_live_count >= kSameSizeLiveMin && s.min_size == s.max_size;
  }
  return false;
}

// How a realloc'ed block grows, from what a site keeps: its allocations' count, their sum, the
// smallest and largest size, and the longest chain of reallocs of one block ending here (a chain
// counts the block's reallocs at every site, so it can be longer than this site's own count).
//   growth_factor g: the mean factor per step. When the site's allocations can be one block's
//   chain (alloc_count <= chain + 1) the steps are the site's own, (max/min)^(1/(n-1)); else the
//   longest chain's, (max/min)^(1/chain). A buffer that doubles has 2, one that grows by half
//   1.5, CPython's lists ~1.125; a constant step d from size s has 1 + d/s, which tends to 1
//   (16 bytes a step up to 160 KB: 1.0009).
//   sum_vs_linear R: the site's bytes over n (min + max) / 2, the sum of n sizes spaced evenly
//   from min to max. Constant steps give 1 (exactly, for one chain); geometric sizes crowd at
//   the small end, R < 1 (doubling: 2 max / (n max / 2) = 4 / n).
// A constant step from a tiny start has a large factor over a short chain (16 -> 8208 by 1 KiB
// in 8 steps: 2.2), which R tells apart (1.0). Geometric: g >= 1.1 and R < 0.95. With fewer
// than 3 sizes at the site, or a chain that made steps at other sites, nothing can be told, and
// no advice is given.
struct Growth {
  double factor = 1;
  double sum_vs_linear = 1;
  bool known = false;      // at least 3 allocations of distinct sizes at this site
  bool geometric = false;
  bool one_chain = false;  // all of the site's allocations can be one block's chain
};

constexpr double kGeometricFactorMin = 1.1;
constexpr double kConvexSumMax = 0.95;

Growth growthOf(const Site& s) {
  Growth g;
  g.one_chain = s.alloc_count <= s.max_realloc_chain + 1;
  // A chain longer than the site's own allocations made some of its steps at other sites (other
  // callers of the same resize function): the sizes here are a sample of it, their spacing says
  // nothing about how it grows.
  g.known = s.alloc_count >= 3 && s.alloc_count >= s.max_realloc_chain && s.min_size > 0 && s.max_size > s.min_size;
  if (!g.known) return g;
  double lo = static_cast<double>(s.min_size), hi = static_cast<double>(s.max_size);
  double n = static_cast<double>(s.alloc_count);
  double steps = g.one_chain ? n - 1 : static_cast<double>(std::max<int64_t>(1, s.max_realloc_chain));
  g.factor = std::pow(hi / lo, 1.0 / steps);
  g.sum_vs_linear = static_cast<double>(s.alloc_bytes) / (n * (lo + hi) / 2);
  g.geometric = g.factor >= kGeometricFactorMin && g.sum_vs_linear < kConvexSumMax;
  return g;
}

nlohmann::json evidenceOf(PatternKind kind, const Site& s, int64_t processes) {
  nlohmann::json e;
  switch (kind) {
    case PatternKind::ReallocGrowth: {
      int64_t steps = std::max<int64_t>(1, s.max_realloc_chain);
      // Rounded, and at least a byte when it grew: a str extended by one character at a time has
      // a chain one step longer than its sizes here (its first steps were pymalloc's), which
      // truncated to "0 bytes a step".
      int64_t grown = s.max_size - s.min_size;
      int64_t growthBytes = grown > 0 ? std::max<int64_t>(1, (grown + steps / 2) / steps) : 0;
      e = {{"alloc_count", s.alloc_count},
           {"alloc_bytes", s.alloc_bytes},
           {"realloc_count", s.realloc_count},
           {"max_realloc_chain", s.max_realloc_chain},
           {"min_size", s.min_size},
           {"max_size", s.max_size},
           {"growth_bytes", growthBytes},
           {"growth_factor", growthOf(s).factor},
           {"sum_vs_linear", growthOf(s).sum_vs_linear}};
      break;
    }
    case PatternKind::SameSizeChurn:
      e = {{"alloc_count", s.alloc_count},
           {"same_size_count", s.same_size_count},
           {"size", s.max_size},
           {"mean_lifetime_ns", s.lifetime_ns_sum / std::max<int64_t>(1, s.free_count)}};
      break;
    case PatternKind::ManySameSizeLive:
      e = {{"max_live_count", s.max_live_count}, {"size", s.max_size}, {"max_live_bytes", s.max_live_bytes}};
      break;
  }
  if (processes > 1) e["processes"] = processes;
  return e;
}

// " in 12 processes" for a site merged across processes.
std::string inProcesses(const nlohmann::json& evidence) {
  if (!evidence.contains("processes")) return {};
  return " in " + formatCount(evidence["processes"].get<int64_t>()) + " processes";
}

}  // namespace

std::vector<Pattern> patterns(const Recording& rec, const Filter& filter) {
  Filter all = filter;
  all.top.reset();
  // The thresholds below, also as SQL: a large program has 10^5-10^6 sites, few of them match.
  static const std::string where =
      "max_realloc_chain >= " + std::to_string(kReallocChainMin) + " OR realloc_count >= " +
      std::to_string(kReallocCountMin) + " OR (same_size_count >= " + std::to_string(kChurnSameSizeMin) +
      " AND free_count > 0) OR (max_live_count >= " + std::to_string(kSameSizeLiveMin) +
      " AND min_size = max_size)";
  const PatternKind kinds[] = {PatternKind::ReallocGrowth, PatternKind::SameSizeChurn, PatternKind::ManySameSizeLive};
  std::vector<Pattern> out;
  std::vector<Site> rows = detail::siteRows(rec, all, where.c_str());
  if (!detail::severalProcesses(rec, filter)) {
    for (const Site& s : rows)
      for (PatternKind k : kinds)
        if (matches(k, s)) out.push_back({k, s, evidenceOf(k, s, 1)});
  } else {
    // The same code in several processes is one pattern: the rows that show it, merged.
    for (PatternKind k : kinds) {
      std::vector<Site> matching;
      for (const Site& s : rows)
        if (matches(k, s)) matching.push_back(s);
      std::vector<int64_t> processes;
      std::vector<Site> merged = detail::mergeSiteRows(rec, std::move(matching), &processes);
      for (size_t m = 0; m < merged.size(); ++m)
        out.push_back({k, merged[m], evidenceOf(k, merged[m], processes[m])});
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const Pattern& a, const Pattern& b) { return a.site.alloc_bytes > b.site.alloc_bytes; });
  }
  // Sites come by allocated bytes, so the cut keeps the patterns that cost the most.
  size_t keep = filter.top.value_or(kPatternsMax);
  if (out.size() > keep) out.resize(keep);
  for (Pattern& p : out) p.site.stack = rec.stack(p.site.stack_id);
  return out;
}

std::vector<Suggestion> suggestions(const Recording& rec, const Filter& filter) { return suggestions(rec, filter, nullptr); }

std::vector<Suggestion> suggestions(const Recording& rec, const Filter& filter, const Leaks* known) {
  Filter all = filter;
  all.top.reset();
  std::vector<Suggestion> out;
  const bool merge = detail::severalProcesses(rec, filter);

  // Leaks, largest first (merged across processes by leaks() itself).
  size_t leakLines = 0;
  // Sorted by bytes: the first hundred hold every site worth one of the ten lines.
  Filter leakFilter = all;
  leakFilter.top = kRuleLeakSites;
  std::optional<Leaks> made;
  if (!known || (known->sites.size() < kRuleLeakSites && known->sites.size() < known->site_count))
    known = &made.emplace(leaks(rec, leakFilter));
  std::vector<int64_t> killed;  // pids that died of a signal: their live blocks were cut short
  {
    detail::Statement q(rec, "SELECT DISTINCT pid FROM processes WHERE ended_by = 'signal'");
    while (q.step()) killed.push_back(q.i64(0));
  }
  for (size_t i = 0; i < known->sites.size() && i < kRuleLeakSites; ++i) {
    const SiteAmount& l = known->sites[i];
    if (l.bytes < kLeakBytesMin && l.count < kLeakCountMin) continue;
    // The C runtime's and allocators' own blocks (stdio buffers, arenas) are not the user's to fix:
    // leaks() labels them with their origin instead.
    if (l.origin != kOriginProgram) continue;
    if (leakLines++ == kLeakSuggestionsMax) break;
    std::string sev = l.bytes >= (1 << 20) ? "high" : l.bytes >= (64 << 10) ? "medium" : "low";
    nlohmann::json evidence = {{"leak_count", l.count}, {"leak_bytes", l.bytes}, {"pid", l.pid}};
    size_t nproc = std::max<size_t>(1, l.processes.size());
    if (nproc > 1) evidence["processes"] = nproc;
    Suggestion sg{"fix_leak", sev,
                  where(l.stack) + " leaked " + formatCount(l.count) + " block" + (l.count == 1 ? "" : "s") + " (" +
                      formatBytes(l.bytes) + ")" + inProcesses(evidence) + " never freed: free " +
                      (l.count == 1 ? "it" : "them") + " when done, or give " + (l.count == 1 ? "it" : "them") +
                      " an owner (e.g. std::unique_ptr)",
                  l.stack, evidence};
    // Python frees what nothing refers to: what is left was still referenced when the script's
    // own code ended (a module-level list or dict, a cache, a closure). So is an extension's
    // block that finalization freed (a tensor a global kept): its owner was a Python object.
    const bool pythonOwned = l.python_owned && firstPythonFrame(l.stack);
    if (pythonOwned) sg.evidence["finalization_freed"] = l.count;  // every block: Python objects held them
    if (pythonSiteFrame(l.stack) || pythonOwned) {
      // pymalloc's blocks are the objects themselves (record --python-allocators).
      const char* unit = isPyObject(l.kind) ? " object" : " block";
      sg.message = where(l.stack, pythonOwned) + " made " + formatCount(l.count) + unit + (l.count == 1 ? "" : "s") + " (" +
                   formatBytes(l.bytes) + ")" + inProcesses(evidence) +
                   " still referenced when the program's code finished: drop the reference when done (`del` it, "
                   "`.clear()` a global list or dict), bound a cache (functools.lru_cache(maxsize=N)), or keep "
                   "weak references (weakref)";
    }
    bool allKilled = !killed.empty();
    for (const ProcessAmount& p : l.processes.empty() ? std::vector<ProcessAmount>{{l.pid, l.count, l.bytes}} : l.processes)
      allKilled = allKilled && std::find(killed.begin(), killed.end(), p.pid) != killed.end();
    if (allKilled) {
      sg.confidence = "low";
      sg.confidence_reason = "the process died of a signal: its blocks were live when it was killed, not "
                             "necessarily leaked";
    } else if (!detail::namedFrame(l.stack)) {
      sg.confidence = "low";
      sg.confidence_reason = "no frame of the stack has a symbol, so the code that owns the blocks is unknown";
    } else if (l.count >= 2 * static_cast<int64_t>(nproc)) {
      sg.confidence = "high";
      sg.confidence_reason = formatCount(l.count) + " blocks from one site were never freed" +
                             (nproc > 1 ? " (several in a process)" : "") + ": the loss grows with the work done";
    } else {
      sg.confidence = "medium";
      sg.confidence_reason = "one block per process: it may be kept on purpose until exit (a global or a "
                             "cache), which the program's exit frees";
    }
    out.push_back(std::move(sg));
  }

  // Temporary storms: allocated and freed before anything else was allocated, over and over.
  std::vector<std::string> stormSites;  // identities (analyzer/site_merge.h) of the sites told to reuse
  detail::SiteIdentity identity(rec);
  size_t storms = 0;
  static const std::string stormWhere = "temp_count >= " + std::to_string(kTempStormMin);
  std::vector<int64_t> stormProcesses;
  std::vector<Site> stormRows = detail::siteRows(rec, all, stormWhere.c_str());
  if (merge) stormRows = detail::mergeSiteRows(rec, std::move(stormRows), &stormProcesses);
  for (size_t i = 0; i < stormRows.size(); ++i) {
    Site& s = stormRows[i];
    if (s.temp_count < kTempStormMin) continue;
    stormSites.push_back(identity.key(s.stack_id, s.kind));
    // pymalloc hands a dropped object's block to the next one at once: nothing to reuse by hand.
    if (isPyObject(s.kind)) continue;
    s.stack = rec.stack(s.stack_id);
    if (interpreterOwnWork(s.stack, s.kind)) continue;
    if (storms++ >= kPerKindMax) continue;
    nlohmann::json evidence = {{"temp_count", s.temp_count}, {"temp_bytes", s.temp_bytes}, {"alloc_count", s.alloc_count}};
    if (i < stormProcesses.size() && stormProcesses[i] > 1) evidence["processes"] = stormProcesses[i];
    Suggestion sg{"reuse_buffer", s.temp_count >= 1000000 ? "high" : "medium",
                  where(s.stack) + " made " + formatCount(s.temp_count) + " temporary allocations (" +
                      formatBytes(s.temp_bytes) + ")" + inProcesses(evidence) +
                      ", each freed before anything else was allocated: reuse one buffer "
                      "(hoist it out of the loop) or use a stack or arena buffer",
                  s.stack, evidence};
    if (pythonSiteFrame(s.stack))
      sg.message = where(s.stack) + " made " + formatCount(s.temp_count) + " temporary objects (" +
                   formatBytes(s.temp_bytes) + ")" + inProcesses(evidence) +
                   ", each dropped before anything else was allocated: create one outside the loop and reuse it "
                   "(a bytearray or memoryview filled in place, numpy's out= argument)";
    bool nearlyAll = s.temp_count * 10 >= s.alloc_count * 9;
    sg.confidence = nearlyAll ? "high" : "medium";
    sg.confidence_reason = nearlyAll ? "nearly every allocation of the site was freed before the thread allocated "
                                       "anything else: one buffer can serve them all"
                                     : percent(static_cast<double>(s.temp_count) / static_cast<double>(s.alloc_count)) +
                                           " of the site's allocations were temporary; the others live longer";
    out.push_back(std::move(sg));
  }

  // Patterns come largest site first; each rule speaks for its kPerKindMax largest sites.
  std::map<PatternKind, size_t> perKind;
  for (const Pattern& p : patterns(rec, all)) {
    const Site& s = p.site;
    if (interpreterOwnWork(s.stack, s.kind)) continue;
    // A Python object an extension's C code made (PyObject_Malloc under numpy's frames): what the
    // program decides is how many it keeps, at its own line into the extension.
    const bool pyObject = isPyObject(s.kind);
    switch (p.kind) {
      case PatternKind::ReallocGrowth: {
        Growth g = growthOf(s);
        // A buffer that already grows geometrically is what the advice would make of it; with
        // too few sizes at the site its growth is unknown.
        if (g.geometric || !g.known) break;
        // A small str, bytes or list grown in place under a Python line is Python's to rebuild; an
        // extension's own PyMem buffer is not the program's to change.
        if (pyObject && !pythonSiteFrame(s.stack)) break;
        if (perKind[p.kind]++ >= kPerKindMax) break;
        int64_t growth = p.evidence["growth_bytes"].get<int64_t>();
        const std::string step = formatCount(growth) + (growth == 1 ? " byte" : " bytes");
        std::string what = s.max_realloc_chain >= kReallocChainMin
                               ? " realloc'ed one block " + formatCount(s.max_realloc_chain) + " times"
                               : " made " + formatCount(s.realloc_count) + " reallocs";
        Suggestion sg{"reserve_capacity", s.max_realloc_chain >= 1000 ? "high" : "medium",
                      where(s.stack) + what + inProcesses(p.evidence) + ", growing by " + step +
                          " a step (up to " + formatBytes(s.max_size) +
                          "): reserve the final capacity up front, or grow geometrically (double it)",
                      s.stack, p.evidence};
        if (pythonSiteFrame(s.stack))
          sg.message = where(s.stack) + what + inProcesses(p.evidence) + ", growing by " + step +
                       " a step (up to " + formatBytes(s.max_size) +
                       "): build it in one go (a list of parts joined once, ''.join(parts) or b''.join(parts), io.BytesIO, "
                       "a comprehension) "
                       "instead of extending it piece by piece";
        if (g.one_chain && g.sum_vs_linear >= kConvexSumMax) {
          sg.confidence = "high";
          sg.confidence_reason = "one block grew " + formatCount(s.alloc_count) +
                                 " times here in evenly spaced sizes (a constant step, factor " +
                                 factorText(g.factor) + " a step)";
        } else if (g.one_chain) {
          sg.confidence = "medium";
          sg.confidence_reason = "the sizes grew by a factor of only " + factorText(g.factor) +
                                 " a step, but not evenly: part of the growth may already be proportional";
        } else {
          sg.confidence = "medium";
          sg.confidence_reason = "several blocks grow here; the longest chain grew by a factor of only " +
                                 factorText(g.factor) + " a step on average, the others may differ";
        }
        out.push_back(std::move(sg));
        break;
      }
      case PatternKind::SameSizeChurn: {
        // A temporary storm at the same site already says "reuse"; one line per site is enough.
        if (std::find(stormSites.begin(), stormSites.end(), identity.key(s.stack_id, s.kind)) != stormSites.end()) break;
        // pymalloc is the free list this advice asks for: a loop's ints, tuples and short strings
        // are served from it without a call to malloc.
        if (pyObject) break;
        if (perKind[p.kind]++ >= kPerKindMax) break;
        Suggestion sg{"reuse_buffer", "medium",
                      where(s.stack) + " allocated " + formatCount(s.same_size_count) + " blocks of " +
                          formatBytes(s.max_size) + inProcesses(p.evidence) + " that lived " +
                          formatDuration(p.evidence["mean_lifetime_ns"].get<int64_t>()) +
                          " on average: keep a free list or pool of them instead of malloc/free each time",
                      s.stack, p.evidence};
        if (pythonSiteFrame(s.stack))
          sg.message = where(s.stack) + " made " + formatCount(s.same_size_count) + " objects of " +
                       formatBytes(s.max_size) + inProcesses(p.evidence) + " that lived " +
                       formatDuration(p.evidence["mean_lifetime_ns"].get<int64_t>()) +
                       " on average: create one outside the loop and reuse it instead of a new one each time";
        sg.confidence = "medium";
        sg.confidence_reason = "the same size over and over with a short mean life; a pool helps when the "
                               "allocator's fast path is not already enough";
        out.push_back(std::move(sg));
        break;
      }
      case PatternKind::ManySameSizeLive: {
        // pymalloc is a slab already; only fewer or smaller objects help, which is Python's to do.
        if (pyObject && !firstPythonFrame(s.stack)) break;
        // A Python object's own header (16 to 60 bytes) is a share worth saving only of a small
        // one (pymalloc's, up to 512 bytes): 20,000 bytearrays of 4 KiB would save about 1%.
        const bool python = pythonSiteFrame(s.stack) || pyObject;
        if (python && s.max_size > kPythonSmallObjectMax) break;
        if (perKind[p.kind]++ >= kPerKindMax) break;
        Suggestion sg{"object_pool", s.max_live_bytes >= (64 << 20) ? "medium" : "low",
                      where(s.stack) + " kept up to " + formatCount(s.max_live_count) + " blocks of " +
                          formatBytes(s.max_size) + " alive at once (" + formatBytes(s.max_live_bytes) + ")" +
                          inProcesses(p.evidence) +
                          ": an object pool or slab saves the allocator's per-block overhead and fragmentation",
                      s.stack, p.evidence};
        if (python)
          sg.message = where(s.stack, pyObject) + " kept up to " + formatCount(s.max_live_count) + " objects of " +
                       formatBytes(s.max_size) + " alive at once (" + formatBytes(s.max_live_bytes) + ")" +
                       inProcesses(p.evidence) +
                       ": one large buffer (a bytearray sliced by memoryview, array.array, a numpy array) or "
                       "__slots__ on their class costs less than as many separate objects";
        sg.confidence = "low";
        sg.confidence_reason = "many blocks of one size were alive at once; whether the per-block overhead "
                               "matters is not in the recording";
        out.push_back(std::move(sg));
        break;
      }
    }
  }

  // One site holding most of the peak: the peak is that site's data structure.
  Filter peakFilter = all;
  peakFilter.top = 2;  // at most two sites can each hold half of the peak
  Peak pk = peak(rec, peakFilter);
  if (pk.bytes >= kPeakShareMinBytes) {
    for (const SiteAmount& s : pk.sites) {
      double share = static_cast<double>(s.bytes) / static_cast<double>(pk.bytes);
      if (share < 0.5) break;  // sorted by bytes: no later site can reach half
      if (runtimeClass(s.stack, s.kind)) continue;  // an allocator's arena is not the program's data
      Suggestion sg{"free_earlier", share >= 0.75 ? "high" : "medium",
                    where(s.stack) + " held " + formatBytes(s.bytes) + " at the heap peak, " + percent(share) +
                        " of " + formatBytes(pk.bytes) +
                        ": free it as soon as it is no longer needed, or process the data in chunks",
                    s.stack,
                    {{"site_peak_bytes", s.bytes}, {"site_peak_count", s.count}, {"peak_bytes", pk.bytes}, {"share", share}}};
      // Named by a Python line (numpy's arrays too): what the program can do is drop its references.
      const Frame* named = siteFrame(s.stack);
      if (named && isPythonFrame(*named))
        sg.message = where(s.stack) + " held " + formatBytes(s.bytes) + " at the heap peak, " + percent(share) +
                     " of " + formatBytes(pk.bytes) +
                     ": drop the references to it (`del`, or let it go out of scope) as soon as it is no longer "
                     "needed, or produce the data lazily (a generator instead of a list) or in chunks";
      sg.confidence = share >= 0.75 ? "high" : "medium";
      sg.confidence_reason = "the site held " + percent(share) +
                             " of the peak; whether its data can go earlier depends on when it is last used";
      out.push_back(std::move(sg));
    }
  }

  Fragmentation fr = fragmentation(rec, all);
  if (fr.peak_ratio && *fr.peak_ratio >= kFragRatioMin && fr.peak_resident_bytes >= kFragResidentMin) {
    int64_t unused = fr.peak_resident_bytes - fr.peak_heap_bytes;
    Suggestion sg{"allocator_tuning", *fr.peak_ratio >= 0.5 ? "high" : "medium",
                  "At the heap peak " + percent(*fr.peak_ratio) + " of the heap's resident memory (" +
                      formatBytes(unused) + " of " + formatBytes(fr.peak_resident_bytes) +
                      ") held no live block: call malloc_trim(0) after large frees, lower "
                      "M_MMAP_THRESHOLD (MALLOC_MMAP_THRESHOLD_) so big blocks are unmapped on "
                      "free, set MALLOC_ARENA_MAX=2 for many threads, or try jemalloc",
                  {},
                  {{"peak_ratio", *fr.peak_ratio}, {"resident_bytes", fr.peak_resident_bytes},
                   {"heap_bytes", fr.peak_heap_bytes}, {"unused_bytes", unused}}};
    sg.confidence = "medium";
    sg.confidence_reason = "resident memory is sampled, not exact: the unused share is measured at the sample "
                           "nearest the peak";
    out.push_back(std::move(sg));
  }

  // Never the same advice twice: one line per rule and function named (the code to change),
  // however many call paths (or, with by_process, processes) reach it; the first line (the
  // largest) stands for the others and says how many there are.
  {
    std::map<std::string, size_t> first;
    std::vector<int64_t> paths(out.size(), 1);
    std::vector<bool> drop(out.size(), false);
    for (size_t i = 0; i < out.size(); ++i) {
      std::string key = out[i].kind + "\n" +
                        (out[i].stack.empty() ? out[i].message
                                              : where(out[i].stack, out[i].evidence.contains("finalization_freed")));
      auto [it, added] = first.emplace(std::move(key), i);
      if (added) continue;
      drop[i] = true;
      ++paths[it->second];
    }
    std::vector<Suggestion> kept;
    for (size_t i = 0; i < out.size(); ++i) {
      if (drop[i]) continue;
      if (paths[i] > 1) {
        out[i].evidence["same_code_sites"] = paths[i];
        out[i].message += " (" + formatCount(paths[i] - 1) + " more site" + (paths[i] == 2 ? "" : "s") +
                          " in the same code, by other call paths or processes, get the same advice)";
      }
      kept.push_back(std::move(out[i]));
    }
    out = std::move(kept);
  }

  cudaSuggestions(rec, filter, out);  // CUDA memory (analyzer/suggestions_cuda.cpp)

  auto rank = [](const std::string& sev) { return sev == "high" ? 0 : sev == "medium" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(),
                   [&](const Suggestion& a, const Suggestion& b) { return rank(a.severity) < rank(b.severity); });
  if (filter.top && out.size() > *filter.top) out.resize(*filter.top);
  return out;
}

}  // namespace memledger::analyzer
