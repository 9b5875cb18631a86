// The integer encodings of the schema's packed columns (stack_nodes, timeline_buckets,
// site_buckets): unsigned LEB128 varints, and zigzag for signed deltas. One definition for the
// recorder that writes them and the analyzer and tests that read them.
#pragma once

#include <cstdint>
#include <vector>

namespace memledger::packed {

// Bytes are built in a local buffer and appended once: a push_back per byte stores a byte,
// which may alias the vector's own pointers, so each one reloaded them (stack rows and per-bucket
// site entries are millions of varints on a PyTorch run).
[[gnu::always_inline]] inline void putVarint(std::vector<uint8_t>& out, uint64_t v) {
  if (v < 0x80) {
    out.push_back(static_cast<uint8_t>(v));
    return;
  }
  uint8_t buf[10];
  size_t n = 0;
  for (; v >= 0x80; v >>= 7) buf[n++] = static_cast<uint8_t>(v | 0x80);
  buf[n++] = static_cast<uint8_t>(v);
  out.insert(out.end(), buf, buf + n);
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
// Unsigned arithmetic throughout: a damaged value wraps, it never traps.
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

inline void putSigned(std::vector<uint8_t>& out, int64_t v) { putVarint(out, zigzag(v)); }

// One varint at p (< end), p moved past it; false when it is cut or longer than 64 bits.
inline bool readVarint(const unsigned char*& p, const unsigned char* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; p < end && shift < 64; shift += 7) {
    unsigned char b = *p++;
    *v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

}  // namespace memledger::packed
