#include "analyzer/leaked_blocks.h"

#include <algorithm>
#include <map>

#include "analyzer/sql.h"

namespace memledger::analyzer::detail {

namespace {
bool hasLeakKinds(const Recording& rec) {
  Statement q(rec, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'leak_kinds'");
  return q.step() && q.i64(0) > 0;
}
}  // namespace

LeakedBlocks::LeakedBlocks(const Recording& rec) {
  {
    Statement n(rec, "SELECT count(*) FROM allocations WHERE t_free IS NULL");
    if (!n.step() || static_cast<uint64_t>(n.i64(0)) > kMaxBlocks) return;
    blocks_.reserve(static_cast<size_t>(n.i64(0)));
  }
  const std::string sql = std::string("SELECT a.t_alloc, a.stack_id, a.image_id, a.size, a.kind, ") +
                          (hasLeakKinds(rec) ? "k.kind FROM allocations a LEFT JOIN leak_kinds k ON k.allocation_id = a.id"
                                             : "NULL FROM allocations a") +
                          " WHERE a.t_free IS NULL";
  Statement q(rec, sql.c_str());
  std::map<std::string, uint16_t> names;  // kind name -> its index in reading order
  std::vector<std::string> byIndex;
  while (q.step()) {
    Block b{q.i64(0), q.i64(1), q.i64(2), q.i64(3), 0, -1};
    auto [it, added] = names.try_emplace(q.text(4), static_cast<uint16_t>(byIndex.size()));
    if (added) byIndex.push_back(it->first);
    b.kind = it->second;
    if (!q.isNull(5) && q.i64(5) >= 0 && q.i64(5) <= kReachable) b.leak_kind = static_cast<int8_t>(q.i64(5));
    blocks_.push_back(b);
  }
  // Kinds renumbered in name order, so that index order is name order.
  std::vector<uint16_t> renumber(byIndex.size());
  uint16_t next = 0;
  for (auto& [name, index] : names) {
    renumber[index] = next++;
    kinds_.push_back(name);
  }
  for (Block& b : blocks_) b.kind = renumber[b.kind];
  std::stable_sort(blocks_.begin(), blocks_.end(), [](const Block& a, const Block& b) { return a.t < b.t; });
  available_ = true;
}

std::span<const LeakedBlocks::Block> LeakedBlocks::range(std::optional<int64_t> from, std::optional<int64_t> to) const {
  auto first = from ? std::lower_bound(blocks_.begin(), blocks_.end(), *from, [](const Block& b, int64_t t) { return b.t < t; })
                    : blocks_.begin();
  auto last = to ? std::upper_bound(first, blocks_.end(), *to, [](int64_t t, const Block& b) { return t < b.t; })
                 : blocks_.end();
  return {first, last};
}

std::vector<LeakedSite> leakedSites(std::span<const LeakedBlocks::Block> blocks,
                                    const std::function<bool(const LeakedBlocks::Block&)>& kept) {
  std::vector<LeakedSite> parts;
  for (const LeakedBlocks::Block& b : blocks)
    if (kept(b)) parts.push_back({b.stack, b.kind, b.image, 1, b.size});
  auto key = [](const LeakedSite& s) { return std::tuple(s.stack, s.kind, s.image); };
  std::sort(parts.begin(), parts.end(), [&](const LeakedSite& a, const LeakedSite& b) { return key(a) < key(b); });
  std::vector<LeakedSite> out;
  for (const LeakedSite& p : parts) {
    if (!out.empty() && key(out.back()) == key(p)) {
      ++out.back().count;
      out.back().bytes += p.bytes;
    } else {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace memledger::analyzer::detail

namespace memledger::analyzer {

void prepareRanges(const Recording& rec) {
  (void)rec.activitySites();
  (void)rec.leakedBlocks();
  detail::preparePythonRanges(rec);
}

}  // namespace memledger::analyzer
