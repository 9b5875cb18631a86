#include "analyzer/diff.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_map>
#include <sstream>

#include "analyzer/check.h"
#include "analyzer/format.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

struct Side {
  DiffAmounts amounts;
  // Of the key's site with the most bytes allocated (then the lowest stack id): its stack is read
  // for the changed ones.
  int64_t stack_id = 0, stack_alloc_bytes = -1;
};

// A site's key (siteKey() of its stack, and its kind) as two 64-bit hashes of the frames' key
// texts: no text per site. A PyTorch run's 700,000 sites of ~55 frames each made 38 million
// strings (17 s of `memledger diff`, most of it in malloc); the texts are made for the changed
// sites only. Two different keys share both hashes with a probability of about n^2 / 2^129.
struct HashedKey {
  uint64_t h1 = 0, h2 = 0;
  std::string kind;
  bool operator==(const HashedKey& o) const { return h1 == o.h1 && h2 == o.h2 && kind == o.kind; }
};
struct HashedKeyHash {
  size_t operator()(const HashedKey& k) const { return size_t(k.h1 ^ (std::hash<std::string>{}(k.kind) * 0x9e3779b97f4a7c15ULL)); }
};
using SiteMap = std::unordered_map<HashedKey, Side, HashedKeyHash>;

uint64_t fnv(std::string_view text, uint64_t h) {
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// The hashes of each frame's part of the key ("function@file" or "??@module"), per frame of the
// recording's per-ip cache (stackFrames() hands out pointers into it).
class FrameHashes {
 public:
  std::pair<uint64_t, uint64_t> of(const Frame* f) {
    auto [it, added] = cache_.try_emplace(f);
    if (added) {
      const std::string part = siteKeyPart(*f);
      it->second = {fnv(part, 0xcbf29ce484222325ULL), fnv(part, 0x84222325cbf29ce4ULL)};
    }
    return it->second;
  }

 private:
  std::unordered_map<const Frame*, std::pair<uint64_t, uint64_t>> cache_;
};

// Every site, straight from its stored totals (no list of the recording's 700k sites at 400
// bytes each, which `report` sorts: 250 MB a PyTorch run), the Python leak rule applied as
// siteRows() applies it.
SiteMap collect(const Recording& rec) {
  SiteMap out;
  FrameHashes hashes;
  std::vector<const Frame*> frames;
  const detail::PythonSnapshot& py = rec.pythonSnapshot();
  detail::forEachSite(rec, [&](const detail::SiteEntry& s) {
    rec.stackFrames(s.stack_id, &frames);
    HashedKey key{0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, detail::siteKindName(s.kind)};
    for (const Frame* f : frames) {  // in order: the key is the sequence of the frames' parts
      auto [x, y] = hashes.of(f);
      key.h1 = (key.h1 ^ x) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
      key.h2 = (key.h2 ^ y) * 0xc2b2ae3d27d4eb4fULL + 0x165667b19e3779f9ULL;
    }
    Side& side = out[std::move(key)];
    if (s.alloc_bytes > side.stack_alloc_bytes || (s.alloc_bytes == side.stack_alloc_bytes && s.stack_id < side.stack_id)) {
      side.stack_id = s.stack_id;
      side.stack_alloc_bytes = s.alloc_bytes;
    }
    int64_t leak_count = s.leak_count, leak_bytes = s.leak_bytes;
    if (!py.images.empty()) detail::applyPythonLeakRule(py, s.image_id, s.stack_id, s.kind, leak_count, leak_bytes);
    DiffAmounts& a = side.amounts;
    a.leak_count += leak_count;
    a.leak_bytes += leak_bytes;
    a.peak_bytes += s.peak_bytes;
    a.alloc_count += s.alloc_count;
    a.alloc_bytes += s.alloc_bytes;
    a.temp_count += s.temp_count;
    a.temp_bytes += s.temp_bytes;
  });
  return out;
}

bool sameAmounts(const DiffAmounts& x, const DiffAmounts& y) {
  return x.leak_count == y.leak_count && x.leak_bytes == y.leak_bytes && x.peak_bytes == y.peak_bytes &&
         x.alloc_count == y.alloc_count && x.alloc_bytes == y.alloc_bytes && x.temp_count == y.temp_count &&
         x.temp_bytes == y.temp_bytes;
}

int64_t heapPeak(const Recording& rec) {
  int64_t best = 0;
  for (const auto& p : processes(rec)) best = std::max(best, p.peak_heap_bytes);
  return best;
}

nlohmann::json amountsJson(const DiffAmounts& a) {
  return {{"leak_count", a.leak_count},   {"leak_bytes", a.leak_bytes},   {"peak_bytes", a.peak_bytes},
          {"alloc_count", a.alloc_count}, {"alloc_bytes", a.alloc_bytes}, {"temp_count", a.temp_count},
          {"temp_bytes", a.temp_bytes}};
}

std::string signedNum(int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); }

}  // namespace

std::string siteKeyPart(const Frame& f) {
  return f.function ? *f.function + "@" + std::string(f.file ? pathBaseName(*f.file) : std::string_view())
                    : "??@" + std::string(f.module ? pathBaseName(*f.module) : std::string_view());
}

std::string siteKey(const Stack& stack) {
  std::string key;
  for (const Frame& f : stack) {
    if (!key.empty()) key += ';';
    key += siteKeyPart(f);
  }
  return key;
}

const char* diffStatusName(DiffStatus s) {
  switch (s) {
    case DiffStatus::New: return "new";
    case DiffStatus::Gone: return "gone";
    case DiffStatus::Changed: return "changed";
    case DiffStatus::Same: return "same";
  }
  return "same";
}

DiffResult diff(const Recording& a, const Recording& b) {
  DiffResult r;
  r.path_a = a.info().path;
  r.path_b = b.info().path;
  r.command_a = a.info().command;
  r.command_b = b.info().command;
  r.totals_a = totals(a);
  r.totals_b = totals(b);
  r.peak_a = heapPeak(a);
  r.peak_b = heapPeak(b);
  SiteMap sa = collect(a), sb = collect(b);
  for (const auto& [k, side] : sa) {
    r.leak_bytes_a += side.amounts.leak_bytes;
    r.leak_count_a += side.amounts.leak_count;
  }
  for (const auto& [k, side] : sb) {
    r.leak_bytes_b += side.amounts.leak_bytes;
    r.leak_count_b += side.amounts.leak_count;
  }
  auto add = [&](const HashedKey& k, const Side* x, const Side* y) {
    SiteDiff d;
    d.kind = k.kind;
    if (x) d.a = x->amounts;
    if (y) d.b = y->amounts;
    d.status = !x ? DiffStatus::New : !y ? DiffStatus::Gone : sameAmounts(d.a, d.b) ? DiffStatus::Same : DiffStatus::Changed;
    if (d.status == DiffStatus::Same) return;
    d.stack = y ? b.uncachedStack(y->stack_id) : a.uncachedStack(x->stack_id);
    d.key = siteKey(d.stack);
    for (int64_t delta : {d.b.leak_bytes - d.a.leak_bytes, d.b.peak_bytes - d.a.peak_bytes,
                          d.b.alloc_bytes - d.a.alloc_bytes, d.b.temp_bytes - d.a.temp_bytes})
      d.impact = std::max(d.impact, delta < 0 ? -delta : delta);
    r.sites.push_back(std::move(d));
  };
  for (const auto& [k, side] : sa) {
    auto it = sb.find(k);
    add(k, &side, it == sb.end() ? nullptr : &it->second);
  }
  for (const auto& [k, side] : sb)
    if (!sa.count(k)) add(k, nullptr, &side);
  // Biggest change first; ties by key, then kind, so the output is stable.
  std::sort(r.sites.begin(), r.sites.end(), [](const SiteDiff& x, const SiteDiff& y) {
    if (x.impact != y.impact) return x.impact > y.impact;
    return x.key != y.key ? x.key < y.key : x.kind < y.kind;
  });
  return r;
}

nlohmann::json toJson(const DiffResult& d) {
  nlohmann::json sitesJson = nlohmann::json::array();
  for (const auto& s : d.sites) {
    DiffAmounts delta{s.b.leak_count - s.a.leak_count, s.b.leak_bytes - s.a.leak_bytes,
                      s.b.peak_bytes - s.a.peak_bytes, s.b.alloc_count - s.a.alloc_count,
                      s.b.alloc_bytes - s.a.alloc_bytes, s.b.temp_count - s.a.temp_count,
                      s.b.temp_bytes - s.a.temp_bytes};
    sitesJson.push_back({{"status", diffStatusName(s.status)},
                         {"kind", s.kind},
                         {"key", s.key},
                         {"impact_bytes", s.impact},
                         {"a", amountsJson(s.a)},
                         {"b", amountsJson(s.b)},
                         {"delta", amountsJson(delta)},
                         {"stack", toJson(s.stack)}});
  }
  return {{"before", {{"path", d.path_a}, {"command", d.command_a}}},
          {"after", {{"path", d.path_b}, {"command", d.command_b}}},
          {"totals",
           {{"a", toJson(d.totals_a)},
            {"b", toJson(d.totals_b)},
            {"peak_bytes", {{"a", d.peak_a}, {"b", d.peak_b}, {"delta", d.peak_b - d.peak_a}}},
            {"leak_bytes", {{"a", d.leak_bytes_a}, {"b", d.leak_bytes_b}, {"delta", d.leak_bytes_b - d.leak_bytes_a}}},
            {"leak_count", {{"a", d.leak_count_a}, {"b", d.leak_count_b}, {"delta", d.leak_count_b - d.leak_count_a}}}}},
          {"sites", std::move(sitesJson)}};
}

std::string formatDiff(const DiffResult& d, size_t top) {
  std::ostringstream o;
  auto named = [](const std::string& path, const std::string& command) {
    return printable(path) + (command.empty() ? std::string() : " (" + printable(command) + ")");
  };
  o << "before (A):     " << named(d.path_a, d.command_a) << "\n";
  o << "after (B):      " << named(d.path_b, d.command_b) << "\n";
  o << "heap peak:      " << d.peak_a << " -> " << d.peak_b << " bytes (" << signedNum(d.peak_b - d.peak_a) << ")\n";
  o << "leaked:         " << d.leak_bytes_a << " -> " << d.leak_bytes_b << " bytes ("
    << signedNum(d.leak_bytes_b - d.leak_bytes_a) << "), " << d.leak_count_a << " -> " << d.leak_count_b
    << " blocks\n";
  o << "allocated:      " << d.totals_a.allocated_bytes << " -> " << d.totals_b.allocated_bytes << " bytes ("
    << signedNum(d.totals_b.allocated_bytes - d.totals_a.allocated_bytes) << "), " << d.totals_a.allocations
    << " -> " << d.totals_b.allocations << " allocations\n";
  o << "temporary:      " << d.totals_a.temporary_bytes << " -> " << d.totals_b.temporary_bytes << " bytes\n";
  if (d.sites.empty()) {
    o << "no site changed\n";
    return o.str();
  }
  o << d.sites.size() << " sites changed, biggest change first:\n";
  size_t n = 0;
  for (const auto& s : d.sites) {
    if (top && n >= top) {
      o << "... " << d.sites.size() - n << " more (--top 0 shows all)\n";
      break;
    }
    ++n;
    o << "[" << diffStatusName(s.status) << "] " << s.kind << "  impact " << s.impact << " bytes\n";
    auto row = [&](const char* what, int64_t x, int64_t y) {
      if (x == y) return;
      o << "    " << what << ": " << x << " -> " << y << " (" << signedNum(y - x) << ")\n";
    };
    row("leaked bytes", s.a.leak_bytes, s.b.leak_bytes);
    row("leaked blocks", s.a.leak_count, s.b.leak_count);
    row("peak bytes", s.a.peak_bytes, s.b.peak_bytes);
    row("allocated bytes", s.a.alloc_bytes, s.b.alloc_bytes);
    row("allocations", s.a.alloc_count, s.b.alloc_count);
    row("temporary bytes", s.a.temp_bytes, s.b.temp_bytes);
    for (size_t i = 0; i < s.stack.size() && i < 8; ++i) o << "    #" << i << " " << frameLine(s.stack[i]) << "\n";
  }
  return o.str();
}

}  // namespace memledger::analyzer
