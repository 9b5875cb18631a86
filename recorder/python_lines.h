// Line numbers of Python frames from their code objects' line tables, in the recorder (the
// traced process only sends each code object's co_linetable once: interpose/python_frames.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace memledger::recorder {

// The line of the instruction at `offset` (code units) of a code object whose co_linetable is
// `table` and co_firstlineno `firstLine`, for interpreter version `versionHex` (PY_VERSION_HEX):
// 3.10's (address delta, line delta) pairs, 3.11+'s location table. 0 when it has none (or the
// table is cut short or malformed).
int pythonLine(uint64_t versionHex, std::string_view table, int firstLine, uint64_t offset);

// pythonLine() for one code object asked at offsets that mostly grow, with the same answers: each
// answer resumes the table's walk at the entry the last one found, instead of at its start. The
// symbolizer asks in address order, so a code object's offsets come in order: one walk of its
// table for all of them (torch_mlp: 27k Python ips, whose walks from the start were a quarter of
// the symbolizer's time at the recording's end). A smaller offset walks from the start again.
class PythonLineCursor {
 public:
  PythonLineCursor(uint64_t versionHex, std::string_view table, int firstLine);
  int line(uint64_t offset);

  // Where a walk stands: at the start of an entry (its index in the table), with the line and
  // the address (3.10: bytes, 3.11+: code units) before that entry.
  struct At {
    size_t i = 0;
    int64_t line = 0;
    uint64_t addr = 0;
  };

 private:
  unsigned minor_;
  std::string_view table_;
  int firstLine_;
  At at_;
};

// An ip of a Python frame (bit 63 set: python_frames.h) and its parts.
inline constexpr uint64_t kPythonFrameBit = 1ull << 63;
inline bool isPythonFrame(uint64_t address) { return (address & kPythonFrameBit) != 0; }
inline uint32_t pythonSerial(uint64_t address) { return static_cast<uint32_t>((address >> 32) & 0x7fffffff); }
inline uint32_t pythonOffset(uint64_t address) { return static_cast<uint32_t>(address); }

}  // namespace memledger::recorder
