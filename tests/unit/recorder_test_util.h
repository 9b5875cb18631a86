// Helpers for the recorder core tests: Decoded records built by hand, a recording in a temporary
// SQLite file, and one-value queries against it.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analyzer/sql.h"
#include "recorder/db_writer.h"
#include "recorder/recording.h"

namespace memledger::recorder::testutil {

using wire::AllocKind;
using wire::Op;
using wire::RecordType;

inline constexpr uint64_t kOrigin = 5'000'000'000ull;  // CLOCK_MONOTONIC of t = 0

// One LEB128 varint of a packed column, written here from the schema's description (not the
// reader under test, schemas/packed.h); p moves past it.
inline uint64_t readVarint(const unsigned char*& p, const unsigned char* end) {
  uint64_t v = 0;
  for (int shift = 0; p < end; shift += 7) {
    v |= uint64_t(*p & 0x7f) << shift;
    if (!(*p++ & 0x80)) break;
  }
  return v;
}

// Rebuilds a TEMP table from a packed one: `create` makes it (or empties it), and each row of
// `select` goes to unpack(row, p, end, put) with its blob (column `blobColumn`) as [p, end) and
// `insert` prepared as put.
template <typename Unpack>
void rebuildTemp(sqlite3* db, const char* create, const char* select, int blobColumn,
                 const char* insert, Unpack unpack) {
  sqlite3_exec(db, create, nullptr, nullptr, nullptr);
  sqlite3_stmt* rows = nullptr;
  sqlite3_stmt* put = nullptr;
  sqlite3_prepare_v2(db, select, -1, &rows, nullptr);
  sqlite3_prepare_v2(db, insert, -1, &put, nullptr);
  while (rows && sqlite3_step(rows) == SQLITE_ROW) {
    const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(rows, blobColumn));
    unpack(rows, p, p + sqlite3_column_bytes(rows, blobColumn), put);
  }
  sqlite3_finalize(rows);
  sqlite3_finalize(put);
}

// Schema 3 packs the stack tree's nodes into stack_nodes rows. The tests check the tree one row per
// node, as version 2 stored it: a TEMP table `stacks` (id, image_id, ips as little-endian u32 ip
// ids, parent_id or NULL), decoded here from the schema's description, not with the analyzer's
// reader. Rebuilt before every query (the recording grows between queries).
inline void unpackStackNodes(sqlite3* db) {
  rebuildTemp(db,
              "CREATE TEMP TABLE IF NOT EXISTS stacks (id INTEGER PRIMARY KEY, image_id INTEGER, "
              "ips BLOB, parent_id INTEGER); DELETE FROM temp.stacks;",
              "SELECT first_id, image_id, nodes FROM main.stack_nodes", 2,
              "INSERT INTO temp.stacks VALUES (?, ?, ?, ?)",
              [](sqlite3_stmt* rows, const unsigned char* p, const unsigned char* end, sqlite3_stmt* put) {
    int64_t id = sqlite3_column_int64(rows, 0);
    auto varint = [&] { return readVarint(p, end); };
    for (; p < end; ++id) {
      uint64_t gap = varint(), n = varint();
      std::string ips;
      for (uint64_t i = 0; i < n; ++i) {
        uint32_t ip = static_cast<uint32_t>(varint());
        ips.append(reinterpret_cast<const char*>(&ip), 4);  // little-endian targets only
      }
      sqlite3_bind_int64(put, 1, id);
      sqlite3_bind_int64(put, 2, sqlite3_column_int64(rows, 1));
      sqlite3_bind_blob(put, 3, ips.data(), static_cast<int>(ips.size()), SQLITE_TRANSIENT);
      if (gap) sqlite3_bind_int64(put, 4, id - static_cast<int64_t>(gap));
      else sqlite3_bind_null(put, 4);
      EXPECT_EQ(sqlite3_step(put), SQLITE_DONE);
      sqlite3_reset(put);
    }
  });
}

// Likewise the memory curve: schema 3 packs it into timeline_buckets; the tests read a TEMP table
// `timeline` with version 2's columns, one row per entry (a later entry of a bucket replaces it).
inline void unpackTimeline(sqlite3* db) {
  rebuildTemp(db,
              "CREATE TEMP TABLE IF NOT EXISTS timeline (image_id, t_ns, heap_bytes, heap_max, heap_min, "
              "mmap_bytes, rss_bytes, anon_bytes, allocs, frees, alloc_bytes, PRIMARY KEY (image_id, t_ns)); "
              "DELETE FROM temp.timeline;",
              "SELECT image_id, buckets FROM main.timeline_buckets ORDER BY id", 1,
              "INSERT OR REPLACE INTO temp.timeline VALUES (?,?,?,?,?,?,?,?,?,?,?)",
              [](sqlite3_stmt* rows, const unsigned char* p, const unsigned char* end, sqlite3_stmt* put) {
    auto varint = [&] { return readVarint(p, end); };
    auto zigzag = [&] {
      uint64_t v = varint();
      return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
    };
    int64_t t = 0, heap = 0, mmap = 0, rss = 0, anon = 0;
    while (p < end) {
      t += zigzag();
      heap += zigzag();
      int64_t max = heap + zigzag(), min = heap - zigzag();
      mmap += zigzag();
      uint64_t flags = varint();
      if (flags & 1) rss += zigzag();
      if (flags & 2) anon += zigzag();
      int64_t counts[3] = {static_cast<int64_t>(varint()), static_cast<int64_t>(varint()),
                           static_cast<int64_t>(varint())};
      // Version 5: the other accounts that changed (account, live, max - live, live - min).
      for (uint64_t n = varint(), i = 0; i < n; ++i) {
        varint();
        zigzag();
        zigzag();
        zigzag();
      }
      int64_t values[] = {sqlite3_column_int64(rows, 0), t, heap, max, min, mmap};
      for (int i = 0; i < 6; ++i) sqlite3_bind_int64(put, i + 1, values[i]);
      if (flags & 1) sqlite3_bind_int64(put, 7, rss);
      else sqlite3_bind_null(put, 7);
      if (flags & 2) sqlite3_bind_int64(put, 8, anon);
      else sqlite3_bind_null(put, 8);
      for (int i = 0; i < 3; ++i) sqlite3_bind_int64(put, 9 + i, counts[i]);
      EXPECT_EQ(sqlite3_step(put), SQLITE_DONE);
      sqlite3_reset(put);
    }
  });
}

inline constexpr uint64_t kMs = 1'000'000ull;

inline Decoded alloc(uint64_t t, uint64_t addr, uint64_t size, uint64_t hash, uint32_t tid = 1,
                     Op op = Op::Malloc, AllocKind kind = AllocKind::Malloc) {
  Decoded d{};
  d.type = RecordType::Alloc;
  d.kind = kind;
  d.aux = static_cast<uint16_t>(op);
  d.tid = tid;
  d.ts = kOrigin + t;
  d.a = addr;
  d.b = size;
  d.c = hash;
  return d;
}

inline Decoded release(uint64_t t, uint64_t addr, uint32_t tid = 1, Op op = Op::Free,
                       AllocKind kind = AllocKind::Malloc) {
  Decoded d{};
  d.type = RecordType::Free;
  d.kind = kind;
  d.aux = static_cast<uint16_t>(op);
  d.tid = tid;
  d.ts = kOrigin + t;
  d.a = addr;
  return d;
}

inline Decoded unmap(uint64_t t, uint64_t addr, uint64_t len, uint32_t tid = 1) {
  Decoded d{};
  d.type = RecordType::Unmap;
  d.kind = AllocKind::Mmap;
  d.tid = tid;
  d.ts = kOrigin + t;
  d.a = addr;
  d.b = len;
  return d;
}

// `frames` must outlive the record (the span points into it).
inline Decoded stack(uint64_t hash, const std::vector<uint64_t>& frames) {
  Decoded d{};
  d.type = RecordType::Stack;
  d.ts = kOrigin;
  d.a = hash;
  d.aux = static_cast<uint16_t>(frames.size());
  d.frames = std::span<const uint64_t>(frames.data(), frames.size());
  return d;
}

// A recording in a fresh temporary file; query() reads it back through a second connection.
class RecordingFixture : public ::testing::Test {
 protected:
  void SetUp() override { open(RecordingOptions{}); }
  void TearDown() override {
    rec_.reset();
    db_.reset();
    if (reader_) sqlite3_close(reader_);
    removeFiles();
  }

  void removeFiles() {
    if (path_.empty()) return;
    unlink(path_.c_str());
    unlink((path_ + "-wal").c_str());
    unlink((path_ + "-shm").c_str());
  }

  void open(RecordingOptions opt) {
    rec_.reset();
    db_.reset();
    if (reader_) sqlite3_close(reader_);
    reader_ = nullptr;
    removeFiles();
    char tmpl[] = "/tmp/memledger-test-XXXXXX";
    int fd = mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = tmpl;
    std::string err;
    db_ = DbWriter::open(path_, &err);
    ASSERT_TRUE(db_) << err;
    opt.origin_ns = kOrigin;
    rec_ = std::make_unique<Recording>(*db_, opt);
  }

  ImageRecorder& image(uint32_t pid = 100, uint32_t ppid = 1, bool forked = false) {
    ImageStart s;
    s.pid = pid;
    s.ppid = ppid;
    s.forked = forked;
    s.command = "prog arg";
    s.exe = "/usr/bin/prog";
    s.start_ns = kOrigin;
    return rec_->openImage(s);
  }

  // Finishes the recording (closing open images at t) and commits.
  void finish(uint64_t t) {
    rec_->finish(kOrigin + t, 0);
    db_->commit();
  }

  // The second connection, opened on first use, with the packed tables readable the way the
  // queries expect (`sites` over site_totals; TEMP `stacks` and `timeline` rebuilt every time).
  void readRecording() {
    if (!reader_) {
      EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &reader_, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
      EXPECT_TRUE(analyzer::detail::registerSitesTable(reader_, memledger::schema::kSchemaVersion));
    }
    unpackStackNodes(reader_);
    unpackTimeline(reader_);
  }

  int64_t query(const std::string& sql) {
    readRecording();
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(reader_, sql.c_str(), -1, &st, nullptr), SQLITE_OK)
        << sql << ": " << sqlite3_errmsg(reader_);
    int64_t v = -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -2 : sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;  // -1: no row, -2: NULL
  }

  std::string text(const std::string& sql) {
    readRecording();
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(reader_, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
    std::string v = "<no row>";
    if (sqlite3_step(st) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(st, 0);
      v = t ? reinterpret_cast<const char*>(t) : "<null>";
    }
    sqlite3_finalize(st);
    return v;
  }

  // The site_buckets entries (decoded with the analyzer's reader), in file order.
  struct Activity {
    int64_t t_ns, stack_id;
    std::string kind;
    int64_t allocs, alloc_bytes;
    int64_t frees, freed_bytes, temps;  // schema 7
  };
  std::vector<Activity> activity() {
    readRecording();
    std::vector<Activity> out;
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(reader_, "SELECT buckets FROM site_buckets ORDER BY image_id, id", -1, &st,
                                 nullptr), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
      analyzer::detail::forEachSiteBucket(
          sqlite3_column_blob(st, 0), sqlite3_column_bytes(st, 0), [&](int64_t t, const void* entries, int bytes) {
            analyzer::detail::forEachSiteActivity(entries, bytes, kSchemaVersion, [&](const analyzer::detail::SiteActivity& e) {
              out.push_back({t, e.stack_id, analyzer::detail::siteKindName(e.kind), e.allocs, e.alloc_bytes, e.frees,
                             e.freed_bytes, e.temps});
            });
          });
    }
    sqlite3_finalize(st);
    return out;
  }
  // Sum of allocs (or alloc_bytes) over entries matching the predicate.
  template <class Pred>
  int64_t activitySum(Pred pred, bool bytes = false) {
    int64_t sum = 0;
    for (const Activity& a : activity())
      if (pred(a)) sum += bytes ? a.alloc_bytes : a.allocs;
    return sum;
  }

  std::string path_;
  std::unique_ptr<DbWriter> db_;
  std::unique_ptr<Recording> rec_;
  sqlite3* reader_ = nullptr;
};

}  // namespace memledger::recorder::testutil
