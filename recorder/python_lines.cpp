// Python line tables (python_lines.h). Formats: CPython's Objects/lnotab_notes.txt (3.10) and
// Objects/locations.md (3.11 to 3.13).
#include "python_lines.h"

namespace memledger::recorder {
namespace {

// 3.10: (bytecode byte delta, signed line delta) pairs; a line delta of -128 means "no line".
int line310(std::string_view t, int firstLine, uint64_t byteOffset) {
  int line = firstLine;
  uint64_t start = 0;
  for (size_t i = 0; i + 1 < t.size(); i += 2) {
    auto sdelta = static_cast<uint8_t>(t[i]);
    auto ldelta = static_cast<int8_t>(t[i + 1]);
    int cur = -1;
    if (ldelta != -128) {
      line += ldelta;
      cur = line;
    }
    uint64_t end = start + sdelta;
    if (byteOffset >= start && byteOffset < end) return cur > 0 ? cur : 0;
    start = end;
  }
  return 0;
}

// 3.11+: entries of a first byte (bit 7 set; code in bits 3-6; code units - 1 in bits 0-2) and
// code-specific data in 6-bit varints (bit 6: more follows).
struct Reader {
  std::string_view t;
  size_t i = 0;
  bool ok = true;
  unsigned byte() {
    if (i >= t.size()) {
      ok = false;
      return 0;
    }
    return static_cast<uint8_t>(t[i++]);
  }
  uint64_t varint() {
    unsigned b = byte();
    uint64_t v = b & 63;
    for (unsigned shift = 6; ok && (b & 64) && shift < 60; shift += 6) {
      b = byte();
      v |= static_cast<uint64_t>(b & 63) << shift;
    }
    return v;
  }
  int64_t svarint() {
    uint64_t u = varint();
    return (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
  }
};

int line311(std::string_view t, int firstLine, uint64_t unitOffset) {
  Reader r{t};
  int64_t line = firstLine;
  uint64_t addr = 0;  // code units
  while (r.i < t.size()) {
    unsigned first = r.byte();
    if (!(first & 0x80)) return 0;  // lost sync: malformed
    unsigned code = (first >> 3) & 15;
    uint64_t end = addr + (first & 7) + 1;
    bool none = false;
    if (code == 15) {
      none = true;
    } else if (code == 14) {
      line += r.svarint();
      r.varint();  // end line delta
      r.varint();  // start column + 1
      r.varint();  // end column + 1
    } else if (code == 13) {
      line += r.svarint();
    } else if (code >= 10) {
      line += code - 10;
      r.byte();
      r.byte();
    } else {
      r.byte();
    }
    if (!r.ok) return 0;
    if (unitOffset >= addr && unitOffset < end) return none || line <= 0 ? 0 : static_cast<int>(line);
    addr = end;
  }
  return 0;
}

}  // namespace

int pythonLine(uint64_t versionHex, std::string_view table, int firstLine, uint64_t offset) {
  unsigned minor = (versionHex >> 16) & 0xff;
  if ((versionHex >> 24) != 3) return 0;
  if (minor == 10) return line310(table, firstLine, offset * 2);
  if (minor >= 11) return line311(table, firstLine, offset);
  return 0;
}

}  // namespace memledger::recorder
