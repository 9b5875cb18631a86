// The index's sites (tree_index.h): compact, kinds and spaces by index, read straight from the
// packed site totals when the file has them.
#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>

#include "analyzer/sql.h"
#include "analyzer/tree_index.h"
#include "schemas/kinds.h"

namespace memledger::analyzer {

namespace {
uint8_t codeOf(const std::string& name) {
  const kinds::KindInfo* k = kinds::byName(name.c_str());
  return k ? uint8_t(std::min<uint64_t>(k->code, 255)) : 255;
}
}  // namespace

void TreeIndex::setSites(std::vector<SiteCost> sites) {
  for (const SiteCost& c : sites) {
    if (std::find(spaces_.begin(), spaces_.end(), c.space) == spaces_.end()) spaces_.push_back(c.space);
    if (std::find(kinds_.begin(), kinds_.end(), c.kind) == kinds_.end()) kinds_.push_back(c.kind);
  }
  std::sort(spaces_.begin(), spaces_.end());
  if (kinds_.size() > UINT16_MAX) throw std::invalid_argument("TreeIndex: too many kinds");
  if (sites.size() > size_t(INT32_MAX)) throw std::invalid_argument("TreeIndex: too many sites");
  sites_.reserve(sites.size());
  site_space_.reserve(sites.size());
  own_.reserve(sites.size());
  for (const SiteCost& c : sites) {
    detail::ActivitySite& r = own_.emplace_back();
    r.stack_id = c.stack_id;
    r.image_id = c.image_id;
    r.peak_bytes = c.cost.peak;
    r.leak_bytes = c.cost.leaked;
    r.alloc_bytes = c.cost.allocated;
    r.alloc_count = c.cost.count;
    r.temp_count = c.cost.temporary;
    r.min_size = c.min_size;
    r.max_size = c.max_size;
    const uint16_t kind = uint16_t(std::find(kinds_.begin(), kinds_.end(), c.kind) - kinds_.begin());
    sites_.push_back({int32_t(sites_.size()), kind, codeOf(c.kind)});
    site_space_.push_back(int32_t(std::lower_bound(spaces_.begin(), spaces_.end(), c.space) - spaces_.begin()));
  }
  table_ = &own_;
}

SiteCost TreeIndex::site(size_t i) const {
  const detail::ActivitySite& r = row(i);
  SiteCost c;
  c.stack_id = r.stack_id;
  c.image_id = r.image_id;
  c.kind = kinds_[sites_.at(i).kind];
  c.space = spaces_[size_t(site_space_[i])];
  c.cost = cost(i);
  c.min_size = r.min_size;
  c.max_size = r.max_size;
  return c;
}

std::vector<SiteCost> TreeIndex::sites() const {
  std::vector<SiteCost> out;
  out.reserve(sites_.size());
  for (size_t i = 0; i < sites_.size(); ++i) out.push_back(site(i));
  return out;
}

bool TreeIndex::readSites(const Recording& rec) {
  // What siteCosts(rec) lists for the whole run, in its order (siteRows(): alloc_bytes descending,
  // stack id, kind name, the file's order; a Python image's leaks by its finalization rule; sites
  // with nothing in any amount left out): the recording's table of sites in that order, which
  // the per-site activity uses too (analyzer/site_activity.h), each site of the index a row of it.
  // That table and a copy of its own here were 37.5 + 53.5 MB for torch_mlp's 700k sites.
  if (rec.info().schema_version < 4) return false;
  const detail::ActivitySites& act = rec.activitySites();
  const std::vector<detail::ActivitySite>& rows = act.all();
  if (rows.size() > size_t(INT32_MAX)) return false;
  table_ = &rows;
  std::array<int, 256> kindOf;  // kind code (255: beyond) -> index into kinds_
  kindOf.fill(-1);
  auto listed = [](const detail::ActivitySite& r) {  // a site with anything in any amount
    return r.peak_bytes || r.leak_bytes || r.alloc_bytes || r.alloc_count || r.temp_count;
  };
  std::vector<char> used(act.spaces().size(), 0);
  size_t n = 0;
  for (const detail::ActivitySite& r : rows)
    if (listed(r)) {
      ++n;
      used[size_t(r.space_id)] = 1;
    }
  std::vector<int32_t> spaceOf(act.spaces().size(), -1);  // the table's space -> spaces_
  for (size_t k = 0; k < act.spaces().size(); ++k)
    if (used[k]) {
      spaceOf[k] = int32_t(spaces_.size());
      spaces_.push_back(act.spaces()[k]);  // sorted, as the table's
    }
  sites_.reserve(n);
  site_space_.reserve(n);
  for (size_t i = 0; i < rows.size(); ++i) {
    const detail::ActivitySite& r = rows[i];
    if (!listed(r)) continue;
    int& kind = kindOf[r.kind];
    if (kind < 0) {
      kind = int(kinds_.size());
      kinds_.emplace_back(detail::siteKindName(r.kind));
    }
    sites_.push_back({int32_t(i), uint16_t(kind), codeOf(kinds_[size_t(kind)])});
    site_space_.push_back(spaceOf[size_t(r.space_id)]);
  }
  return true;
}

}  // namespace memledger::analyzer
