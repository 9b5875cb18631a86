// Decoding the stack tree: the ip ids of a stack id, from the packed stack_nodes rows (schema 3
// on) or the stacks table of older recordings (analyzer/sql.h, class StackIps).
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"

namespace memledger::analyzer::detail {

namespace {
using packed::readVarint;
constexpr size_t kMaxNodeIps = (size_t{1} << 24) - 1;  // Node::count's bits; a stack is cut at 2^16 frames
}  // namespace

StackIps::StackIps(sqlite3* db, const RecordingInfo& info) : packed_(info.schema_version >= 3), path_(info.path) {
  const char* sql = packed_ ? "SELECT first_id, nodes FROM stack_nodes WHERE first_id <= ? ORDER BY first_id DESC LIMIT 1"
                    : info.schema_version >= 2 ? "SELECT ips, parent_id FROM stacks WHERE id = ?"
                                               : "SELECT ips, NULL FROM stacks WHERE id = ?";
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throwFor(rc, path_);
  }
}

StackIps::~StackIps() { sqlite3_finalize(stmt_); }

namespace {
using packed::readVarint;
}  // namespace

void StackIps::readPacked(int64_t stack_id) {
  sqlite3_bind_int64(stmt_, 1, stack_id);
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(stmt_, 0);
    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, 1));
    const unsigned char* end = p ? p + sqlite3_column_bytes(stmt_, 1) : nullptr;
    // Every node of the row; a damaged one ends the row (its stacks end where they break).
    std::vector<uint32_t> ips;
    while (p && p < end) {
      uint64_t gap = 0, n = 0;
      if (!readVarint(p, end, &gap) || !readVarint(p, end, &n) || n > uint64_t(end - p)) break;
      ips.clear();
      bool whole = true;
      for (uint64_t i = 0; i < n && whole; ++i) {
        uint64_t ip = 0;
        whole = readVarint(p, end, &ip) && ip <= UINT32_MAX;
        if (whole) ips.push_back(static_cast<uint32_t>(ip));
      }
      if (Node known; !find(id, known)) {  // an id already read keeps its first reading
        int64_t parent = gap == 0 || gap >= uint64_t(id) ? 0 : id - static_cast<int64_t>(gap);
        put(id, Node{parent, arena_.size(), std::min<size_t>(ips.size(), kMaxNodeIps)});
        arena_.insert(arena_.end(), ips.begin(), ips.end());
      }
      if (!whole || id == INT64_MAX) break;
      ++id;
    }
  } else if (rc != SQLITE_DONE) {
    sqlite3_reset(stmt_);
    throwFor(rc, path_);
  }
  sqlite3_reset(stmt_);
  // Not in any row (or past the damage): an empty stack, not asked for again.
  put(stack_id, Node{0, arena_.size(), 0});
}

bool StackIps::find(int64_t id, Node& out) const {
  if (id >= 0 && id < int64_t(dense_.size()) && dense_[size_t(id)].off != kUnread) {
    const DenseNode& d = dense_[size_t(id)];
    out = Node{int64_t(d.parent), d.off, d.count};
    return true;
  }
  auto it = nodes_.find(id);
  if (it == nodes_.end()) return false;
  out = it->second;
  return true;
}

void StackIps::put(int64_t id, Node n) {
  // A node that does not fit a dense one (a parent past 2^32, ips past 2^32 - 1 in the arena) is
  // kept in the map; so is an id already read there.
  const bool fits = n.parent >= 0 && n.parent <= int64_t(UINT32_MAX) && n.off < kUnread;
  if (id < 0 || id >= kDenseIds || !fits || nodes_.count(id)) {
    if (!(id >= 0 && id < int64_t(dense_.size()) && dense_[size_t(id)].off != kUnread)) nodes_.emplace(id, n);
    return;
  }
  // Grown by a quarter, not doubled: a PyTorch run has 10^6 stack nodes, and a doubled vector
  // was a third empty.
  if (id >= int64_t(dense_.size()))
    dense_.resize(std::min<size_t>(size_t(kDenseIds), std::max<size_t>(size_t(id) + 1, dense_.size() + dense_.size() / 4)),
                  DenseNode{0, kUnread, 0});
  if (dense_[size_t(id)].off == kUnread) dense_[size_t(id)] = DenseNode{uint32_t(n.parent), uint32_t(n.off), uint32_t(n.count)};
}

std::vector<uint32_t> StackIps::of(int64_t stack_id) {
  std::vector<uint32_t> out;
  {
    // Most stacks are made of nodes read before: walked by many threads at once.
    std::shared_lock lock(mutex_);
    if (walk(stack_id, out, false)) return out;
  }
  std::unique_lock lock(mutex_);
  walk(stack_id, out, true);
  return out;
}

bool StackIps::walk(int64_t stack_id, std::vector<uint32_t>& out, bool read) {
  // Far deeper than any captured stack; a longer chain is a cycle in a damaged file.
  constexpr size_t kMaxFrames = 1 << 16;
  out.clear();
  size_t hops = 0;  // rows with empty ips make no frames: count rows too
  for (int64_t id = stack_id; id != 0 && out.size() < kMaxFrames && hops++ < kMaxFrames;) {
    Node n;
    bool found = find(id, n);
    if (!found && !read) return false;
    if (!found && packed_) {
      readPacked(id);
      found = find(id, n);
    } else if (!found) {
      n = Node{0, arena_.size(), 0};
      sqlite3_bind_int64(stmt_, 1, id);
      int rc = sqlite3_step(stmt_);
      if (rc == SQLITE_ROW) {
        std::vector<uint32_t> own = decodeIpIds(sqlite3_column_blob(stmt_, 0), sqlite3_column_bytes(stmt_, 0));
        arena_.insert(arena_.end(), own.begin(), own.end());
        n.count = std::min<size_t>(own.size(), kMaxNodeIps);
        if (sqlite3_column_type(stmt_, 1) != SQLITE_NULL) n.parent = sqlite3_column_int64(stmt_, 1);
      } else if (rc != SQLITE_DONE) {
        sqlite3_reset(stmt_);
        throwFor(rc, path_);
      }
      sqlite3_reset(stmt_);
      put(id, n);
      found = find(id, n);
    }
    if (!found) break;  // not kept (cannot happen: put() keeps every node)
    out.insert(out.end(), arena_.begin() + static_cast<std::ptrdiff_t>(n.off),
               arena_.begin() + static_cast<std::ptrdiff_t>(n.off + n.count));
    id = n.parent == id ? 0 : n.parent;
  }
  if (out.size() > kMaxFrames) out.resize(kMaxFrames);
  return true;
}

}  // namespace memledger::analyzer::detail
