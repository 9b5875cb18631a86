// Python line tables (python_lines.h). Formats: CPython's Objects/lnotab_notes.txt (3.10) and
// Objects/locations.md (3.11 to 3.13).
#include "python_lines.h"

namespace memledger::recorder {
namespace {

// 3.10: (bytecode byte delta, signed line delta) pairs; a line delta of -128 means "no line".
// The walk starts at `at` and leaves it at the entry that holds the offset.
int line310(std::string_view t, PythonLineCursor::At& at, uint64_t byteOffset) {
  int64_t line = at.line;
  uint64_t start = at.addr;
  for (size_t i = at.i; i + 1 < t.size(); i += 2) {
    auto sdelta = static_cast<uint8_t>(t[i]);
    auto ldelta = static_cast<int8_t>(t[i + 1]);
    int64_t before = line;
    int64_t cur = -1;
    if (ldelta != -128) {
      line += ldelta;
      cur = line;
    }
    uint64_t end = start + sdelta;
    if (byteOffset >= start && byteOffset < end) {
      at = {i, before, start};
      return cur > 0 ? static_cast<int>(cur) : 0;
    }
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

int line311(std::string_view t, PythonLineCursor::At& at, uint64_t unitOffset) {
  Reader r{t, at.i};
  int64_t line = at.line;
  uint64_t addr = at.addr;  // code units
  while (r.i < t.size()) {
    const size_t entry = r.i;
    const int64_t before = line;
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
    if (unitOffset >= addr && unitOffset < end) {
      at = {entry, before, addr};
      return none || line <= 0 ? 0 : static_cast<int>(line);
    }
    addr = end;
  }
  return 0;
}

}  // namespace

int pythonLine(uint64_t versionHex, std::string_view table, int firstLine, uint64_t offset) {
  return PythonLineCursor(versionHex, table, firstLine).line(offset);
}

PythonLineCursor::PythonLineCursor(uint64_t versionHex, std::string_view table, int firstLine)
    : minor_((versionHex >> 24) == 3 ? (versionHex >> 16) & 0xff : 0), table_(table), firstLine_(firstLine) {
  at_.line = firstLine;
}

int PythonLineCursor::line(uint64_t offset) {
  if (minor_ != 10 && minor_ < 11) return 0;
  const uint64_t addr = minor_ == 10 ? offset * 2 : offset;
  if (addr < at_.addr) at_ = At{0, firstLine_, 0};  // behind the walk: from the start
  int line = minor_ == 10 ? line310(table_, at_, addr) : line311(table_, at_, addr);
  if (line == 0) at_ = At{0, firstLine_, 0};  // not found, or malformed: no resume point
  return line;
}

}  // namespace memledger::recorder
