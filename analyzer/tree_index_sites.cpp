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
  sites_.reserve(sites.size());
  site_space_.reserve(sites.size());
  for (const SiteCost& c : sites) {
    Site s{c.stack_id, c.image_id, c.cost, c.min_size, c.max_size, 0, 0, codeOf(c.kind)};
    s.space = int32_t(std::lower_bound(spaces_.begin(), spaces_.end(), c.space) - spaces_.begin());
    s.kind = uint16_t(std::find(kinds_.begin(), kinds_.end(), c.kind) - kinds_.begin());
    sites_.push_back(s);
    site_space_.push_back(s.space);
  }
}

SiteCost TreeIndex::site(size_t i) const {
  const Site& s = sites_.at(i);
  SiteCost c;
  c.stack_id = s.stack_id;
  c.image_id = s.image_id;
  c.kind = kinds_[s.kind];
  c.space = spaces_[size_t(s.space)];
  c.cost = s.cost;
  c.min_size = s.min_size;
  c.max_size = s.max_size;
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
  // with nothing in any amount left out), without a Site (296 bytes) and a SiteCost per site on
  // the way: torch_mlp's 700k sites made 300 MB of them at the GUI's open.
  if (rec.info().schema_version < 4) return false;
  std::map<std::pair<int64_t, int64_t>, std::string> names;  // (image, account) -> space name
  for (const SpacePeak& sp : spacePeaks(rec)) names[{sp.image_id, sp.account}] = sp.name;
  const detail::PythonSnapshot& py = rec.pythonSnapshot();
  std::vector<std::string> spaces;  // in order of appearance
  std::array<int, 256> kindOf;      // kind code -> index into kinds_
  kindOf.fill(-1);
  std::vector<Site> read;
  detail::forEachSite(rec, [&](const detail::SiteEntry& e) {
    Site s{e.stack_id, e.image_id, {}, e.min_size, e.max_size, 0, 0, 255};
    s.cost = {e.peak_bytes, e.leak_bytes, e.alloc_bytes, e.alloc_count, e.temp_count};
    if (std::binary_search(py.images.begin(), py.images.end(), e.image_id)) {
      const detail::PythonSnapshot::Site* it = py.find(detail::PythonSnapshot::Key{e.image_id, e.stack_id, e.kind});
      s.cost.leaked = it ? it->bytes : 0;
    }
    int& kind = kindOf[std::min<uint64_t>(e.kind, 255)];
    if (kind < 0) {
      kind = int(kinds_.size());
      kinds_.emplace_back(detail::siteKindName(e.kind));
    }
    s.kind = uint16_t(kind);
    s.code = codeOf(kinds_[size_t(kind)]);
    auto name = names.find({e.image_id, int64_t(e.account)});
    const std::string& space = name != names.end() ? name->second : (e.account == 1 ? "mmap" : "heap");
    auto at = std::find(spaces.begin(), spaces.end(), space);
    if (at == spaces.end()) at = spaces.insert(at, space);
    s.space = int32_t(at - spaces.begin());
    const TreeCost& c = s.cost;
    if (c.peak || c.leaked || c.allocated || c.count || c.temporary) read.push_back(s);
  });
  std::vector<uint32_t> order(read.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = uint32_t(i);
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const Site &a = read[x], &b = read[y];
    if (a.cost.allocated != b.cost.allocated) return a.cost.allocated > b.cost.allocated;
    if (a.stack_id != b.stack_id) return a.stack_id < b.stack_id;
    if (a.kind != b.kind) return kinds_[a.kind] < kinds_[b.kind];
    return x < y;
  });
  spaces_ = spaces;
  std::sort(spaces_.begin(), spaces_.end());
  std::vector<int32_t> sorted(spaces.size());
  for (size_t k = 0; k < spaces.size(); ++k)
    sorted[k] = int32_t(std::lower_bound(spaces_.begin(), spaces_.end(), spaces[k]) - spaces_.begin());
  sites_.reserve(read.size());
  site_space_.reserve(read.size());
  for (uint32_t i : order) {
    sites_.push_back(read[i]);
    sites_.back().space = sorted[size_t(read[i].space)];
    site_space_.push_back(sites_.back().space);
  }
  return true;
}

}  // namespace memledger::analyzer
