// The schema the recorder stores: schemas/memledger.sql without its comments, the same tables.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "analyzer/sql.h"
#include "recorder/db_writer.h"
#include <unistd.h>

namespace {

using memledger::recorder::DbWriter;
using memledger::recorder::SiteBucketEntry;
using memledger::recorder::splitSchema;
using memledger::recorder::withoutComments;

// Every table's and index's columns (name, type, not null, default, pk), in one text.
std::string shape(sqlite3* db) {
  std::string out;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT m.type, m.name, p.* FROM sqlite_schema m, pragma_table_xinfo(m.name) p "
                         "ORDER BY m.name, p.cid", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(st); ++i) {
      const unsigned char* t = sqlite3_column_text(st, i);
      out += t ? reinterpret_cast<const char*>(t) : "NULL";
      out += '|';
    }
    out += '\n';
  }
  sqlite3_finalize(st);
  return out;
}

std::string shapeOf(const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(":memory:", &db);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string s = shape(db);
  sqlite3_close(db);
  return s;
}

// A path in the temporary directory, named after the test and this process, with no file there.
std::string freshDbPath(const std::string& tag) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("memledger-" + tag + "-" + std::to_string(getpid()) + ".db")).string();
  std::filesystem::remove(path);
  return path;
}

}  // namespace

TEST(RecorderSchema, CommentsGoQuotedTextStays) {
  EXPECT_EQ(withoutComments("-- head\n\nCREATE TABLE t (  -- why\n  a TEXT DEFAULT '--x', -- note 'q'\n  b\n);\n"),
            "CREATE TABLE t (\n  a TEXT DEFAULT '--x',\n  b\n);\n");
  EXPECT_EQ(withoutComments("SELECT 1; -- no newline"), "SELECT 1;");
}

TEST(RecorderSchema, StoredWithoutCommentsAsTheSameTables) {
  auto [tables, finish] = splitSchema();
  ASSERT_NE(tables.find("--"), std::string::npos);
  EXPECT_EQ(shapeOf(withoutComments(tables) + withoutComments(finish)), shapeOf(tables + finish));

  std::string path = freshDbPath("schema");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  w->applyFinishSchema();
  w->close();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*), sum(instr(sql, '--') > 0) FROM sqlite_schema WHERE sql IS NOT NULL", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_GE(sqlite3_column_int(st, 0), 11);  // every table and index
  EXPECT_EQ(sqlite3_column_int(st, 1), 0);
  sqlite3_finalize(st);
  int version = -1;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  EXPECT_EQ(version, memledger::recorder::kSchemaVersion);
  EXPECT_EQ(shape(db), shapeOf(tables + finish));
  sqlite3_close(db);
  std::filesystem::remove(path);
}

// Stack tree nodes are packed into stack_nodes rows of consecutive ids of one image: a row ends
// when it holds 256 nodes, when the next id is another image's or does not follow, and at every
// commit (a committed batch names no stack it does not hold).
TEST(RecorderSchema, StackNodesRowsSplitAtFullImageGapAndCommit) {
  std::string path = freshDbPath("nodes");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  const uint32_t ips[] = {7, 300, 70000};
  for (int64_t id = 1; id <= 300; ++id) w->insertStack(id, 1, ips, id % 4, id > 1 ? id - 1 : 0);
  w->insertStack(301, 2, ips, 1);          // another image
  w->insertStack(305, 2, ips, 2, 301);     // ids do not follow
  w->commit();
  w->insertStack(306, 2, ips, 3, 305);     // after a commit
  w->close();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT first_id, image_id, length(nodes) FROM stack_nodes ORDER BY first_id", -1, &st, nullptr);
  std::string rows;
  while (sqlite3_step(st) == SQLITE_ROW)
    rows += std::to_string(sqlite3_column_int64(st, 0)) + ":" + std::to_string(sqlite3_column_int64(st, 1)) + " ";
  sqlite3_finalize(st);
  EXPECT_EQ(rows, "1:1 257:1 301:2 305:2 306:2 ");
  // Node 306: parent gap 1, 3 ips (7, 300 = AC 02, 70000 = F0 A2 04).
  sqlite3_prepare_v2(db, "SELECT hex(nodes) FROM stack_nodes WHERE first_id = 306", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))), "010307AC02F0A204");
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove(path);
}

// Per-site activity entries are stored sorted by site with stack id gaps, the first absolute, in
// site_buckets rows (t_ns delta, length, entries); a second write of one bucket adds up.
TEST(RecorderSchema, SiteTimelineEntriesSortedWithStackIdGaps) {
  std::string path = freshDbPath("st");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  // (stack, kind, allocs, bytes[, frees, freed bytes, temporaries]): 300/new, 5/malloc,
  // 300/malloc (which also freed one block of 10 B, a temporary), given out of order.
  std::vector<SiteBucketEntry> entries = {{300, 1, 2, 20}, {5, 0, 1, 8}, {300, 0, 3, 30, 1, 10, 1}};
  w->insertSiteTimeline(1, 1000, entries);
  std::vector<SiteBucketEntry> more = {{7, 2, 1, 4}};
  w->insertSiteTimeline(1, 1000, more);  // a second write of the same bucket
  w->close();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT hex(buckets), buckets FROM site_buckets", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  // One site_buckets row: t 1000 (zigzag 2000), 22 bytes: 5 abs malloc | gap 295 malloc | gap 0
  // new, each with its frees, freed bytes and temporaries (schema 7); then the second write of
  // the bucket: t delta 0, 7 bytes: 7 abs mmap.
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))),
            "D00F16" "05010108000000" "A70200031E010A01" "00020214000000" "0007" "07050104000000");
  std::string decoded;
  memledger::analyzer::detail::forEachSiteBucket(
      sqlite3_column_blob(st, 1), sqlite3_column_bytes(st, 1), [&](int64_t t, const void* entries, int bytes) {
        EXPECT_EQ(t, 1000);
        memledger::analyzer::detail::forEachSiteActivity(entries, bytes, memledger::schema::kSchemaVersion, [&](const auto& e) {
          decoded += std::to_string(e.stack_id) + "/" + memledger::analyzer::detail::siteKindName(e.kind) + "/" +
                     std::to_string(e.allocs) + "/" + std::to_string(e.alloc_bytes) + "/" + std::to_string(e.frees) +
                     "/" + std::to_string(e.freed_bytes) + "/" + std::to_string(e.temps) + " ";
        });
      });
  EXPECT_EQ(decoded, "5/malloc/1/8/0/0/0 300/malloc/3/30/1/10/1 300/new/2/20/0/0/0 7/mmap/1/4/0/0/0 ");
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove(path);
}

// A batch that fills up (64k rows commit) while a stack_nodes row is being filled: the commit
// writes that row once (it used to recurse: the row's own insert filled the batch again).
TEST(RecorderSchema, FullBatchWithPendingStackNodesCommitsOnce) {
  std::string path = freshDbPath("batch");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  const uint32_t ip = 1;
  w->insertStack(1, 1, &ip, 1);
  for (int64_t i = 1; i <= 70000; ++i) w->insertIp(i, 1, 0x1000 + static_cast<uint64_t>(i));
  w->insertStack(2, 1, &ip, 1, 1);
  w->close();
  ASSERT_TRUE(w->ok()) << w->error();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM ips), (SELECT group_concat(first_id || ':' || hex(nodes), ' ') "
                         "FROM stack_nodes)", -1, &st, nullptr);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 70000);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 1))), "1:000101 2:010101");
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove(path);
}

// Sites are packed into site_totals rows (zigzag stack id deltas, kind, 18 counters), split at
// 4096 sites, an image change and a commit; readers see them through `sites` exactly as written,
// the largest counters and stack ids that go backwards included, and a damaged row ends early.
TEST(RecorderSchema, SiteTotalsRoundTripThroughTheSitesTable) {
  std::string path = freshDbPath("sites");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  auto row = [&](int64_t stack, int64_t image, uint64_t base) {
    memledger::recorder::SiteRow r;
    r.stack_id = stack;
    r.kind = static_cast<uint8_t>(stack % 4);  // malloc, new, mmap, custom
    r.image_id = image;
    uint64_t* f[] = {&r.alloc_count, &r.alloc_bytes, &r.free_count, &r.freed_bytes, &r.leak_count,
                     &r.leak_bytes, &r.peak_count, &r.peak_bytes, &r.temp_count, &r.temp_bytes,
                     &r.realloc_count, &r.max_live_count, &r.max_live_bytes, &r.min_size,
                     &r.max_size, &r.same_size_count, &r.lifetime_ns_sum, &r.max_realloc_chain};
    for (int i = 0; i < 18; ++i) *f[i] = base + static_cast<uint64_t>(i);
    return r;
  };
  // 5000 sites of image 1, stack ids 5000 down to 1; image 2: one with INT64_MAX counters; after
  // a commit, image 2 again.
  for (int64_t s = 5000; s >= 1; --s) w->insertSite(row(s, 1, static_cast<uint64_t>(s) * 1000));
  w->insertSite(row(7, 2, static_cast<uint64_t>(INT64_MAX) - 17));
  w->commit();
  w->insertSite(row(1 << 20, 2, 1));
  w->close();
  ASSERT_TRUE(w->ok()) << w->error();

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  ASSERT_TRUE(memledger::analyzer::detail::registerSitesTable(db, memledger::schema::kSchemaVersion));
  auto text = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    std::string out;
    while (sqlite3_step(st) == SQLITE_ROW)
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        out += std::string(t ? reinterpret_cast<const char*>(t) : "NULL") + (i + 1 < sqlite3_column_count(st) ? "|" : " ");
      }
    sqlite3_finalize(st);
    return out;
  };
  EXPECT_EQ(text("SELECT image_id, count(*) FROM site_totals GROUP BY image_id"), "1|2 2|2 ");
  EXPECT_EQ(text("SELECT count(*), sum(stack_id), min(stack_id), max(stack_id) FROM sites WHERE image_id = 1"),
            "5000|12502500|1|5000 ");
  // Every counter of every image-1 site is exactly what was written.
  EXPECT_EQ(text("SELECT count(*) FROM sites WHERE image_id = 1 AND (alloc_count != stack_id * 1000 OR "
                 "max_realloc_chain != stack_id * 1000 + 17 OR lifetime_ns_sum != stack_id * 1000 + 16 OR "
                 "leak_bytes != stack_id * 1000 + 5 OR kind != (CASE stack_id % 4 WHEN 0 THEN 'malloc' "
                 "WHEN 1 THEN 'new' WHEN 2 THEN 'mmap' ELSE 'custom' END))"),
            "0 ");
  EXPECT_EQ(text("SELECT stack_id, kind, alloc_count, max_realloc_chain FROM sites WHERE image_id = 2 ORDER BY stack_id"),
            "7|custom|9223372036854775790|9223372036854775807 1048576|malloc|1|18 ");
  // Comparisons the virtual table tests itself answer as SQLite answers them on a real table.
  ASSERT_EQ(sqlite3_exec(db, "CREATE TEMP TABLE copy AS SELECT * FROM sites", nullptr, nullptr, nullptr), SQLITE_OK);
  for (const char* where :
       {"leak_count > 4000005", "image_id = 2", "image_id = 2 AND alloc_count >= 1", "kind = 'mmap'",
        "kind != 'new' AND stack_id < 100", "kind > 'custom' AND kind <= 'mmap'", "stack_id = '7'",
        "alloc_count < 2500000.5", "alloc_count > 'text'", "alloc_count < x'00'", "kind > 3", "kind < x'00'",
        "stack_id = NULL", "stack_id IN (3, 4000)", "peak_bytes BETWEEN 10000 AND 20010 AND image_id = 1",
        "temp_count <> 4000008", "max_realloc_chain >= 9223372036854775807"}) {
    std::string a = text(("SELECT count(*), total(stack_id), total(length(kind) * unicode(kind)) FROM sites WHERE " + std::string(where)).c_str());
    std::string b = text(("SELECT count(*), total(stack_id), total(length(kind) * unicode(kind)) FROM copy WHERE " + std::string(where)).c_str());
    EXPECT_EQ(a, b) << where;
  }
  EXPECT_EQ(text("SELECT count(*) FROM sites WHERE image_id = 1 AND leak_count > 0"), "5000 ");
  // A row cut inside its second entry (the first is 75 bytes: a 2-byte id, the kind, 18 counters
  // of 4 bytes) keeps its first; the rows after it still read.
  ASSERT_EQ(sqlite3_exec(db, "UPDATE site_totals SET sites = substr(sites, 1, 100) WHERE id = 1", nullptr, nullptr,
                         nullptr), SQLITE_OK);
  EXPECT_EQ(text("SELECT count(*), max(stack_id) FROM sites WHERE image_id = 1"), "905|5000 ");
  sqlite3_close(db);
  std::filesystem::remove(path);
}

// The tables of many small rows are written 64 rows to an INSERT (recorder/db_bulk.h): every row
// lands, in order, with its NULLs and text, whether it went in a full statement or in the tail
// written row by row at a commit; a reader given the connection sees the rows not yet written;
// INSERT OR REPLACE keeps the last of two rows for one key, as single inserts did.
TEST(RecorderSchema, BulkRowsLandInOrderWithTheirNullsAndTail) {
  std::string path = freshDbPath("bulk");
  std::string err;
  auto w = DbWriter::open(path, &err);
  ASSERT_TRUE(w) << err;
  for (int64_t i = 1; i <= 150; ++i) {  // two full statements and a tail of 22
    memledger::recorder::AllocationRow r;
    r.id = i;
    r.image_id = 1;
    r.tid = 7;
    r.kind = i % 2 ? "malloc" : "new";
    r.op = i % 2 ? "calloc" : "new[]";
    r.address = 0x1000 + static_cast<uint64_t>(i);
    r.size = static_cast<uint64_t>(i) * 16;
    r.stack_id = 100 + i;
    r.t_alloc = static_cast<uint64_t>(i) * 1000;
    if (i % 3 == 0) r.t_free = static_cast<uint64_t>(i) * 2000;
    if (i % 5 == 0) r.realloc_of = i - 1;
    w->insertAllocation(r);
    w->insertLeakKind(i, static_cast<int>(i % 4));
  }
  w->insertLeakKind(3, 9);  // replaces the first row for allocation 3
  // The reader's connection sees all 150, none of them committed or stepped yet for the tail.
  sqlite3_stmt* seen = nullptr;
  sqlite3_prepare_v2(w->handle(), "SELECT count(*) FROM allocations", -1, &seen, nullptr);
  ASSERT_EQ(sqlite3_step(seen), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(seen, 0), 150);
  sqlite3_finalize(seen);
  w->close();
  ASSERT_TRUE(w->ok()) << w->error();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT a.rowid, a.id, a.tid, a.kind, a.op, a.address, a.size, a.stack_id, a.t_alloc, "
                         "a.t_free, a.realloc_of, k.kind FROM allocations a JOIN leak_kinds k ON k.allocation_id = a.id "
                         "ORDER BY a.rowid", -1, &st, nullptr);
  int64_t i = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    ++i;
    EXPECT_EQ(sqlite3_column_int64(st, 1), i);
    EXPECT_EQ(sqlite3_column_int64(st, 2), 7);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 3)), i % 2 ? "malloc" : "new");
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 4)), i % 2 ? "calloc" : "new[]");
    EXPECT_EQ(sqlite3_column_int64(st, 5), 0x1000 + i);
    EXPECT_EQ(sqlite3_column_int64(st, 6), i * 16);
    EXPECT_EQ(sqlite3_column_int64(st, 7), 100 + i);
    EXPECT_EQ(sqlite3_column_int64(st, 8), i * 1000);
    if (i % 3 == 0) EXPECT_EQ(sqlite3_column_int64(st, 9), i * 2000);
    else EXPECT_EQ(sqlite3_column_type(st, 9), SQLITE_NULL);
    if (i % 5 == 0) EXPECT_EQ(sqlite3_column_int64(st, 10), i - 1);
    else EXPECT_EQ(sqlite3_column_type(st, 10), SQLITE_NULL);
    EXPECT_EQ(sqlite3_column_int(st, 11), i == 3 ? 9 : i % 4) << "allocation " << i;
  }
  EXPECT_EQ(i, 150);
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove(path);
}
