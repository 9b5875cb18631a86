#include "analyzer/call_tree.h"

#include <algorithm>
#include <unordered_map>

#include "analyzer/control.h"
#include "analyzer/sql.h"
#include "analyzer/tree_index.h"

namespace memledger::analyzer {

int64_t costOf(const TreeCost& c, TreeMetric m) {
  switch (m) {
    case TreeMetric::Peak: return c.peak;
    case TreeMetric::Leaked: return c.leaked;
    case TreeMetric::Allocated: return c.allocated;
    case TreeMetric::Count: return c.count;
    case TreeMetric::Temporary: return c.temporary;
  }
  return 0;
}

const char* treeMetricName(TreeMetric m) {
  switch (m) {
    case TreeMetric::Peak: return "peak";
    case TreeMetric::Leaked: return "leaked";
    case TreeMetric::Allocated: return "allocated";
    case TreeMetric::Count: return "count";
    case TreeMetric::Temporary: return "temporary";
  }
  return "";
}

std::optional<TreeMetric> parseTreeMetric(const std::string& name) {
  for (TreeMetric m : {TreeMetric::Peak, TreeMetric::Leaked, TreeMetric::Allocated, TreeMetric::Count,
                       TreeMetric::Temporary})
    if (name == treeMetricName(m)) return m;
  return std::nullopt;
}

namespace {

struct SiteKey {
  int64_t stack;
  std::string kind;
  bool operator==(const SiteKey& o) const { return stack == o.stack && kind == o.kind; }
};
struct SiteKeyHash {
  size_t operator()(const SiteKey& k) const { return std::hash<int64_t>()(k.stack) * 31 + std::hash<std::string>()(k.kind); }
};

}  // namespace

// The symbol, or the module's base name when there is none.
std::string treeSymbol(const Frame& f) {
  if (f.function) return *f.function;
  if (f.module) {
    auto slash = f.module->rfind('/');
    return "?? (" + (slash == std::string::npos ? *f.module : f.module->substr(slash + 1)) + ")";
  }
  return "??";
}

std::vector<SiteCost> siteCosts(const Recording& rec, std::optional<int64_t> from, std::optional<int64_t> to) {
  std::vector<Site> rows;
  {
    detail::Stage reading(0, from || to ? 0.2 : 1);
    rows = detail::siteRows(rec, {});
  }
  std::vector<SiteCost> out;
  out.reserve(rows.size());
  const bool ranged = from || to;
  std::unordered_map<SiteKey, size_t, SiteKeyHash> slot;
  for (const Site& s : rows) {
    SiteCost c;
    c.stack_id = s.stack_id;
    c.image_id = s.image_id;
    c.kind = s.kind;
    c.space = s.space;
    c.min_size = s.min_size;
    c.max_size = s.max_size;
    c.cost.peak = s.peak_bytes;
    // With frees per bucket (version 7) a range's temporaries are those freed in it.
    if (!ranged || !detail::hasBucketFrees(rec.info().schema_version)) c.cost.temporary = s.temp_count;
    if (!ranged) {
      c.cost.leaked = s.leak_bytes;
      c.cost.allocated = s.alloc_bytes;
      c.cost.count = s.alloc_count;
    }
    if (ranged) slot[{s.stack_id, s.kind}] = out.size();
    out.push_back(std::move(c));
  }
  if (ranged) {
    const int64_t a = from.value_or(INT64_MIN), b = to.value_or(INT64_MAX);
    auto add = [&](int64_t t, int64_t stack, const std::string& kind, int64_t count, int64_t bytes, int64_t temps) {
      if (t < a || t > b) return;
      auto it = slot.find({stack, kind});
      if (it == slot.end()) return;
      out[it->second].cost.count += count;
      out[it->second].cost.allocated += bytes;
      out[it->second].cost.temporary += temps;
    };
    detail::Stage activity(0.2, 0.9);
    const int version = rec.info().schema_version;
    if (version >= 3) {
      detail::Statement q(rec, "SELECT buckets FROM site_buckets");
      while (q.step()) {
        detail::forEachSiteBucket(q.blob(0), q.bytes(0), [&](int64_t t, const void* entries, int bytes) {
          if (t < a || t > b) return;
          detail::forEachSiteActivity(entries, bytes, version, [&](const detail::SiteActivity& e) {
            add(t, e.stack_id, detail::siteKindName(e.kind), e.allocs, e.alloc_bytes, e.temps);
          });
        });
      }
    } else if (version >= 2) {
      detail::Statement q(rec, "SELECT t_ns, sites FROM site_timeline WHERE t_ns >= ? AND t_ns <= ?");
      q.bind(1, a);
      q.bind(2, b);
      while (q.step()) {
        int64_t t = q.i64(0);
        detail::forEachSiteActivity(q.blob(1), q.bytes(1), version, [&](const detail::SiteActivity& e) {
          add(t, e.stack_id, detail::siteKindName(e.kind), e.allocs, e.alloc_bytes, 0);
        });
      }
    } else {
      detail::Statement q(rec, "SELECT t_alloc, stack_id, kind, size FROM allocations WHERE t_alloc >= ? AND t_alloc <= ?");
      q.bind(1, a);
      q.bind(2, b);
      while (q.step()) add(q.i64(0), q.i64(1), q.text(2), 1, q.i64(3), 0);
    }
    // Every leaked block has its own row (never folded): the leaks of a range are exact.
    detail::Stage leaking(0.9, 1);
    detail::Statement q(rec,
                        "SELECT stack_id, kind, sum(size) FROM allocations WHERE t_free IS NULL AND t_alloc >= ? "
                        "AND t_alloc <= ? GROUP BY stack_id, kind");
    q.bind(1, a);
    q.bind(2, b);
    while (q.step()) {
      auto it = slot.find({q.i64(0), q.text(1)});
      if (it != slot.end()) out[it->second].cost.leaked += q.i64(2);
    }
  }
  std::erase_if(out, [](const SiteCost& c) {
    return !c.cost.peak && !c.cost.leaked && !c.cost.allocated && !c.cost.count && !c.cost.temporary;
  });
  return out;
}

std::vector<SiteCost> siteCosts(const Recording& rec, std::optional<int64_t> from, std::optional<int64_t> to,
                                QueryControl& control) {
  return detail::controlled(control, [&] { return siteCosts(rec, from, to); });
}

SiteFrames siteFrames(const Recording& rec, const std::vector<SiteCost>& costs) {
  SiteFrames out(costs.size());
  for (size_t i = 0; i < costs.size(); ++i) {
    detail::throwIfCancelled();
    rec.stackFrames(costs[i].stack_id, &out[i]);
  }
  return out;
}

CallTree buildCallTree(const Recording& rec, const std::vector<SiteCost>& costs, TreeDirection direction,
                       const std::optional<std::string>& space) {
  return buildCallTree(costs, siteFrames(rec, costs), direction, space);
}

std::vector<SymbolCost> callerCallee(const Recording& rec, const std::vector<SiteCost>& costs,
                                     const std::optional<std::string>& space) {
  return callerCallee(costs, siteFrames(rec, costs), space);
}

namespace {
std::vector<TreeCost> amountsOf(const std::vector<SiteCost>& costs) {
  std::vector<TreeCost> out;
  out.reserve(costs.size());
  for (const SiteCost& c : costs) out.push_back(c.cost);
  return out;
}
}  // namespace

// From scratch: an index of exactly these sites (analyzer/tree_index.h), asked once.
CallTree buildCallTree(const std::vector<SiteCost>& costs, const SiteFrames& siteFrames, TreeDirection direction,
                       const std::optional<std::string>& space) {
  return TreeIndex::build(costs, siteFrames)->tree(amountsOf(costs), direction, space);
}

std::vector<SymbolCost> callerCallee(const std::vector<SiteCost>& costs, const SiteFrames& siteFrames,
                                     const std::optional<std::string>& space) {
  return TreeIndex::build(costs, siteFrames)->callerCallee(amountsOf(costs), space);
}

std::vector<std::string> collapsedLines(const CallTree& tree, TreeMetric metric, bool (*keep)(int64_t self)) {
  std::vector<std::string> out;
  if (tree.nodes.empty()) return out;  // a tree never made (or let go) has no root either
  std::vector<std::pair<int32_t, std::string>> todo{{0, ""}};
  while (!todo.empty()) {
    auto [node, path] = std::move(todo.back());
    todo.pop_back();
    int64_t self = costOf(tree.self(node), metric);
    if (node != 0 && keep(self)) out.push_back(path + " " + std::to_string(self));
    for (int32_t child : tree.children(node))
      todo.emplace_back(child, path.empty() ? tree.symbol(child) : path + ";" + tree.symbol(child));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> collapsedStacks(const CallTree& tree, TreeMetric metric) {
  return collapsedLines(tree, metric, [](int64_t self) { return self > 0; });
}

}  // namespace memledger::analyzer
