// Python line tables (recorder/python_lines.h) against the interpreters themselves: each row is
// one function's co_linetable as CPython 3.10, 3.11, 3.12 and 3.13 compiled it, with the line of
// every instruction offset as that interpreter's code.co_lines() gives it (0: None).
// Generated with the pyenv builds on this machine from the function in the comment below.
//   def f(a, b):
//       x = [i
//            for i in range(a)]
//       try:
//           y = {k: v for k, v in zip(x, x)}
//       except Exception:
//           y = None
//       if a > b:
//           return (x,
//                   y)
//       while b:
//           b -= 1
//       return None
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "recorder/python_lines.h"

namespace {

struct Table {
  uint64_t version;
  int firstLine;
  const char* hex;
  std::vector<int> lines;
};

const Table kTables[] = {
    {0x030a0000, 2, "0601060106ff020218010c01080102ff08020201020104ff0402080104ff0402", {3, 3, 3, 4, 4, 4, 3, 3, 3, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 7, 9, 9, 9, 9, 10, 11, 10, 10, 12, 12, 13, 13, 13, 13, 12, 12, 14, 14}},
    {0x030b0000, 2, "8000f00201091cf00001091cdd1217980191289428f00301091cf10001091cf40001091c8041f004030511d80c28d00c289d63a021a05199699c69d00c28d10c28d40c2888018801f8dd0b14f000010511f000010511f000010511d80c10880188018801f003010511f8f8f8e00708883182758075d81011d81011f003011013f000010913e00a0bf00001050fd80809885189068801f003000b0cf00001050fe00b0f8834", {2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 7, 0, 0, 0, 9, 9, 9, 9, 9, 9, 10, 11, 10, 10, 12, 12, 13, 13, 13, 13, 13, 12, 12, 14, 14}},
    {0x030c0000, 2, "8000e4121798019328f60301091cd80d0ef203000a0bf00001091c8041f00001091cf004030511dc1e21a021a0519b69d70c28916490619811885190018954d00c288801d10c28f00600080988318275d81011d81011f003011013f000010913e10a0bd80809885189068801f203000b0ce00b0ff9f21701091cf9f306000d29f8dc0b14f200010511d80c108a01f003010511fa", {2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 4, 3, 3, 3, 3, 3, 3, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 9, 9, 9, 9, 9, 10, 11, 10, 10, 12, 12, 13, 13, 13, 13, 13, 12, 12, 12, 14, 0, 0, 3, 3, 3, 0, 0, 6, 6, 6, 6, 0, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 7, 0, 0, 0}},
    {0x030d0000, 2, "8000e4121798019428f30301091cd9121a8851f303000a0bd9121af003000506f00001091cf004030511dc1e21a0219c69d40c2899699164906188518a5499698801d10c28f0060008098375d81011d81011f003011013f000010913e60a0bd80809885189068801f703000b0c8821e00b0ff9f21701091cf9f306000d29f8dc0b14f300010511d80c108a01f003010511fa", {2, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 4, 4, 4, 3, 3, 3, 3, 4, 4, 3, 3, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 9, 9, 9, 9, 9, 10, 11, 10, 10, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 12, 12, 12, 12, 12, 12, 12, 12, 12, 14, 0, 0, 3, 3, 3, 0, 0, 6, 6, 6, 6, 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 7, 0, 0, 0}},
};

std::string bytesOf(const char* hex) {
  std::string out;
  for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) out += static_cast<char>(std::stoi(std::string(hex + i, 2), nullptr, 16));
  return out;
}

}  // namespace

TEST(PythonLines, EveryOffsetAsTheInterpreterSaysIt) {
  for (const Table& t : kTables) {
    std::string table = bytesOf(t.hex);
    for (size_t off = 0; off < t.lines.size(); ++off)
      EXPECT_EQ(memledger::recorder::pythonLine(t.version, table, t.firstLine, off), t.lines[off])
          << "version " << std::hex << t.version << std::dec << " offset " << off;
  }
}

TEST(PythonLines, PastTheEndOrCutShortOrUnknownVersionIsNoLine) {
  const Table& t = kTables[1];  // 3.11
  std::string table = bytesOf(t.hex);
  EXPECT_EQ(memledger::recorder::pythonLine(t.version, table, t.firstLine, t.lines.size() + 10), 0);
  EXPECT_EQ(memledger::recorder::pythonLine(t.version, table.substr(0, 3), t.firstLine, t.lines.size() - 1), 0);
  EXPECT_EQ(memledger::recorder::pythonLine(0x03090000, table, t.firstLine, 3), 0);
  EXPECT_EQ(memledger::recorder::pythonLine(0x02070000, table, t.firstLine, 3), 0);
}

// The symbolizer's cursor resumes each walk where the last answer was found: asked in order (as
// the symbolizer asks), in reverse, repeating offsets, past the end and back, it answers as the
// interpreter does.
TEST(PythonLines, CursorAnswersAsTheInterpreterInAnyOrder) {
  for (const Table& t : kTables) {
    std::string table = bytesOf(t.hex);
    const size_t n = t.lines.size();
    std::vector<size_t> orders[3];
    for (size_t off = 0; off < n; ++off) {
      orders[0].push_back(off);
      orders[0].push_back(off);  // the same offset twice: the entry the cursor stands at
      orders[1].push_back(n - 1 - off);
      orders[2].push_back((off * 7 + 3) % n);
    }
    orders[0].push_back(n + 5);  // past the end (no line), then from the start again
    orders[0].push_back(1);
    for (const std::vector<size_t>& order : orders) {
      memledger::recorder::PythonLineCursor cursor(t.version, table, t.firstLine);
      for (size_t off : order)
        EXPECT_EQ(cursor.line(off), off < n ? t.lines[off] : 0)
            << "version " << std::hex << t.version << std::dec << " offset " << off;
    }
  }
}
