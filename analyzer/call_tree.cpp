#include "analyzer/call_tree.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "analyzer/control.h"
#include "analyzer/sql.h"

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

std::string symbolOf(const Frame& f) { return treeSymbol(f); }

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

namespace {
// Interned symbols: a frame's symbol id is looked up by the frame's address (frames are cached
// per ip for the recording's life), so the passes below touch no strings per frame.
class SymbolTable {
 public:
  int32_t of(const Frame* f) {
    auto [it, isNew] = byFrame_.try_emplace(f, 0);
    if (isNew) {
      std::string name = symbolOf(*f);
      auto [sym, added] = ids_.try_emplace(name, int32_t(names_.size()));
      if (added) {
        names_.push_back(std::move(name));
        first_.push_back(f);
      }
      it->second = sym->second;
    }
    return it->second;
  }
  const std::string& name(int32_t id) const { return names_[size_t(id)]; }
  const Frame* firstFrame(int32_t id) const { return first_[size_t(id)]; }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_map<const Frame*, int32_t> byFrame_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> names_;
  std::vector<const Frame*> first_;
};
}  // namespace

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

CallTree buildCallTree(const std::vector<SiteCost>& costs, const SiteFrames& siteFrames, TreeDirection direction,
                       const std::optional<std::string>& space) {
  CallTree tree;
  tree.direction = direction;
  tree.space = space;
  tree.nodes.push_back(CallNode{"all sites", nullptr, {}, {}, -1, {}});
  SymbolTable symbols;
  std::unordered_map<uint64_t, int32_t> childOf;  // (parent << 32 | symbol) -> node
  for (size_t i = 0; i < costs.size(); ++i) {
    const SiteCost& c = costs[i];
    if ((i & 1023) == 0) detail::throwIfCancelled();
    if (space && c.space != *space) continue;
    const std::vector<const Frame*>& frames = siteFrames[i];
    int32_t node = 0;
    tree.nodes[0].total += c.cost;
    const size_t n = frames.size();
    for (size_t k = 0; k < n; ++k) {
      const Frame* f = direction == TreeDirection::TopDown ? frames[n - 1 - k] : frames[k];
      int32_t symbol = symbols.of(f);
      uint64_t key = (uint64_t(uint32_t(node)) << 32) | uint32_t(symbol);
      auto [it, isNew] = childOf.try_emplace(key, int32_t(tree.nodes.size()));
      if (isNew) {
        tree.nodes.push_back(CallNode{symbols.name(symbol), f, {}, {}, node, {}});
        tree.nodes[size_t(node)].children.push_back(it->second);
      }
      node = it->second;
      tree.nodes[size_t(node)].total += c.cost;
    }
    tree.nodes[size_t(node)].self += c.cost;
  }
  for (CallNode& n : tree.nodes)
    std::sort(n.children.begin(), n.children.end(), [&](int32_t a, int32_t b) {
      const CallNode &x = tree.nodes[size_t(a)], &y = tree.nodes[size_t(b)];
      return x.total.allocated != y.total.allocated ? x.total.allocated > y.total.allocated : x.symbol < y.symbol;
    });
  return tree;
}

std::vector<SymbolCost> callerCallee(const std::vector<SiteCost>& costs, const SiteFrames& siteFrames,
                                     const std::optional<std::string>& space) {
  SymbolTable symbols;
  struct Row {
    TreeCost self, inclusive;
    std::unordered_map<int32_t, TreeCost> callers, callees;
    uint64_t seenIn = 0;  // the last stack (1-based) that counted it: once per stack
  };
  std::vector<Row> rows;
  std::vector<int32_t> ids;
  std::unordered_set<uint64_t> seenEdge;
  uint64_t stackNo = 0;
  for (size_t si = 0; si < costs.size(); ++si) {
    const SiteCost& c = costs[si];
    if ((si & 1023) == 0) detail::throwIfCancelled();
    if (space && c.space != *space) continue;
    const std::vector<const Frame*>& frames = siteFrames[si];  // innermost first
    ++stackNo;
    ids.clear();
    for (const Frame* f : frames) ids.push_back(symbols.of(f));
    if (rows.size() < symbols.size()) rows.resize(symbols.size());
    seenEdge.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      Row& r = rows[size_t(ids[i])];
      if (i == 0) r.self += c.cost;
      if (r.seenIn != stackNo) {
        r.seenIn = stackNo;
        r.inclusive += c.cost;
      }
      // frames[i + 1] called frames[i]
      if (i + 1 < ids.size() &&
          seenEdge.insert((uint64_t(uint32_t(ids[i + 1])) << 32) | uint32_t(ids[i])).second) {
        r.callers[ids[i + 1]] += c.cost;
        rows[size_t(ids[i + 1])].callees[ids[i]] += c.cost;
      }
    }
  }
  std::vector<SymbolCost> out;
  out.reserve(rows.size());
  for (size_t id = 0; id < rows.size(); ++id) {
    SymbolCost s;
    s.symbol = symbols.name(int32_t(id));
    s.frame = symbols.firstFrame(int32_t(id));
    s.self = rows[id].self;
    s.inclusive = rows[id].inclusive;
    for (const auto& [k, v] : rows[id].callers) s.callers[symbols.name(k)] += v;
    for (const auto& [k, v] : rows[id].callees) s.callees[symbols.name(k)] += v;
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SymbolCost& a, const SymbolCost& b) {
    return a.inclusive.allocated != b.inclusive.allocated ? a.inclusive.allocated > b.inclusive.allocated
                                                          : a.symbol < b.symbol;
  });
  return out;
}

std::vector<std::string> collapsedStacks(const CallTree& tree, TreeMetric metric) {
  std::vector<std::string> out;
  std::vector<std::pair<int32_t, std::string>> todo{{0, ""}};
  while (!todo.empty()) {
    auto [node, path] = std::move(todo.back());
    todo.pop_back();
    const CallNode& n = tree.nodes[size_t(node)];
    int64_t self = costOf(n.self, metric);
    if (node != 0 && self > 0) out.push_back(path + " " + std::to_string(self));
    for (int32_t child : n.children)
      todo.emplace_back(child, path.empty() ? tree.nodes[size_t(child)].symbol : path + ";" + tree.nodes[size_t(child)].symbol);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace memledger::analyzer
