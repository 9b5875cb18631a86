// Schema version 8's packed live sets (schemas/memledger.sql): `peak_site_lists` (the live set at
// each simultaneous peak, which replaced the `peak_sites` rows) and `python_finalize_lists` (the
// live set when an interpreter started finalizing, which replaced `python_finalize_sites`).
// One definition of the entries for the recorder that writes them and the analyzer and tests
// that read them. Header-only: the recorder and the analyzer are separate libraries.
//
// A blob is a list of entries, each unsigned LEB128 varints (schemas/packed.h):
//   peak_site_lists:        zigzag(stack - previous entry's stack; the first: stack itself),
//                           kind (schemas/kinds.h code), count, bytes
//   python_finalize_lists:  zigzag(stack - previous), kind, zigzag(bucket - previous entry's
//                           bucket; the first: bucket itself), count, bytes
// where bucket is the blocks' allocation bucket number (t_ns / the row's bucket_ns). The recorder
// sorts entries by (stack, kind, bucket) so the deltas are small; any order decodes the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "packed.h"

namespace memledger::packed {

// Entries per row: a damaged row loses at most this many, and a row stays well below SQLite's
// limits (torch_mlp: ~30 KiB a row).
inline constexpr size_t kSiteListRowEntries = 4096;

struct PeakSiteEntry {
  uint64_t stack = 0, kind = 0, count = 0, bytes = 0;
  bool operator==(const PeakSiteEntry&) const = default;
};

struct FinalizeSiteEntry {
  uint64_t stack = 0, kind = 0, bucket = 0, count = 0, bytes = 0;
  bool operator==(const FinalizeSiteEntry&) const = default;
};

inline void sortEntries(std::vector<PeakSiteEntry>& v) {
  std::sort(v.begin(), v.end(), [](const PeakSiteEntry& a, const PeakSiteEntry& b) {
    return a.stack != b.stack ? a.stack < b.stack : a.kind < b.kind;
  });
}
inline void sortEntries(std::vector<FinalizeSiteEntry>& v) {
  std::sort(v.begin(), v.end(), [](const FinalizeSiteEntry& a, const FinalizeSiteEntry& b) {
    return a.stack != b.stack ? a.stack < b.stack : a.kind != b.kind ? a.kind < b.kind : a.bucket < b.bucket;
  });
}

// Appends entries [first, last) as one blob (deltas restart at the blob's first entry).
inline void encodeEntries(const PeakSiteEntry* first, const PeakSiteEntry* last, std::vector<uint8_t>& out) {
  uint64_t prev = 0;
  for (const PeakSiteEntry* e = first; e != last; ++e) {
    putVarint(out, zigzag(static_cast<int64_t>(e->stack - prev)));
    putVarint(out, e->kind);
    putVarint(out, e->count);
    putVarint(out, e->bytes);
    prev = e->stack;
  }
}
inline void encodeEntries(const FinalizeSiteEntry* first, const FinalizeSiteEntry* last, std::vector<uint8_t>& out) {
  uint64_t prevStack = 0, prevBucket = 0;
  for (const FinalizeSiteEntry* e = first; e != last; ++e) {
    putVarint(out, zigzag(static_cast<int64_t>(e->stack - prevStack)));
    putVarint(out, e->kind);
    putVarint(out, zigzag(static_cast<int64_t>(e->bucket - prevBucket)));
    putVarint(out, e->count);
    putVarint(out, e->bytes);
    prevStack = e->stack;
    prevBucket = e->bucket;
  }
}

namespace site_lists_detail {
// Reads n varints of the entry starting at p; "" or why not (the entry's number and offset).
inline std::string readEntry(const unsigned char*& p, const unsigned char* begin, const unsigned char* end,
                             size_t index, uint64_t* v, int n) {
  const unsigned char* at = p;
  for (int i = 0; i < n; ++i)
    if (!readVarint(p, end, &v[i]))
      return "entry " + std::to_string(index) + " at byte " + std::to_string(at - begin) + " is cut or malformed";
  return {};
}
}  // namespace site_lists_detail

// Calls f(entry) for each entry of a blob; returns "" when the whole blob decoded, else what is
// wrong with it (a cut or malformed entry: the entries before it were passed to f).
template <class F>
std::string decodePeakSites(const void* blob, size_t size, F&& f) {
  const auto* begin = static_cast<const unsigned char*>(blob);
  const unsigned char *p = begin, *end = begin ? begin + size : begin;
  uint64_t stack = 0;
  for (size_t i = 0; p && p < end; ++i) {
    uint64_t v[4];
    std::string error = site_lists_detail::readEntry(p, begin, end, i, v, 4);
    if (!error.empty()) return error;
    stack += static_cast<uint64_t>(unzigzag(v[0]));  // unsigned: a damaged delta wraps, never traps
    f(PeakSiteEntry{stack, v[1], v[2], v[3]});
  }
  return {};
}

template <class F>
std::string decodeFinalizeSites(const void* blob, size_t size, F&& f) {
  const auto* begin = static_cast<const unsigned char*>(blob);
  const unsigned char *p = begin, *end = begin ? begin + size : begin;
  uint64_t stack = 0, bucket = 0;
  for (size_t i = 0; p && p < end; ++i) {
    uint64_t v[5];
    std::string error = site_lists_detail::readEntry(p, begin, end, i, v, 5);
    if (!error.empty()) return error;
    stack += static_cast<uint64_t>(unzigzag(v[0]));
    bucket += static_cast<uint64_t>(unzigzag(v[2]));
    f(FinalizeSiteEntry{stack, v[1], bucket, v[3], v[4]});
  }
  return {};
}

}  // namespace memledger::packed
