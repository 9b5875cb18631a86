// `sites` over a version 4 file's packed `site_totals` (schemas/memledger.sql): an eponymous
// virtual table with the columns of the table it replaces, so that every query on sites reads
// both kinds of file. A scan decodes the packed rows one entry at a time, in the file's order.
// Comparisons of a column with a value (leak_count > 0, image_id = ?, kind = ?) are tested here,
// on the decoded entry, and only matching sites go back to SQLite: a report scans torch_mlp's
// 609k sites a dozen times, and most queries keep a few thousand of them.
#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/sql.h"
#include "schemas/kinds.h"
#include "schemas/site_counters.h"

namespace memledger::analyzer::detail {

namespace {

constexpr int kCounters = schema::kSiteCounters;  // alloc_count .. max_realloc_chain
// Columns: stack_id, kind, image_id, the counters (schemas/site_counters.h), account.
constexpr int kAccountColumn = 3 + kCounters;
#define MEMLEDGER_COUNTER_COLUMN(name) ", " #name " INTEGER"
constexpr const char* kDeclaration =
    "CREATE TABLE x(stack_id INTEGER, kind TEXT, image_id INTEGER"
    MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COUNTER_COLUMN) ", account INTEGER)";
#undef MEMLEDGER_COUNTER_COLUMN

struct Table {
  sqlite3_vtab base;  // first: SQLite casts between the two
  sqlite3* db;
  int version;  // the file's schema version: 5 entries carry their account
};

// A comparison pushed down by xBestIndex: column op value.
enum Op : char { kEq = 'e', kNe = 'n', kLt = 'l', kLe = 'L', kGt = 'g', kGe = 'G' };
struct Test {
  int column;
  char op;
  sqlite3_int64 value;  // integer columns
  double real;          // ... compared with a real
  std::string text;     // kind
  bool isReal = false;
  int fixed = -1;       // 0/1: the value is of a type that compares the same with every site
};

struct Cursor {
  sqlite3_vtab_cursor base;  // first
  sqlite3_stmt* rows = nullptr;
  std::vector<Test> tests;
  bool none = false;  // a test no site can pass (a comparison with NULL)
  const unsigned char* p = nullptr;  // the next entry of the current row's blob
  const unsigned char* end = nullptr;
  bool eof = true;
  sqlite3_int64 rowid = 0;
  // The current entry.
  int64_t image = 0, stack = 0;
  uint64_t kind = 0, account = 0;
  uint64_t counters[kCounters] = {};
  int version = 4;
};

// One packed entry: the stack id's gap, the kind, the account (version 5; before, 1 for mmap and
// 0 for the rest, the heap), the counters. False when the entry is cut (damage ends its row).
bool decodeEntry(const unsigned char*& p, const unsigned char* end, int version, uint64_t& gap, uint64_t& kind,
                 uint64_t& account, uint64_t* counters) {
  if (!packed::readVarint(p, end, &gap) || !packed::readVarint(p, end, &kind)) return false;
  account = kind == static_cast<uint64_t>(kinds::Kind::Mmap) ? 1 : 0;
  if (version >= 5 && !packed::readVarint(p, end, &account)) return false;
  for (int i = 0; i < kCounters; ++i)
    if (!packed::readVarint(p, end, &counters[i])) return false;
  return true;
}

sqlite3_int64 intColumn(const Cursor* c, int column) {
  if (column == 0) return c->stack;
  if (column == 2) return c->image;
  if (column == kAccountColumn) return static_cast<sqlite3_int64>(c->account);
  return static_cast<sqlite3_int64>(c->counters[column - 3]);
}

template <class T>
bool compare(const T& a, char op, const T& b) {
  switch (op) {
    case kEq: return a == b;
    case kNe: return a != b;
    case kLt: return a < b;
    case kLe: return a <= b;
    case kGt: return a > b;
    default: return a >= b;
  }
}

bool passes(const Cursor* c) {
  for (const Test& t : c->tests) {
    bool ok = t.fixed >= 0 ? t.fixed == 1
              : t.column == 1 ? compare(std::string_view(siteKindName(c->kind)), t.op, std::string_view(t.text))
              : t.isReal      ? compare(static_cast<double>(intColumn(c, t.column)), t.op, t.real)
                              : compare(intColumn(c, t.column), t.op, t.value);
    if (!ok) return false;
  }
  return true;
}

// Decodes the next entry that passes the cursor's tests into the cursor, stepping to the next
// packed row when one ends. A damaged entry (a cut varint) ends its row, as in the other packed
// tables.
int advance(Cursor* c) {
  if (c->none) {
    c->eof = true;
    return SQLITE_OK;
  }
  for (;;) {
    if (c->p && c->p < c->end) {
      const unsigned char* p = c->p;
      uint64_t gap, kind, account;
      if (decodeEntry(p, c->end, c->version, gap, kind, account, c->counters)) {
        c->p = p;
        // Unsigned: a damaged gap wraps, it never traps.
        c->stack = static_cast<int64_t>(static_cast<uint64_t>(c->stack) + static_cast<uint64_t>(packed::unzigzag(gap)));
        c->kind = kind;
        c->account = account;
        ++c->rowid;
        if (passes(c)) return SQLITE_OK;
        continue;
      }
      c->p = c->end;
    }
    int rc = sqlite3_step(c->rows);
    if (rc == SQLITE_DONE) {
      c->eof = true;
      return SQLITE_OK;
    }
    if (rc != SQLITE_ROW) return rc;
    c->image = sqlite3_column_int64(c->rows, 0);
    c->p = static_cast<const unsigned char*>(sqlite3_column_blob(c->rows, 1));
    c->end = c->p ? c->p + sqlite3_column_bytes(c->rows, 1) : nullptr;
    c->stack = 0;
  }
}

int xConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  int rc = sqlite3_declare_vtab(db, kDeclaration);
  if (rc != SQLITE_OK) return rc;
  auto* t = new (std::nothrow) Table{};
  if (!t) return SQLITE_NOMEM;
  t->db = db;
  t->version = static_cast<int>(reinterpret_cast<intptr_t>(aux));
  *out = &t->base;
  return SQLITE_OK;
}

int xDisconnect(sqlite3_vtab* v) {
  delete reinterpret_cast<Table*>(v);
  return SQLITE_OK;
}

// Every usable comparison of a column with a value is tested in advance() (omitted by SQLite);
// idxStr lists them as column letter ('a' + column) and op, in the order of xFilter's values.
int xBestIndex(sqlite3_vtab*, sqlite3_index_info* info) {
  std::string plan;
  int used = 0;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& k = info->aConstraint[i];
    if (!k.usable || k.iColumn < 0 || k.iColumn > kAccountColumn) continue;
    char op = 0;
    switch (k.op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: op = kEq; break;
      case SQLITE_INDEX_CONSTRAINT_NE: op = kNe; break;
      case SQLITE_INDEX_CONSTRAINT_LT: op = kLt; break;
      case SQLITE_INDEX_CONSTRAINT_LE: op = kLe; break;
      case SQLITE_INDEX_CONSTRAINT_GT: op = kGt; break;
      case SQLITE_INDEX_CONSTRAINT_GE: op = kGe; break;
      default: continue;
    }
    plan += static_cast<char>('a' + k.iColumn);
    plan += op;
    info->aConstraintUsage[i].argvIndex = ++used;
    info->aConstraintUsage[i].omit = 1;
  }
  if (used) {
    info->idxStr = sqlite3_mprintf("%s", plan.c_str());
    if (!info->idxStr) return SQLITE_NOMEM;
    info->needToFreeIdxStr = 1;
  }
  info->estimatedCost = 1e6 / (1 + used);  // still a full scan, but fewer rows come back
  return SQLITE_OK;
}

int xOpen(sqlite3_vtab* v, sqlite3_vtab_cursor** out) {
  auto* c = new (std::nothrow) Cursor{};
  if (!c) return SQLITE_NOMEM;
  c->version = reinterpret_cast<Table*>(v)->version;
  int rc = sqlite3_prepare_v2(reinterpret_cast<Table*>(v)->db, "SELECT image_id, sites FROM site_totals ORDER BY id",
                              -1, &c->rows, nullptr);
  if (rc != SQLITE_OK) {
    delete c;
    return rc;
  }
  *out = &c->base;
  return SQLITE_OK;
}

int xClose(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  sqlite3_finalize(c->rows);
  delete c;
  return SQLITE_OK;
}

int xFilter(sqlite3_vtab_cursor* cur, int, const char* plan, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  c->tests.clear();
  c->none = false;
  for (int i = 0; plan && i < argc && plan[2 * i] && plan[2 * i + 1]; ++i) {
    Test t{plan[2 * i] - 'a', plan[2 * i + 1], 0, 0, {}};
    // SQLite's order of types: NULL (never compares), integers and reals, text, blobs.
    int type = sqlite3_value_type(argv[i]);
    if (t.column != 1 && type == SQLITE_TEXT) type = sqlite3_value_numeric_type(argv[i]);  // '5' = 5
    auto below = [&](bool columnIsBelow) {  // the value is of another type: the order of types decides
      t.fixed = columnIsBelow ? (t.op == kLt || t.op == kLe || t.op == kNe) : (t.op == kGt || t.op == kGe || t.op == kNe);
    };
    if (type == SQLITE_NULL) {
      c->none = true;  // x op NULL is never true
    } else if (t.column == 1) {
      if (type == SQLITE_TEXT) t.text = reinterpret_cast<const char*>(sqlite3_value_text(argv[i]));
      else below(type == SQLITE_BLOB);  // kind is text: above numbers, below blobs
    } else if (type == SQLITE_INTEGER) {
      t.value = sqlite3_value_int64(argv[i]);
    } else if (type == SQLITE_FLOAT) {
      t.real = sqlite3_value_double(argv[i]);
      t.isReal = true;
    } else {
      below(true);  // integers sort before text and blobs
    }
    c->tests.push_back(std::move(t));
  }
  sqlite3_reset(c->rows);
  c->p = c->end = nullptr;
  c->eof = false;
  c->rowid = 0;
  return advance(c);
}

int xNext(sqlite3_vtab_cursor* cur) { return advance(reinterpret_cast<Cursor*>(cur)); }

int xEof(sqlite3_vtab_cursor* cur) { return reinterpret_cast<Cursor*>(cur)->eof ? 1 : 0; }

int xColumn(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int column) {
  auto* c = reinterpret_cast<Cursor*>(cur);
  switch (column) {
    case 0: sqlite3_result_int64(ctx, c->stack); break;
    case 1: sqlite3_result_text(ctx, siteKindName(c->kind), -1, SQLITE_STATIC); break;
    case 2: sqlite3_result_int64(ctx, c->image); break;
    default:
      if (column >= 3 && column <= kAccountColumn) sqlite3_result_int64(ctx, intColumn(c, column));
  }
  return SQLITE_OK;
}

int xRowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  *rowid = reinterpret_cast<Cursor*>(cur)->rowid;
  return SQLITE_OK;
}

sqlite3_module makeModule() {
  sqlite3_module m;
  std::memset(&m, 0, sizeof(m));
  m.iVersion = 1;
  m.xCreate = nullptr;  // eponymous only: `sites` exists without CREATE VIRTUAL TABLE
  m.xConnect = xConnect;
  m.xBestIndex = xBestIndex;
  m.xDisconnect = xDisconnect;
  m.xDestroy = xDisconnect;
  m.xOpen = xOpen;
  m.xClose = xClose;
  m.xFilter = xFilter;
  m.xNext = xNext;
  m.xEof = xEof;
  m.xColumn = xColumn;
  m.xRowid = xRowid;
  return m;
}

const sqlite3_module kModule = makeModule();

}  // namespace

void forEachSite(const Recording& rec, const std::function<void(const SiteEntry&)>& f) {
  const int version = rec.info().schema_version;
  SiteEntry e;
  int64_t* fields[kCounters] = {
#define MEMLEDGER_FIELD_ADDRESS(name) &e.name,
      MEMLEDGER_SITE_COUNTERS(MEMLEDGER_FIELD_ADDRESS)
#undef MEMLEDGER_FIELD_ADDRESS
  };
  if (version < 4) {  // a real `sites` table without accounts
#define MEMLEDGER_COUNTER_COLUMN(name) ", " #name
    Statement q(rec, "SELECT stack_id, kind, image_id" MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COUNTER_COLUMN) " FROM sites");
#undef MEMLEDGER_COUNTER_COLUMN
    while (q.step()) {
      e.stack_id = q.i64(0);
      const kinds::KindInfo* k = kinds::byName(q.text(1));
      e.kind = k ? k->code : 255;
      e.image_id = q.i64(2);
      e.account = e.kind == static_cast<uint64_t>(kinds::Kind::Mmap) ? 1 : 0;
      for (int i = 0; i < kCounters; ++i) *fields[i] = q.i64(3 + i);
      f(e);
    }
    return;
  }
  Statement q(rec, "SELECT image_id, sites FROM site_totals ORDER BY id");
  uint64_t counters[kCounters];
  while (q.step()) {  // checks for a cancel
    e.image_id = q.i64(0);
    const auto* p = static_cast<const unsigned char*>(q.blob(1));
    const unsigned char* end = p ? p + q.bytes(1) : nullptr;
    uint64_t stack = 0;
    while (p && p < end) {
      uint64_t gap, kind, account;
      if (!decodeEntry(p, end, version, gap, kind, account, counters)) break;
      stack += static_cast<uint64_t>(packed::unzigzag(gap));  // unsigned: a damaged gap wraps
      e.stack_id = static_cast<int64_t>(stack);
      e.kind = kind;
      e.account = account;
      for (int i = 0; i < kCounters; ++i) *fields[i] = static_cast<int64_t>(counters[i]);
      f(e);
    }
  }
}

bool registerSitesTable(sqlite3* db, int schemaVersion) {
  return sqlite3_create_module_v2(db, "sites", &kModule, reinterpret_cast<void*>(intptr_t{schemaVersion}),
                                  nullptr) == SQLITE_OK;
}

}  // namespace memledger::analyzer::detail
