// ImageRecorder's stacks: ip ids and the stack tree written to `stack_nodes` (see the schema), kept
// apart from the event handling in image_recorder.cpp.
#include "image_recorder.h"

#include <algorithm>
#include <iterator>
#include "python_lines.h"
#include "recording.h"

namespace memledger::recorder {

uint32_t ImageRecorder::ipId(uint64_t address) {
  auto [id, isNew] = ipByAddress_.insert(mapKey(address));
  if (isNew) {
    *id = rec_.nextIpId();
    db_.insertIp(*id, id_, address, moduleOf(address));
    *addressByIp_.insert(*id).first = address;
  }
  return *id;
}

int64_t ImageRecorder::moduleOf(uint64_t address) const {
  if (isPythonFrame(address)) return 0;  // a code object's offset, in no module
  auto it = moduleAt_.upper_bound(address);
  if (it == moduleAt_.begin()) return 0;
  --it;
  return address < it->second.end ? it->second.id : 0;
}

// A Stack record: its whole stack is the frames it carries plus the outer frames it shares with
// the same thread's previous Stack record (wire.h, "Stack records").
void ImageRecorder::onStack(const Decoded& r) {
  auto [slot, isNew] = lastStackOf_.insert(uint64_t{r.tid} + 1);
  if (isNew) {
    *slot = static_cast<uint32_t>(lastStacks_.size());
    lastStacks_.emplace_back();
  }
  LastStack& last = lastStacks_[*slot];
  std::vector<uint64_t>& full = scratchFrames_;
  full.assign(r.frames.begin(), r.frames.end());
  size_t shared = static_cast<size_t>(r.b);
  OuterPath outer{};
  if (shared) {
    if (last.hash == r.c && shared <= last.frames.size()) {
      full.insert(full.end(), last.frames.end() - static_cast<long>(shared), last.frames.end());
      if (last.pathHashes.size() == last.frames.size() + 1)
        outer = OuterPath{shared, &last.pathHashes, &last.pathNodes};
    } else {
      // Not the base this thread sent last (a record lost with a writer killed mid-write):
      // any stack interned here with that hash will do.
      std::vector<uint64_t> base;
      if (stackFrames(r.c, &base) && shared <= base.size())
        full.insert(full.end(), base.end() - static_cast<long>(shared), base.end());
      else
        ++unresolvedStacks_;  // only the carried frames are known
    }
  }
  last.hash = r.a;
  bool interned = false;
  if (r.a && !stackByHash_.find(r.a)) {
    internStack(r.a, full.data(), full.size(), outer);
    interned = !full.empty();
  }
  // addToStackTree left the path of `full` (exactly full.size() + 1 entries) in the thread's
  // path vectors when it was given them as the outer path, else in scratchHashes_ and
  // scratchNodes_: taken by swapping, not copied (~1.2 KB a stack of 100 frames, 700k new stacks
  // on torch's import). The thread's old path becomes the next scratch space.
  if (interned) {
    if (!outer.hashes) {
      last.pathHashes.swap(scratchHashes_);
      last.pathNodes.swap(scratchNodes_);
    }
  } else {
    last.pathHashes.clear();
  }
  last.frames.swap(full);
}

uint32_t ImageRecorder::internStack(uint64_t hash, const uint64_t* frames, size_t n, OuterPath outer) {
  auto [idx, isNew] = stackByHash_.insert(hash);
  if (!isNew) return *idx;
  *idx = static_cast<uint32_t>(stacks_.size());
  uint32_t index = *idx;  // keep no pointer into stackByHash_ across the inserts below
  int64_t leaf = n ? addToStackTree(frames, n, outer) : 0;
  if (n == 0) {
    leaf = rec_.nextStackId();  // an empty stack is its own row (unknown and "no stack" differ)
    db_.insertStack(leaf, id_, nullptr, 0);
  } else {
    // The same frames under another hash (a fork child re-interning, a truncated deep stack)
    // are the same stack: one site per (stack_id, kind).
    uint32_t& same = treeNodes_[leafNode_].stack;
    if (same) {
      *stackByHash_.find(hash) = same - 1;
      return same - 1;
    }
    same = index + 1;
  }
  StackInfo st{leaf, n ? leafNode_ : 0, {}};
  std::fill(std::begin(st.site), std::end(st.site), -1);  // no site of any kind yet
  stacks_.push_back(st);
  return index;
}

// The stack tree in the file: a row is some innermost frames plus a parent row for the rest. A
// new stack costs one row for its frames below the deepest path it shares with earlier stacks;
// when that shared path ends inside an earlier row (no row ends there), one more row for the
// shared path is written first (its frames then exist twice, once in each row), and later
// stacks branching there reuse it. So at most two rows per new stack, and shared outer frames
// (the bulk of deep stacks) are stored once or twice instead of once per stack.
int64_t ImageRecorder::addToStackTree(const uint64_t* frames, size_t n, OuterPath outer) {
  if (treeNodes_.empty()) treeNodes_.push_back(TreeNode{0, 0, 0, 0});  // the root: no frame
  // Paths are found by a hash of their frames (outermost first), never by walking the tree: a
  // walk costs a cache miss per frame on deep stacks. Known paths are prefix-closed, so the
  // deepest known one is a binary search over the length.
  std::vector<uint64_t>& hashes = outer.hashes ? *outer.hashes : scratchHashes_;
  std::vector<uint32_t>& nodes = outer.nodes ? *outer.nodes : scratchNodes_;
  // The outer part's hashes and nodes are known, and already in place: only the rest.
  size_t start = outer.hashes && outer.known <= n && outer.known < hashes.size() &&
                         outer.known < nodes.size() ? outer.known : 0;
  hashes.resize(n + 1);
  nodes.resize(n + 1);
  hashes[0] = 0;
  nodes[0] = 0;
  uint64_t h = hashes[start];
  for (size_t len = start + 1; len <= n; ++len) {
    h = mixHash(h ^ frames[n - len]);
    hashes[len] = h;
  }
  auto key = [&hashes](size_t len) { return hashes[len] ? hashes[len] : 1; };  // the map reserves 0
  // Each probe below, and each fresh frame's ip, misses the cache in tables of millions of
  // entries: start fetching the slots the common case reads (a few paths past the known outer
  // part; the frames not in it) before any is read, so their misses overlap.
  if (start) {
    for (size_t len = start + 1; len <= n && len <= start + 4; ++len) pathNodes_.prefetch(key(len));
    for (size_t k = 0; k < n - start && k < 8; ++k) ipByAddress_.prefetch(mapKey(frames[k]));
  }
  size_t known = start, hi = n;  // the path of `known` frames is node `cur`; none longer than hi is
  uint32_t cur = nodes[start];
  // Each probe is a cache miss in a table of millions of paths. Below a known outer part (the
  // thread's previous stack, which shares all but the innermost few frames) the new stack
  // mostly shares a frame or two more, if any: probe upwards from there in growing steps.
  // Without one, a new stack mostly shares all but its innermost few frames with an earlier one:
  // probe from the full length down in growing steps. Then bisect what is left.
  if (start) {
    for (size_t step = 1; known < hi; step *= 2) {
      size_t len = std::min(hi, known + step);
      const uint32_t* node = pathNodes_.find(key(len));
      if (!node) {
        hi = len - 1;
        break;
      }
      known = len;
      cur = *node;
    }
  } else {
    for (size_t gap = 0; hi > known; gap = gap ? gap * 2 : 1) {
      size_t len = hi > known + gap ? hi - gap : known + 1;
      if (const uint32_t* node = pathNodes_.find(key(len))) {
        known = len;
        cur = *node;
        break;
      }
      hi = len - 1;
    }
  }
  while (known < hi) {
    size_t mid = (known + hi + 1) / 2;
    if (const uint32_t* node = pathNodes_.find(key(mid))) {
      known = mid;
      cur = *node;
    } else {
      hi = mid - 1;
    }
  }
  // The nodes of the known path below the outer part: its parents, up to what was known.
  for (size_t len = known, a = cur; len > start; --len, a = treeNodes_[a].parent) nodes[len] = static_cast<uint32_t>(a);
  int64_t parentRow = 0;
  if (cur != 0) {
    if (treeNodes_[cur].row == 0) {
      std::vector<uint32_t>& shared = scratchShared_;
      shared.clear();
      uint32_t a = cur;
      for (; a != 0 && treeNodes_[a].row == 0; a = treeNodes_[a].parent) shared.push_back(treeNodes_[a].ip);
      treeNodes_[cur].row = rec_.nextStackId();
      db_.insertStack(treeNodes_[cur].row, id_, shared.data(), shared.size(), treeNodes_[a].row);
    }
    parentRow = treeNodes_[cur].row;
  }
  size_t fresh = n - known;  // frames[0, fresh) are below the known path
  leafNode_ = cur;
  if (fresh == 0) return parentRow;  // the whole stack is a known path (a prefix of another)
  scratchIps_.resize(fresh);
  for (size_t k = 0; k < fresh; ++k) scratchIps_[k] = ipId(frames[k]);  // ids innermost first
  for (size_t k = fresh; k-- > 0;) {
    uint32_t node = static_cast<uint32_t>(treeNodes_.size());
    treeNodes_.push_back(TreeNode{cur, scratchIps_[k], 0, 0});
    *pathNodes_.insert(key(n - k)).first = node;
    nodes[n - k] = node;
    cur = node;
  }
  leafNode_ = cur;
  treeNodes_[cur].row = rec_.nextStackId();
  db_.insertStack(treeNodes_[cur].row, id_, scratchIps_.data(), fresh, parentRow);
  return treeNodes_[cur].row;
}

bool ImageRecorder::stackFrames(uint64_t hash, std::vector<uint64_t>* frames) const {
  if (const uint32_t* idx = stackByHash_.find(hash)) {
    // The path from its node to the root, innermost frame first (the tree keeps every frame).
    frames->clear();
    for (uint32_t node = stacks_[*idx].node; node != 0; node = treeNodes_[node].parent) {
      const uint64_t* address = addressByIp_.find(treeNodes_[node].ip);
      frames->push_back(address ? *address : 0);
    }
    return true;
  }
  return forkParent_ && forkParent_->stackFrames(hash, frames);
}

}  // namespace memledger::recorder
