// Opening recordings: every kind of bad file gives its own typed error and one-line message.
#include <sys/wait.h>

#include <filesystem>
#include <random>

#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;
using memledger::testing::tempPath;

namespace {

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

ErrorKind openError(const std::string& path, std::string* message = nullptr) {
  try {
    Recording::open(path);
  } catch (const RecordingError& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  ADD_FAILURE() << "opening " << path << " did not fail";
  return ErrorKind::Corrupt;
}

// A valid recording with enough rows to span many pages, so truncation cuts real data.
std::string bigRecording(const std::string& name) {
  RecordingBuilder b(name);
  b.process({.peak_heap_bytes = 100});
  int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.site({.stack = s, .alloc_count = 5000, .alloc_bytes = 5000});
  for (int i = 0; i < 5000; ++i) b.alloc(1, s, 0x10000 + 16 * i, 1, i);
  return b.finish();
}

}  // namespace

TEST(AnalyzerOpen, MissingFile) {
  std::string msg;
  std::string path = tempPath("does-not-exist.db");
  EXPECT_EQ(openError(path, &msg), ErrorKind::NotFound);
  EXPECT_EQ(msg, "memledger: cannot open '" + path + "': No such file or directory");
}

TEST(AnalyzerOpen, EmptyFile) {
  std::string path = tempPath("empty.db");
  writeBytes(path, "");
  std::string msg;
  EXPECT_EQ(openError(path, &msg), ErrorKind::NotARecording);
  EXPECT_EQ(msg, "memledger: '" + path + "' is not a memledger recording");
}

TEST(AnalyzerOpen, RandomBytes) {
  std::string path = tempPath("random.db");
  std::mt19937 rng(42);
  std::string bytes(8192, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng());
  writeBytes(path, bytes);
  EXPECT_EQ(openError(path), ErrorKind::NotARecording);
}

TEST(AnalyzerOpen, TextFile) {
  std::string path = tempPath("text.db");
  writeBytes(path, "hello, this is not a database\n");
  EXPECT_EQ(openError(path), ErrorKind::NotARecording);
}

TEST(AnalyzerOpen, TruncatedFile) {
  std::string path = bigRecording("truncated.db");
  auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 16384u);
  std::filesystem::resize_file(path, size / 2 / 4096 * 4096);  // whole pages, but too few
  std::string msg;
  EXPECT_EQ(openError(path, &msg), ErrorKind::Corrupt);
  EXPECT_EQ(msg, "memledger: '" + path + "' is truncated or corrupt");
}

TEST(AnalyzerOpen, TruncatedMidPageAndInsideHeader) {
  std::string path = bigRecording("truncated2.db");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  EXPECT_EQ(openError(path), ErrorKind::Corrupt);
  std::filesystem::resize_file(path, 50);  // the magic is there, the header is cut
  EXPECT_EQ(openError(path), ErrorKind::Corrupt);
}

TEST(AnalyzerOpen, DamagedPagesAreCorruptNotACrash) {
  std::string path = bigRecording("damaged.db");
  std::string bytes = memledger::testing::readFile(path);
  std::mt19937 rng(7);
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rng());
  writeBytes(path, bytes);
  try {
    auto rec = Recording::open(path);
    report(rec);
    ADD_FAILURE() << "a damaged recording was read without error";
  } catch (const RecordingError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Corrupt);
  }
}

TEST(AnalyzerOpen, ForeignSqliteFile) {
  std::string path = tempPath("foreign.db");
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE songs (title TEXT); INSERT INTO songs VALUES ('x');", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::string msg;
  EXPECT_EQ(openError(path, &msg), ErrorKind::NotARecording);
  EXPECT_EQ(msg, "memledger: '" + path + "' is not a memledger recording");
}

TEST(AnalyzerOpen, NewerSchemaVersion) {
  RecordingBuilder b("newer.db");
  b.process({});
  const int newer = memledger::analyzer::kSchemaVersion + 1;
  b.exec("PRAGMA user_version = " + std::to_string(newer));
  std::string path = b.finish();
  std::string msg;
  EXPECT_EQ(openError(path, &msg), ErrorKind::NewerVersion);
  EXPECT_EQ(msg, "memledger: '" + path + "' was written by a newer memledger (schema " + std::to_string(newer) +
                     " > " + std::to_string(newer - 1) + ")");
}

// Schema 2 stores stacks as a tree: a row's own ips, then its parent's whole stack.
TEST(AnalyzerOpen, StackTreeDecodesInnermostFirstAndSurvivesACycle) {
  RecordingBuilder b("stack-tree.db");
  b.process({});
  b.versionTwo();
  b.exec("INSERT INTO ips VALUES (901, 1, 4096, NULL), (902, 1, 8192, NULL), (903, 1, 12288, NULL)");
  b.exec("INSERT INTO frames VALUES (901, 0, 'leaf', 'a.c', 1), (902, 0, 'middle', 'a.c', 2), "
         "(903, 0, 'main', 'a.c', 3)");
  b.exec("INSERT INTO stacks VALUES (10, 1, X'87030000', NULL), (11, 1, X'86030000', 10), "
         "(12, 1, X'85030000', 11), (13, 1, X'8503000086030000', 10), "
         "(20, 1, X'85030000', 21), (21, 1, X'86030000', 20), (30, 1, X'', 31), (31, 1, X'', 30)");
  auto rec = Recording::open(b.finish());
  const Stack& s = rec.stack(12);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].function, "leaf");
  EXPECT_EQ(s[1].function, "middle");
  EXPECT_EQ(s[2].function, "main");
  const Stack& multi = rec.stack(13);  // several own ips, then the parent
  ASSERT_EQ(multi.size(), 3u);
  EXPECT_EQ(multi[2].function, "main");
  // A damaged file whose parents form a cycle ends the stack instead of looping forever.
  EXPECT_FALSE(rec.stack(20).empty());
  EXPECT_LE(rec.stack(20).size(), size_t{1} << 16);
  EXPECT_TRUE(rec.stack(30).empty());  // a cycle of rows without frames ends too
}

// Schema 3 packs the tree's nodes, many per stack_nodes row (varints: parent gap, n, ip ids).
TEST(AnalyzerOpen, PackedStackNodesDecodeAcrossRowsAndStopAtDamage) {
  RecordingBuilder b("stack-nodes.db");
  b.process({});
  b.exec("INSERT INTO ips VALUES (901, 1, 4096, NULL), (902, 1, 8192, NULL), (903, 1, 12288, NULL)");
  b.exec("INSERT INTO frames VALUES (901, 0, 'leaf', 'a.c', 1), (902, 0, 'middle', 'a.c', 2), "
         "(903, 0, 'main', 'a.c', 3)");
  // Row 10: node 10 = [main], node 11 = [middle] + 10, node 12 = [] (empty stack).
  // Row 13 (another row, same tree): node 13 = [leaf, middle] + 10, node 14 = [leaf] + 11.
  // Row 20: node 20 = [leaf] + 10, then node 21 cut in the middle of its ip list.
  b.exec("INSERT INTO stack_nodes VALUES (10, 1, X'00018707010186070000'), "
         "(13, 1, X'03028507860703018507'), (20, 1, X'0a018507000286')");
  auto rec = Recording::open(b.finish());
  auto functions = [&](int64_t id) {
    std::string out;
    for (const Frame& f : rec.stack(id)) out += (out.empty() ? "" : ";") + f.function.value_or("?");
    return out;
  };
  EXPECT_EQ(functions(10), "main");
  EXPECT_EQ(functions(11), "middle;main");
  EXPECT_EQ(functions(12), "");
  EXPECT_EQ(functions(13), "leaf;middle;main");
  EXPECT_EQ(functions(14), "leaf;middle;main");
  EXPECT_EQ(functions(20), "leaf;main");
  EXPECT_EQ(functions(21), "");   // cut: nothing trustworthy
  EXPECT_EQ(functions(22), "");   // past the cut
  EXPECT_EQ(functions(99), "");   // no such stack
  EXPECT_EQ(functions(5), "");    // before the first row
}

// Schema 3 packs the memory curve: deltas within a row, a later entry of a bucket replaces it,
// damage ends the row.
TEST(AnalyzerOpen, PackedTimelineDecodesDeltasAndLaterEntriesWin) {
  RecordingBuilder b("timeline-buckets.db");
  b.versionFour();  // the blobs below are version 4 entries
  b.process({});
  // (t, heap, max, min, mmap, rss, anon, allocs, frees, alloc_bytes):
  //   (0, 900, 900, 0, 0, 1000000, 900000, 1, 0, 900)
  //   (1000000, 5400, 9000, 900, 4096, 3000000, 2000000, 6, 1, 5400)
  //   (2000000, 2700, 5400, 2700, 8192, -, -, 3, 5, 2700)
  b.exec("INSERT INTO timeline_buckets (image_id, buckets) VALUES (1, X'00880E00880E000380897AC0EE6D0100840780897AA846"
         "A038A8468040038092F401C0A386010601982A80897A972A982A0080400003058C15')");
  // Bucket 2000000 again (heap 100, rss 5), then a cut entry.
  b.exec("INSERT INTO timeline_buckets (image_id, buckets) VALUES (1, X'8092F401C801000000010A010203" "8089')");
  auto rec = Recording::open(b.finish());
  std::vector<TimelinePoint> tl = timeline(rec, 1);
  ASSERT_EQ(tl.size(), 3u);
  EXPECT_EQ(tl[0].heap_bytes, 900);
  EXPECT_EQ(tl[0].rss_bytes, 1000000);
  EXPECT_EQ(tl[1].t_ns, 1000000);
  EXPECT_EQ(tl[1].heap_max, 9000);
  EXPECT_EQ(tl[1].heap_min, 900);
  EXPECT_EQ(tl[1].mmap_bytes, 4096);
  EXPECT_EQ(tl[1].anon_bytes, 2000000);
  EXPECT_EQ(tl[1].frees, 1);
  EXPECT_EQ(tl[2].t_ns, 2000000);
  EXPECT_EQ(tl[2].heap_bytes, 100);  // the later entry
  EXPECT_EQ(tl[2].rss_bytes, 5);
  EXPECT_FALSE(tl[2].anon_bytes);
  EXPECT_EQ(tl[2].alloc_bytes, 3);
}

TEST(AnalyzerOpen, MetaWithoutTheOtherTablesIsCorrupt) {
  std::string path = tempPath("half.db");
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA user_version = 1; CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(openError(path), ErrorKind::Corrupt);
}

TEST(AnalyzerOpen, IncompleteRecordingIsReadable) {
  RecordingBuilder b("incomplete.db", /*complete=*/false);
  b.process({.peak_heap_bytes = 4096, .peak_heap_ns = 5});
  auto rec = Recording::open(b.finish());
  EXPECT_FALSE(rec.info().complete);
  EXPECT_EQ(peak(rec).bytes, 4096);
  EXPECT_FALSE(toJson(report(rec))["recording"]["complete"].get<bool>());
}

TEST(AnalyzerOpen, CompleteRecordingSaysSo) {
  RecordingBuilder b("complete.db");
  b.process({});
  auto rec = Recording::open(b.finish());
  EXPECT_TRUE(rec.info().complete);
  EXPECT_EQ(rec.info().schema_version, memledger::schema::kSchemaVersion);
  EXPECT_EQ(rec.info().bucket_ns, 1000000);
  EXPECT_EQ(rec.info().duration_ns, 1000000000);
}

// The recorder writes in WAL mode and may be SIGKILLed: what it committed must still be readable.
TEST(AnalyzerOpen, KilledRecorderInWalModeIsReadable) {
  std::string path = tempPath("killed-wal.db");
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = nullptr;
    sqlite3_open(path.c_str(), &db);
    std::string schema = memledger::testing::readFile(std::string(MEMLEDGER_SOURCE_DIR) + "/schemas/memledger.sql");
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;", nullptr, nullptr, nullptr);
    sqlite3_exec(db, schema.c_str(), nullptr, nullptr, nullptr);
    sqlite3_exec(db,
                 "INSERT INTO processes (id, pid, ppid, command, start_ns, peak_heap_bytes) "
                 "VALUES (1, 77, 1, 'victim', 0, 12345)",
                 nullptr, nullptr, nullptr);
    _exit(0);  // no close, no checkpoint: like a SIGKILL after the last commit
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
  auto rec = Recording::open(path);
  EXPECT_FALSE(rec.info().complete);
  auto procs = processes(rec);
  ASSERT_EQ(procs.size(), 1u);
  EXPECT_EQ(procs[0].pid, 77);
  EXPECT_EQ(peak(rec).bytes, 12345);
}
