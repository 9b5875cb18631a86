// Allocation patterns and the suggestions rules engine. Every suggestion carries the numbers
// that triggered it; a rule without evidence does not fire.
#include <algorithm>
#include <cstdio>
#include <map>

#include "analyzer/analyzer.h"
#include "analyzer/format.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

// Thresholds. Chosen so that one-off allocations of ordinary programs stay silent and only a
// pattern that repeats enough to cost time or memory speaks.
constexpr int64_t kReallocChainMin = 8;        // reallocs of one block
constexpr int64_t kReallocCountMin = 1000;     // reallocs at one site
constexpr int64_t kChurnSameSizeMin = 10000;   // same-size allocations at one site
constexpr int64_t kChurnLifetimeMaxNs = 1000000;  // mean lifetime below 1 ms is "freed fast"
constexpr int64_t kSameSizeLiveMin = 1000;     // blocks of one size alive at once
constexpr int64_t kTempStormMin = 10000;       // temporaries at one site
constexpr int64_t kLeakBytesMin = 1024;        // a site leaking less than this and
constexpr int64_t kLeakCountMin = 10;          //   fewer blocks than this is not worth a line
constexpr size_t kLeakSuggestionsMax = 10;
constexpr size_t kPerKindMax = 10;      // lines per rule: a big program matches thousands of sites
constexpr size_t kPatternsMax = 200;    // patterns listed when no top N was asked for
constexpr int64_t kPeakShareMinBytes = 1 << 20;  // "free earlier" needs a peak worth shrinking
constexpr double kFragRatioMin = 0.3;
constexpr int64_t kFragResidentMin = 16 << 20;

// "`grow_buffer` (growth.c:12)": the function a reader should open.
std::string where(const Stack& stack) {
  const Frame* f = detail::namedFrame(stack);
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
  return out;
}

std::string percent(double v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
  return buf;
}

}  // namespace

std::vector<Pattern> patterns(const Recording& rec, const Filter& filter) {
  Filter all = filter;
  all.top.reset();
  std::vector<Pattern> out;
  // The thresholds below, also as SQL: a large program has 10^5-10^6 sites, few of them match.
  static const std::string where =
      "max_realloc_chain >= " + std::to_string(kReallocChainMin) + " OR realloc_count >= " +
      std::to_string(kReallocCountMin) + " OR (same_size_count >= " + std::to_string(kChurnSameSizeMin) +
      " AND free_count > 0) OR (max_live_count >= " + std::to_string(kSameSizeLiveMin) +
      " AND min_size = max_size)";
  for (const Site& s : detail::siteRows(rec, all, where.c_str())) {
    if (s.max_realloc_chain >= kReallocChainMin || s.realloc_count >= kReallocCountMin) {
      int64_t steps = std::max<int64_t>(1, s.max_realloc_chain);
      out.push_back({PatternKind::ReallocGrowth, s,
                     {{"realloc_count", s.realloc_count},
                      {"max_realloc_chain", s.max_realloc_chain},
                      {"min_size", s.min_size},
                      {"max_size", s.max_size},
                      {"growth_bytes", (s.max_size - s.min_size) / steps}}});
    }
    if (s.same_size_count >= kChurnSameSizeMin && s.free_count > 0) {
      int64_t meanLifetime = s.lifetime_ns_sum / s.free_count;
      if (meanLifetime <= kChurnLifetimeMaxNs)
        out.push_back({PatternKind::SameSizeChurn, s,
                       {{"alloc_count", s.alloc_count},
                        {"same_size_count", s.same_size_count},
                        {"size", s.max_size},
                        {"mean_lifetime_ns", meanLifetime}}});
    }
    if (s.max_live_count >= kSameSizeLiveMin && s.min_size == s.max_size)
      out.push_back({PatternKind::ManySameSizeLive, s,
                     {{"max_live_count", s.max_live_count},
                      {"size", s.max_size},
                      {"max_live_bytes", s.max_live_bytes}}});
  }
  // Sites come by allocated bytes, so the cut keeps the patterns that cost the most.
  size_t keep = filter.top.value_or(kPatternsMax);
  if (out.size() > keep) out.resize(keep);
  for (Pattern& p : out) p.site.stack = rec.stack(p.site.stack_id);
  return out;
}

std::vector<Suggestion> suggestions(const Recording& rec, const Filter& filter) {
  Filter all = filter;
  all.top.reset();
  std::vector<Suggestion> out;

  // Leaks, largest first.
  size_t leakLines = 0;
  // Sorted by bytes: the first hundred hold every site worth one of the ten lines.
  Filter leakFilter = all;
  leakFilter.top = 100;
  for (const SiteAmount& l : leaks(rec, leakFilter).sites) {
    if (l.bytes < kLeakBytesMin && l.count < kLeakCountMin) continue;
    if (leakLines++ == kLeakSuggestionsMax) break;
    std::string sev = l.bytes >= (1 << 20) ? "high" : l.bytes >= (64 << 10) ? "medium" : "low";
    out.push_back({"fix_leak", sev,
                   where(l.stack) + " leaked " + formatCount(l.count) + " block" +
                       (l.count == 1 ? "" : "s") + " (" + formatBytes(l.bytes) +
                       ") never freed: free " + (l.count == 1 ? "it" : "them") +
                       " when done, or give " + (l.count == 1 ? "it" : "them") + " an owner (e.g. std::unique_ptr)",
                   l.stack,
                   {{"leak_count", l.count}, {"leak_bytes", l.bytes}, {"pid", l.pid}}});
  }

  // Temporary storms: allocated and freed before anything else was allocated, over and over.
  std::vector<int64_t> stormStacks;
  size_t storms = 0;
  static const std::string stormWhere = "temp_count >= " + std::to_string(kTempStormMin);
  for (Site& s : detail::siteRows(rec, all, stormWhere.c_str())) {
    if (s.temp_count < kTempStormMin) continue;
    stormStacks.push_back(s.stack_id);
    if (storms++ >= kPerKindMax) continue;
    s.stack = rec.stack(s.stack_id);
    out.push_back({"reuse_buffer", s.temp_count >= 1000000 ? "high" : "medium",
                   where(s.stack) + " made " + formatCount(s.temp_count) +
                       " temporary allocations (" + formatBytes(s.temp_bytes) +
                       "), each freed before anything else was allocated: reuse one buffer "
                       "(hoist it out of the loop) or use a stack or arena buffer",
                   s.stack,
                   {{"temp_count", s.temp_count}, {"temp_bytes", s.temp_bytes},
                    {"alloc_count", s.alloc_count}}});
  }

  // Patterns come largest site first; each rule speaks for its kPerKindMax largest sites.
  std::map<PatternKind, size_t> perKind;
  for (const Pattern& p : patterns(rec, all)) {
    const Site& s = p.site;
    if (perKind[p.kind]++ >= kPerKindMax) continue;
    switch (p.kind) {
      case PatternKind::ReallocGrowth: {
        int64_t growth = p.evidence["growth_bytes"].get<int64_t>();
        std::string what = s.max_realloc_chain >= kReallocChainMin
                               ? " realloc'ed one block " + formatCount(s.max_realloc_chain) + " times"
                               : " made " + formatCount(s.realloc_count) + " reallocs";
        out.push_back({"reserve_capacity", s.max_realloc_chain >= 1000 ? "high" : "medium",
                       where(s.stack) + what + ", growing by " + formatCount(growth) +
                           " bytes (up to " + formatBytes(s.max_size) +
                           "): reserve the final capacity up front, or grow geometrically",
                       s.stack, p.evidence});
        break;
      }
      case PatternKind::SameSizeChurn:
        // A temporary storm at the same site already says "reuse"; one line per site is enough.
        if (std::find(stormStacks.begin(), stormStacks.end(), s.stack_id) != stormStacks.end()) break;
        out.push_back({"reuse_buffer", "medium",
                       where(s.stack) + " allocated " + formatCount(s.same_size_count) +
                           " blocks of " + formatBytes(s.max_size) + " that lived " +
                           formatDuration(p.evidence["mean_lifetime_ns"].get<int64_t>()) +
                           " on average: keep a free list or pool of them instead of "
                           "malloc/free each time",
                       s.stack, p.evidence});
        break;
      case PatternKind::ManySameSizeLive:
        out.push_back({"object_pool", s.max_live_bytes >= (64 << 20) ? "medium" : "low",
                       where(s.stack) + " kept up to " + formatCount(s.max_live_count) +
                           " blocks of " + formatBytes(s.max_size) + " alive at once (" +
                           formatBytes(s.max_live_bytes) +
                           "): an object pool or slab saves the allocator's per-block overhead "
                           "and fragmentation",
                       s.stack, p.evidence});
        break;
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
      out.push_back({"free_earlier", share >= 0.75 ? "high" : "medium",
                     where(s.stack) + " held " + formatBytes(s.bytes) + " at the heap peak, " +
                         percent(share) + " of " + formatBytes(pk.bytes) +
                         ": free it as soon as it is no longer needed, or process the data in "
                         "chunks",
                     s.stack,
                     {{"site_peak_bytes", s.bytes}, {"site_peak_count", s.count},
                      {"peak_bytes", pk.bytes}, {"share", share}}});
    }
  }

  Fragmentation fr = fragmentation(rec, all);
  if (fr.peak_ratio && *fr.peak_ratio >= kFragRatioMin && fr.peak_resident_bytes >= kFragResidentMin) {
    int64_t unused = fr.peak_resident_bytes - fr.peak_heap_bytes;
    out.push_back({"allocator_tuning", *fr.peak_ratio >= 0.5 ? "high" : "medium",
                   "At the heap peak " + percent(*fr.peak_ratio) + " of the heap's resident memory (" +
                       formatBytes(unused) + " of " + formatBytes(fr.peak_resident_bytes) +
                       ") held no live block: call malloc_trim(0) after large frees, lower "
                       "M_MMAP_THRESHOLD (MALLOC_MMAP_THRESHOLD_) so big blocks are unmapped on "
                       "free, set MALLOC_ARENA_MAX=2 for many threads, or try jemalloc",
                   {},
                   {{"peak_ratio", *fr.peak_ratio}, {"resident_bytes", fr.peak_resident_bytes},
                    {"heap_bytes", fr.peak_heap_bytes}, {"unused_bytes", unused}}});
  }

  auto rank = [](const std::string& sev) { return sev == "high" ? 0 : sev == "medium" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(),
                   [&](const Suggestion& a, const Suggestion& b) { return rank(a.severity) < rank(b.severity); });
  if (filter.top && out.size() > *filter.top) out.resize(*filter.top);
  return out;
}

}  // namespace memledger::analyzer
