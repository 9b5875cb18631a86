// Rows of one table buffered and written 64 to an INSERT statement (`VALUES (...), (...), ...`):
// one sqlite3_step per 64 rows instead of one per row. The per-statement work (the step, the
// VDBE's setup and halt, the reset, the journal checks) was most of the cost of a table of small
// rows: torch_mlp's end wrote ~420k rows of peak_sites and python_finalize_sites (schema 7), and
// took 0.36 s for them (schema 8 packs those two: db_writer.h). The rows land in the order they
// were added, exactly as single inserts would.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace memledger::recorder {

class BulkRows {
 public:
  static constexpr int kRows = 64;

  BulkRows() = default;
  ~BulkRows() { finalize(); }
  BulkRows(const BulkRows&) = delete;
  BulkRows& operator=(const BulkRows&) = delete;

  // head: "INSERT [OR REPLACE] INTO t(a, b, c)"; cols: its column count. false: a statement
  // could not be prepared (sqlite3_errmsg says why).
  bool prepare(sqlite3* db, const std::string& head, int cols);
  void finalize();
  bool ready() const { return one_ != nullptr; }
  bool full() const { return count_ == kRows; }
  bool empty() const { return count_ == 0; }

  // The next row's cells, in column order (the caller checks !full() first).
  void startRow() { at_ = static_cast<size_t>(count_++) * static_cast<size_t>(cols_); }
  void put(int64_t v) { setCell(Cell::kInt, v, {}); }
  void putU(uint64_t v) { put(static_cast<int64_t>(v)); }
  void putNull() { setCell(Cell::kNull, 0, {}); }
  void putText(std::string_view s) { setCell(Cell::kText, 0, s); }

  // Takes the buffered rows (the buffer is empty after it, before any step runs, so a step that
  // commits, and flushes this buffer, finds it empty) and calls step(statement) once per
  // statement bound: the 64-row one when full, else the one-row one once per row.
  template <typename Step>
  void write(Step&& step) {
    int n = count_;
    count_ = 0;
    if (n == kRows) {
      bindRows(many_, 0, n);
      step(many_, n);
      return;
    }
    for (int r = 0; r < n; ++r) {
      bindRows(one_, r, 1);
      step(one_, 1);
    }
  }

 private:
  struct Cell {
    enum Type : uint8_t { kInt, kText, kNull };
    Type type = kInt;
    int64_t i = 0;
    std::string text;
  };
  void setCell(Cell::Type type, int64_t v, std::string_view s) {
    Cell& c = cells_[at_++];
    c.type = type;
    c.i = v;
    if (type == Cell::kText) c.text.assign(s.data(), s.size());
  }
  // Binds rows [first, first + n) of the buffer to st's parameters from 1 on.
  void bindRows(sqlite3_stmt* st, int first, int n);

  sqlite3_stmt* one_ = nullptr;
  sqlite3_stmt* many_ = nullptr;
  int cols_ = 0, count_ = 0;
  size_t at_ = 0;
  std::vector<Cell> cells_;
};

}  // namespace memledger::recorder
