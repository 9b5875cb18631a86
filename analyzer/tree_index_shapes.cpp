// The tree index's shapes (tree_index.h): built from every site's frames, the bottom-up one
// of a recording's index made when first asked for.
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <unordered_map>

#include "analyzer/control.h"
#include "analyzer/sql.h"
#include "analyzer/tree_index.h"

namespace memledger::analyzer {

namespace {
uint64_t pairKey(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

// (parent, symbol) -> node and frame -> symbol: tens of millions of lookups while a big run's
// shapes are built, most of them misses in the cache; open addressing touches one line a lookup
// where std::unordered_map follows a node pointer (twice the speed of the whole build).
class FlatMap {
 public:
  // The value of `key`, inserting `value` when absent; the bool tells whether it was inserted.
  std::pair<int32_t, bool> tryEmplace(uint64_t key, int32_t value) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    size_t i = slot(key);
    while (keys_[i] != kEmpty) {
      if (keys_[i] == key) return {values_[i], false};
      i = (i + 1) & (keys_.size() - 1);
    }
    keys_[i] = key;
    values_[i] = value;
    ++size_;
    return {value, true};
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);
  size_t slot(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<uint64_t> keys = std::move(keys_);
    std::vector<int32_t> values = std::move(values_);
    const size_t capacity = keys.empty() ? 1024 : keys.size() * 2;
    shift_ = 64 - std::countr_zero(capacity);
    keys_.assign(capacity, kEmpty);
    values_.assign(capacity, 0);
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) tryEmplace(keys[i], values[i]);
  }
  std::vector<uint64_t> keys_;
  std::vector<int32_t> values_;
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace

struct TreeIndex::UpSource {
  const Recording* rec;
  FlatMap byFrame;                     // frame -> index into symbolOfFrame (Builder's)
  std::vector<int32_t> symbolOfFrame;
};

// Builds the shapes site by site from each site's frames (innermost first).
struct TreeIndex::Builder {
  TreeIndex& ix;
  FlatMap byFrame;
  std::unordered_map<std::string, int32_t> byName;
  FlatMap downChild, upChild;  // (parent, symbol) -> node
  std::vector<int32_t> ids;

  bool withUp;  // the bottom-up shape too (else up() makes it later)

  Builder(TreeIndex& index, bool up) : ix(index), withUp(up) {
    for (Shape* s : {&ix.down_, &ix.up_}) {
      if (s == &ix.up_ && !withUp) continue;
      addRoot(*s);
    }
  }
  static void addRoot(Shape& s) {
    s.parent.push_back(-1);
    s.symbol.push_back(-1);
    s.frame.push_back(nullptr);
  }
  static void shrink(Shape& s) {
    s.parent.shrink_to_fit();
    s.symbol.shrink_to_fit();
    s.frame.shrink_to_fit();
    s.site_end.shrink_to_fit();
  }

  int32_t symbolOf(const Frame* f) {
    // Frames are cached per ip for the recording's life: one name lookup per distinct frame.
    const int32_t next = int32_t(symbolOfFrame.size());
    auto [at, isNew] = byFrame.tryEmplace(uint64_t(reinterpret_cast<uintptr_t>(f)), next);
    if (!isNew) return symbolOfFrame[size_t(at)];
    std::string name = treeSymbol(*f);
    auto [sym, added] = byName.try_emplace(name, int32_t(ix.names_.size()));
    if (added) {
      ix.names_.push_back(std::move(name));
      ix.first_frame_.push_back(f);
    }
    symbolOfFrame.push_back(sym->second);
    return sym->second;
  }
  std::vector<int32_t> symbolOfFrame;  // byFrame's values index this

  static int32_t child(Shape& s, FlatMap& map, int32_t parent, int32_t symbol, const Frame* frame) {
    auto [node, isNew] = map.tryEmplace(pairKey(parent, symbol), int32_t(s.parent.size()));
    if (isNew) {
      s.parent.push_back(parent);
      s.symbol.push_back(symbol);
      s.frame.push_back(frame);
    }
    return node;
  }

  void addSite(const std::vector<const Frame*>& frames) {
    ids.clear();
    for (const Frame* f : frames) ids.push_back(symbolOf(f));
    const size_t n = frames.size();
    int32_t down = 0, up = 0;
    for (size_t k = 0; k < n; ++k) down = child(ix.down_, downChild, down, ids[n - 1 - k], frames[n - 1 - k]);
    ix.down_.site_end.push_back(down);
    if (!withUp) return;
    for (size_t k = 0; k < n; ++k) up = child(ix.up_, upChild, up, ids[k], frames[k]);
    ix.up_.site_end.push_back(up);
  }

  // The outermost occurrences of each symbol and edge on every top-down path (a depth-first walk
  // counting what is on the current path), the site slots, the spaces.
  void finish() {
    // The shapes grew by doubling: a PyTorch run's bottom-up shape (730k nodes, 16 bytes each)
    // and the sites' ends held a third more than they use.
    for (Shape* s : {&ix.down_, &ix.up_}) shrink(*s);
    ix.names_.shrink_to_fit();
    ix.first_frame_.shrink_to_fit();
    const Shape& d = ix.down_;
    const size_t n = d.parent.size();
    std::vector<int32_t> first(n + 1, 0), kids(n);
    for (size_t i = 1; i < n; ++i) ++first[size_t(d.parent[i]) + 1];
    for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
    std::vector<int32_t> fill(first.begin(), first.end() - 1);
    for (size_t i = 1; i < n; ++i) kids[size_t(fill[size_t(d.parent[i])]++)] = int32_t(i);
    std::unordered_map<uint64_t, int32_t> edgeIds;
    std::vector<int32_t> edgeOf(n, -1);
    for (size_t i = 1; i < n; ++i) {
      int32_t p = d.parent[i];
      if (p <= 0) continue;
      auto [it, isNew] = edgeIds.try_emplace(pairKey(d.symbol[size_t(p)], d.symbol[i]), int32_t(ix.edges_.size()));
      if (isNew) ix.edges_.emplace_back(d.symbol[size_t(p)], d.symbol[i]);
      edgeOf[i] = it->second;
    }
    ix.edges_.shrink_to_fit();
    ix.first_symbol_.assign(n, -1);
    ix.first_edge_.assign(n, -1);
    std::vector<int32_t> onPathSym(ix.names_.size(), 0), onPathEdge(ix.edges_.size(), 0);
    std::vector<std::pair<int32_t, bool>> todo{{0, false}};  // (node, leaving)
    while (!todo.empty()) {
      auto [node, leaving] = todo.back();
      todo.pop_back();
      const size_t i = size_t(node);
      const int32_t sym = d.symbol[i], edge = edgeOf[i];
      if (leaving) {
        if (sym >= 0) --onPathSym[size_t(sym)];
        if (edge >= 0) --onPathEdge[size_t(edge)];
        continue;
      }
      if (sym >= 0 && onPathSym[size_t(sym)]++ == 0) ix.first_symbol_[i] = sym;
      if (edge >= 0 && onPathEdge[size_t(edge)]++ == 0) ix.first_edge_[i] = edge;
      todo.emplace_back(node, true);
      for (int32_t k = first[i]; k < first[i + 1]; ++k) todo.emplace_back(kids[size_t(k)], false);
    }
    ix.sortBySlot();
  }
};

std::shared_ptr<const TreeIndex> TreeIndex::build(std::vector<SiteCost> sites, const SiteFrames& frames) {
  if (frames.size() != sites.size()) throw std::invalid_argument("TreeIndex: one frame list per site");
  std::shared_ptr<TreeIndex> ix(new TreeIndex());
  ix->setSites(std::move(sites));
  Builder b(*ix, true);
  for (size_t i = 0; i < frames.size(); ++i) {
    if ((i & 1023) == 0) detail::throwIfCancelled();
    b.addSite(frames[i]);
  }
  b.finish();
  return ix;
}

std::shared_ptr<const TreeIndex> TreeIndex::build(const Recording& rec) {
  std::shared_ptr<TreeIndex> ix(new TreeIndex());
  {
    detail::Stage reading(0, 0.3);
    if (!ix->readSites(rec)) ix->setSites(analyzer::siteCosts(rec));
  }
  detail::Stage shaping(0.3, 1);
  Builder b(*ix, false);
  std::vector<const Frame*> frames;
  const size_t n = ix->sites_.size();
  for (size_t i = 0; i < n; ++i) {
    rec.stackFrames(ix->row(i).stack_id, &frames);  // checks for a cancel
    b.addSite(frames);
    if ((i & 4095) == 0) detail::progress(double(i) / double(n));
  }
  b.finish();
  ix->up_source_ = std::make_unique<UpSource>(UpSource{&rec, std::move(b.byFrame), std::move(b.symbolOfFrame)});
  // What every range needs, made once here beside the shapes rather than by the first range.
  ix->mapActivity(rec);
  ix->readLeaked(rec);
  return ix;
}

std::shared_ptr<const TreeIndex> TreeIndex::build(const Recording& rec, QueryControl& control) {
  return detail::controlled(control, [&] { return build(rec); });
}

size_t TreeIndex::nodeCount(TreeDirection direction) const {
  return (direction == TreeDirection::TopDown ? down_ : up()).parent.size();
}

TreeIndex::~TreeIndex() = default;

const TreeIndex::Shape& TreeIndex::up() const {
  // A throw (a cancel of the question that asked first) leaves it to the next to make.
  std::call_once(up_once_, [this] {
    if (!up_source_) return;  // made with the index
    UpSource& src = *up_source_;
    Shape s;
    Builder::addRoot(s);
    s.site_end.reserve(sites_.size());
    FlatMap children;
    std::vector<const Frame*> frames;
    for (size_t i = 0; i < sites_.size(); ++i) {
      src.rec->stackFrames(row(i).stack_id, &frames);  // the same frames: cached per ip for the recording's life
      int32_t node = 0;
      for (const Frame* f : frames) {
        auto [at, isNew] = src.byFrame.tryEmplace(uint64_t(reinterpret_cast<uintptr_t>(f)), -1);
        if (isNew || at < 0) throw std::logic_error("TreeIndex: a frame the index was not built with");
        node = Builder::child(s, children, node, src.symbolOfFrame[size_t(at)], f);
      }
      s.site_end.push_back(node);
    }
    Builder::shrink(s);
    up_ = std::move(s);
    up_source_.reset();
  });
  return up_;
}

}  // namespace memledger::analyzer
