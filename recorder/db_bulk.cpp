#include "db_bulk.h"

#include <sqlite3.h>

namespace memledger::recorder {

bool BulkRows::prepare(sqlite3* db, const std::string& head, int cols) {
  finalize();
  cols_ = cols;
  cells_.assign(static_cast<size_t>(kRows) * static_cast<size_t>(cols), Cell{});
  std::string row = "(";
  for (int c = 0; c < cols; ++c) row += c ? ",?" : "?";
  row += ")";
  std::string many = head + " VALUES " + row;
  for (int r = 1; r < kRows; ++r) many += "," + row;
  std::string one = head + " VALUES " + row;
  if (sqlite3_prepare_v3(db, one.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &one_, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v3(db, many.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &many_, nullptr) != SQLITE_OK) {
    finalize();
    return false;
  }
  return true;
}

void BulkRows::finalize() {
  sqlite3_finalize(one_);
  sqlite3_finalize(many_);
  one_ = many_ = nullptr;
  count_ = 0;
}

void BulkRows::bindRows(sqlite3_stmt* st, int first, int n) {
  int param = 1;
  const Cell* c = &cells_[static_cast<size_t>(first) * static_cast<size_t>(cols_)];
  for (int k = 0; k < n * cols_; ++k, ++c, ++param) {
    switch (c->type) {
      case Cell::kInt:
        sqlite3_bind_int64(st, param, c->i);
        break;
      case Cell::kNull:
        sqlite3_bind_null(st, param);
        break;
      case Cell::kText:
        // SQLITE_STATIC: the cell is not touched again before the step that reads it.
        sqlite3_bind_text(st, param, c->text.data(), static_cast<int>(c->text.size()), SQLITE_STATIC);
        break;
    }
  }
}

}  // namespace memledger::recorder
