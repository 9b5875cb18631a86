#include "analyzer/tree_index.h"

#include <algorithm>
#include <future>
#include <stdexcept>
#include <tuple>

#include "analyzer/control.h"
#include "analyzer/site_activity.h"
#include "analyzer/sql.h"
#include "schemas/kinds.h"

namespace memledger::analyzer {

namespace {

const std::string kRootName = "all sites";
}  // namespace

const std::string& CallTree::symbol(const CallNode& node) const {
  return node.symbol < 0 || !names ? kRootName : (*names)[size_t(node.symbol)];
}

TreeCost CallTree::self(int32_t node) const {
  TreeCost c = nodes[size_t(node)].total;
  for (int32_t k : children(node)) {
    const TreeCost& t = nodes[size_t(k)].total;
    c.peak -= t.peak;
    c.leaked -= t.leaked;
    c.allocated -= t.allocated;
    c.count -= t.count;
    c.temporary -= t.temporary;
  }
  return c;
}

namespace {
constexpr uint64_t kUnknownKind = 255;

uint64_t kindCode(const std::string& name) {
  for (const kinds::KindInfo& k : kinds::kKinds)
    if (name == k.name) return k.code;
  return kUnknownKind;
}
uint64_t slotKey(int64_t stack, uint64_t kind) { return (uint64_t(stack) << 8) | std::min(kind, kUnknownKind); }

bool isZero(const TreeCost& c) { return !c.peak && !c.leaked && !c.allocated && !c.count && !c.temporary; }

}  // namespace

std::vector<std::string> TreeIndex::spaces() const { return spaces_; }

std::vector<std::string> TreeIndex::spaces(const std::vector<TreeCost>& costs) const {
  check(costs);
  std::vector<char> used(spaces_.size(), 0);
  for (size_t i = 0; i < sites_.size(); ++i)
    if (!isZero(costs[i])) used[size_t(site_space_[i])] = 1;
  std::vector<std::string> out;
  for (size_t k = 0; k < spaces_.size(); ++k)
    if (used[k]) out.push_back(spaces_[k]);
  return out;
}

std::vector<TreeCost> TreeIndex::costs(const Recording& rec, std::optional<int64_t> from,
                                       std::optional<int64_t> to) const {
  std::vector<TreeCost> out(sites_.size());
  if (!from && !to) {
    for (size_t i = 0; i < sites_.size(); ++i) out[i] = cost(i);
    return out;
  }
  const int version = rec.info().schema_version;
  // With frees per bucket (version 7) a range's temporaries are those freed in it.
  const bool rangedTemporaries = detail::hasBucketFrees(version);
  for (size_t i = 0; i < sites_.size(); ++i) {
    out[i].peak = row(i).peak_bytes;
    if (!rangedTemporaries) out[i].temporary = row(i).temp_count;
  }
  const int64_t a = from.value_or(INT64_MIN), b = to.value_or(INT64_MAX);
  auto add = [&](int64_t stack, uint64_t kind, int64_t count, int64_t bytes, int64_t temps) {
    const int32_t k = slotOf(stack, kind);
    if (k < 0) return;
    out[size_t(k)].count += count;
    out[size_t(k)].allocated += bytes;
    out[size_t(k)].temporary += temps;
  };
  {
    detail::Stage activity(0, 0.9);
    if (version >= 2) {
      // The activity kept in memory with the recording's sites (analyzer/site_activity.h).
      const detail::ActivitySites& act = rec.activitySites();
      mapActivity(rec);
      act.replay(rec, [&](int64_t, int64_t t, int32_t i, const detail::SiteActivity& e) {
        if (t < a || i < 0) return;
        const int32_t k = activity_slot_[size_t(i)];
        if (k < 0) return;
        out[size_t(k)].count += e.allocs;
        out[size_t(k)].allocated += e.alloc_bytes;
        if (rangedTemporaries) out[size_t(k)].temporary += e.temps;
      }, b);
    } else {
      detail::Statement q(rec, "SELECT stack_id, kind, count(*), sum(size) FROM allocations WHERE t_alloc >= ? AND "
                               "t_alloc <= ? GROUP BY stack_id, kind");
      q.bind(1, a);
      q.bind(2, b);
      while (q.step()) add(q.i64(0), kindCode(q.text(1)), q.i64(2), q.i64(3), 0);
    }
  }
  // Every leaked block has its own row (never folded): the leaks of a range are exact. Read once
  // (torch_mlp: 46k rows), in allocation-time order, then summed per range.
  detail::Stage leaking(0.9, 1);
  readLeaked(rec);
  auto first = std::lower_bound(leaked_.begin(), leaked_.end(), a, [](const Leaked& x, int64_t t) { return x.t < t; });
  for (auto it = first; it != leaked_.end() && it->t <= b; ++it) out[size_t(it->site)].leaked += it->size;
  return out;
}

std::vector<TreeCost> TreeIndex::costs(const Recording& rec, std::optional<int64_t> from, std::optional<int64_t> to,
                                       QueryControl& control) const {
  return detail::controlled(control, [&] { return costs(rec, from, to); });
}

std::vector<SiteCost> TreeIndex::siteCosts(const std::vector<TreeCost>& costs) const {
  check(costs);
  std::vector<SiteCost> out;
  for (size_t i = 0; i < sites_.size(); ++i) {
    if (isZero(costs[i])) continue;
    out.push_back(site(i));
    out.back().cost = costs[i];
  }
  return out;
}

std::optional<std::vector<TreeCost>> TreeIndex::costsOf(const std::vector<SiteCost>& sites) const {
  std::vector<TreeCost> out(sites_.size());
  auto same = [&](size_t i, const SiteCost& b) {
    return row(i).stack_id == b.stack_id && row(i).image_id == b.image_id && kinds_[sites_[i].kind] == b.kind;
  };
  // In the index's order (siteCosts() keeps it), one pass; a site out of that order (a live set
  // appends those it adds) is looked up among the sites sorted by key (made once; of sites with
  // the same key, the last).
  size_t at = 0;
  bool inOrder = true;
  for (const SiteCost& c : sites) {
    if (inOrder) {
      const size_t from = at;
      while (at < sites_.size() && !same(at, c)) ++at;
      if (at < sites_.size()) {
        out[at++] += c.cost;
        continue;
      }
      at = from;
      inOrder = false;  // from the first site out of order on, every one is looked up
      sortByKey();
    }
    const int32_t k = byKey(c.image_id, c.stack_id, kindCode(c.kind));
    if (k < 0 || kinds_[sites_[size_t(k)].kind] != c.kind) return std::nullopt;
    out[size_t(k)] += c.cost;
  }
  return out;
}

void TreeIndex::sortBySlot() {
  by_slot_.resize(sites_.size());
  for (size_t i = 0; i < sites_.size(); ++i) by_slot_[i] = int32_t(i);
  std::stable_sort(by_slot_.begin(), by_slot_.end(), [&](int32_t a, int32_t b) {
    return slotKey(row(size_t(a)).stack_id, sites_[size_t(a)].code) <
           slotKey(row(size_t(b)).stack_id, sites_[size_t(b)].code);
  });
}

int32_t TreeIndex::slotOf(int64_t stack, uint64_t kind) const {
  const uint64_t key = slotKey(stack, kind);
  auto it = std::upper_bound(by_slot_.begin(), by_slot_.end(), key, [&](uint64_t k, int32_t s) {
    return k < slotKey(row(size_t(s)).stack_id, sites_[size_t(s)].code);
  });
  if (it == by_slot_.begin()) return -1;
  const size_t s = size_t(*std::prev(it));
  return slotKey(row(s).stack_id, sites_[s].code) == key ? *std::prev(it) : -1;
}

int32_t TreeIndex::byKey(int64_t image, int64_t stack, uint64_t kind) const {
  sortByKey();
  const uint64_t code = std::min(kind, kUnknownKind);
  auto it = std::upper_bound(by_key_.begin(), by_key_.end(), std::tie(image, stack, code),
                             [&](const std::tuple<const int64_t&, const int64_t&, const uint64_t&>& k, int32_t s) {
                               const detail::ActivitySite& x = row(size_t(s));
                               return k < std::make_tuple(x.image_id, x.stack_id, uint64_t(sites_[size_t(s)].code));
                             });
  if (it == by_key_.begin()) return -1;
  const size_t s = size_t(*std::prev(it));
  const detail::ActivitySite& x = row(s);
  return x.image_id == image && x.stack_id == stack && sites_[s].code == code ? *std::prev(it) : -1;
}

void TreeIndex::sortByKey() const {
  std::call_once(by_key_once_, [this] {
    by_key_.resize(sites_.size());
    for (size_t i = 0; i < sites_.size(); ++i) by_key_[i] = int32_t(i);
    std::stable_sort(by_key_.begin(), by_key_.end(), [&](int32_t a, int32_t b) {
      const detail::ActivitySite &x = row(size_t(a)), &y = row(size_t(b));
      return std::tie(x.image_id, x.stack_id, sites_[size_t(a)].code) < std::tie(y.image_id, y.stack_id, sites_[size_t(b)].code);
    });
  });
}

void TreeIndex::readLeaked(const Recording& rec) const {
  std::call_once(leaked_once_, [&] {
    detail::Statement q(rec, "SELECT t_alloc, stack_id, kind, size FROM allocations WHERE t_free IS NULL AND "
                             "t_alloc IS NOT NULL");
    while (q.step()) {
      const int32_t k = slotOf(q.i64(1), kindCode(q.text(2)));
      if (k >= 0) leaked_.push_back({q.i64(0), k, q.i64(3)});
    }
    std::sort(leaked_.begin(), leaked_.end(), [](const Leaked& x, const Leaked& y) { return x.t < y.t; });
  });
}

void TreeIndex::mapActivity(const Recording& rec) const {
  std::call_once(activity_once_, [&] {
    const detail::ActivitySites& act = rec.activitySites();
    sortByKey();
    activity_slot_.assign(act.all().size(), -1);
    activity_site_.assign(act.all().size(), -1);
    for (size_t i = 0; i < act.all().size(); ++i) {
      const detail::ActivitySite& a = act.all()[i];
      if (!a.active) continue;  // no activity names it
      activity_slot_[i] = slotOf(a.stack_id, a.kind);
      activity_site_[i] = byKey(a.image_id, a.stack_id, a.kind);  // the last site of the key, as costsOf() finds it
    }
  });
}

bool TreeIndex::applyLive(const Recording& rec, std::vector<TreeCost>& costs, const LiveSet& live) const {
  check(costs);
  if (!live.available) return true;
  const detail::ActivitySites& act = rec.activitySites();
  if (live.by_site.size() != act.all().size()) throw std::invalid_argument("TreeIndex: a live set without by_site");
  mapActivity(rec);
  std::vector<char> held(act.spaces().size());  // the activity's spaces the set covers
  for (size_t k = 0; k < act.spaces().size(); ++k) held[k] = live.space(act.spaces()[k]) != nullptr;
  for (size_t i = 0; i < act.all().size(); ++i)
    if (live.by_site[i] && activity_site_[i] < 0 && held[size_t(act.all()[i].space_id)]) return false;
  std::vector<char> covered(spaces_.size());
  for (size_t k = 0; k < spaces_.size(); ++k) covered[k] = live.space(spaces_[k]) != nullptr;
  for (size_t i = 0; i < sites_.size(); ++i)
    if (covered[size_t(site_space_[i])]) costs[i].peak = 0;
  for (size_t i = 0; i < act.all().size(); ++i)
    if (live.by_site[i] && activity_site_[i] >= 0 && held[size_t(act.all()[i].space_id)])
      costs[size_t(activity_site_[i])].peak = live.by_site[i];
  return true;
}

void TreeIndex::check(const std::vector<TreeCost>& costs) const {
  if (costs.size() != sites_.size()) throw std::invalid_argument("TreeIndex: costs are not one per site");
}

int32_t TreeIndex::spaceId(const std::optional<std::string>& space) const {
  if (!space) return -1;
  auto it = std::lower_bound(spaces_.begin(), spaces_.end(), *space);
  return it == spaces_.end() || *it != *space ? -2 : int32_t(it - spaces_.begin());  // -2: no site is of it
}

CallTree TreeIndex::tree(const std::vector<TreeCost>& costs, TreeDirection direction,
                         const std::optional<std::string>& space) const {
  std::vector<int32_t> id;
  return emitTree(direction == TreeDirection::TopDown ? down_ : up(), costs, direction, space, id);
}

std::vector<SymbolCost> TreeIndex::callerCallee(const std::vector<TreeCost>& costs,
                                                const std::optional<std::string>& space) const {
  std::vector<int32_t> id;
  const CallTree down = emitTree(down_, costs, TreeDirection::TopDown, space, id);
  return symbols(down, id);
}

TreeIndex::Trees TreeIndex::trees(const std::vector<TreeCost>& costs, const std::optional<std::string>& space,
                                  bool bottomUp) const {
  Trees out;
  if (!bottomUp) {
    std::vector<int32_t> id;
    out.top_down = emitTree(down_, costs, TreeDirection::TopDown, space, id);
    out.symbols = symbols(out.top_down, id);
    return out;
  }
  // The bottom-up tree (a PyTorch run: 700k nodes) on a thread of its own beside the top-down
  // tree and caller/callee (100k nodes and the symbols): a range's trees in about half the time
  // on two free cores. That thread has no control of its own: a cancel stops the top-down part,
  // then waits for it (tens of ms).
  auto upTree = std::async(std::launch::async, [&] {
    std::vector<int32_t> upId;
    return emitTree(up(), costs, TreeDirection::BottomUp, space, upId);
  });
  struct Wait {  // the thread reads `costs` and this index: it ends before they may go
    std::future<CallTree>& f;
    ~Wait() { if (f.valid()) f.wait(); }
  } wait{upTree};
  std::vector<int32_t> id;
  out.top_down = emitTree(down_, costs, TreeDirection::TopDown, space, id);
  out.symbols = symbols(out.top_down, id);
  out.bottom_up = upTree.get();
  return out;
}

CallTree TreeIndex::emitTree(const Shape& shape, const std::vector<TreeCost>& costs, TreeDirection direction,
                             const std::optional<std::string>& space, std::vector<int32_t>& id) const {
  check(costs);
  const size_t n = shape.parent.size();
  const int32_t wanted = spaceId(space);
  auto counted = [&](size_t i) { return (wanted == -1 || site_space_[i] == wanted) && !isZero(costs[i]); };
  // The nodes some counted site reaches (id 0 marks them, then they are numbered in shape order:
  // parents first), their children in one array; the costs are added straight into the nodes
  // (no self and total per shape node: a PyTorch run's bottom-up shape has 700k nodes).
  id.assign(n, -1);
  id[0] = 0;
  for (size_t i = 0; i < costs.size(); ++i)
    if (counted(i)) id[size_t(shape.site_end[i])] = 0;
  for (size_t i = n; i-- > 1;)
    if (id[i] == 0) id[size_t(shape.parent[i])] = 0;
  detail::throwIfCancelled();
  int32_t count = 0;
  for (size_t i = 0; i < n; ++i)
    if (id[i] == 0) id[i] = count++;
  std::vector<int32_t> first(size_t(count) + 1, 0);
  for (size_t i = 1; i < n; ++i)
    if (id[i] >= 0) ++first[size_t(id[size_t(shape.parent[i])]) + 1];
  for (size_t i = 0; i < size_t(count); ++i) first[i + 1] += first[i];
  CallTree out;
  out.direction = direction;
  out.space = space;
  out.names = &names_;
  out.storage = shared_from_this();
  out.child_ids.resize(size_t(count > 0 ? count - 1 : 0));
  {
    std::vector<int32_t> fill(first.begin(), first.end() - 1);
    for (size_t i = 1; i < n; ++i)
      if (id[i] >= 0) out.child_ids[size_t(fill[size_t(id[size_t(shape.parent[i])])]++)] = id[i];
  }
  out.nodes.reserve(size_t(count));
  for (size_t i = 0; i < n; ++i) {
    if (id[i] < 0) continue;
    if ((out.nodes.size() & 65535) == 0) detail::throwIfCancelled();
    CallNode node;
    node.frame = shape.frame[i];
    node.symbol = i == 0 ? -1 : shape.symbol[i];
    node.parent = i == 0 ? -1 : id[size_t(shape.parent[i])];
    node.first_child = first[size_t(id[i])];
    out.nodes.push_back(node);
  }
  for (size_t i = 0; i < costs.size(); ++i)
    if (counted(i)) out.nodes[size_t(id[size_t(shape.site_end[i])])].total += costs[i];
  for (size_t k = out.nodes.size(); k-- > 1;) out.nodes[size_t(out.nodes[k].parent)].total += out.nodes[k].total;
  for (size_t k = 0; k < size_t(count); ++k) {
    auto b = out.child_ids.begin() + first[k], e = out.child_ids.begin() + first[k + 1];
    if (e - b < 2) continue;
    std::sort(b, e, [&](int32_t x, int32_t y) {
      const CallNode &p = out.nodes[size_t(x)], &q = out.nodes[size_t(y)];
      return p.total.allocated != q.total.allocated ? p.total.allocated > q.total.allocated
                                                    : names_[size_t(p.symbol)] < names_[size_t(q.symbol)];
    });
  }
  // Each node's row under its parent, here on the worker: the GUI thread took 4-8 ms for it
  // (727,826 bottom-up nodes of a PyTorch run) when a tree view was shown.
  for (size_t k = 0; k < size_t(count); ++k)
    for (int32_t j = first[k]; j < first[k + 1]; ++j) out.nodes[size_t(out.child_ids[size_t(j)])].row = j - first[k];
  return out;
}

std::vector<SymbolCost> TreeIndex::symbols(const CallTree& down, const std::vector<int32_t>& id) const {
  struct Row {
    TreeCost self, inclusive;
    bool seen = false;
  };
  std::vector<Row> rows(names_.size());
  std::vector<TreeCost> edge(edges_.size());
  std::vector<uint8_t> edgeSeen(edges_.size(), 0);
  for (size_t i = 1; i < down_.parent.size(); ++i) {
    if (id[i] < 0) continue;
    const CallNode& node = down.nodes[size_t(id[i])];
    Row& r = rows[size_t(down_.symbol[i])];
    r.seen = true;
    r.self += down.self(id[i]);
    if (first_symbol_[i] >= 0) r.inclusive += node.total;
    if (const int32_t e = first_edge_[i]; e >= 0) {
      edge[size_t(e)] += node.total;
      edgeSeen[size_t(e)] = 1;
    }
  }
  std::vector<SymbolCost> out;
  std::vector<int32_t> at(names_.size(), -1);
  for (size_t s = 0; s < rows.size(); ++s) {
    if (!rows[s].seen) continue;
    at[s] = int32_t(out.size());
    SymbolCost c;
    c.symbol = names_[s];
    c.frame = first_frame_[s];
    c.self = rows[s].self;
    c.inclusive = rows[s].inclusive;
    out.push_back(std::move(c));
  }
  detail::throwIfCancelled();
  for (size_t e = 0; e < edges_.size(); ++e) {
    if (!edgeSeen[e]) continue;
    auto [caller, callee] = edges_[e];
    out[size_t(at[size_t(callee)])].callers[names_[size_t(caller)]] += edge[e];
    out[size_t(at[size_t(caller)])].callees[names_[size_t(callee)]] += edge[e];
  }
  std::sort(out.begin(), out.end(), [](const SymbolCost& a, const SymbolCost& b) {
    return a.inclusive.allocated != b.inclusive.allocated ? a.inclusive.allocated > b.inclusive.allocated
                                                          : a.symbol < b.symbol;
  });
  return out;
}

}  // namespace memledger::analyzer
