// Compress on exit (recorder/compress.h): `record` writes plain SQLite while the program runs and
// compresses the finished file; every reader opens both kinds the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace {

using memledger::test::isCompressed;
using memledger::test::json;
using memledger::test::RunResult;
using memledger::test::isPlainSqlite;
using memledger::test::memledgerBinary;
using memledger::test::plainRecording;
using memledger::test::record;
using memledger::test::Recorded;
using memledger::test::run;
using memledger::test::sample;
using memledger::test::TempDir;

// The report of a recording without the one field that names the file.
json reportWithoutPath(const std::string& db) {
  json j = memledger::test::reportJson(db);
  j["recording"].erase("path");
  return j;
}

TEST(CompressedRecording, RecordCompressesTheFinishedFile) {
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  ASSERT_TRUE(isCompressed(rec.db));
  std::string plain = plainRecording(rec.db);
  ASSERT_TRUE(isPlainSqlite(plain));
  EXPECT_LT(std::filesystem::file_size(rec.db) * 3, std::filesystem::file_size(plain))
      << "compressed " << std::filesystem::file_size(rec.db) << " plain " << std::filesystem::file_size(plain);
  // Nothing left beside it: no temporary of the compressor, no journal.
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(rec.dir->path())) files.push_back(e.path().filename());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"x.db", "x.db.plain.db"}));
}

TEST(CompressedRecording, EveryReaderSeesTheSameRecording) {
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  ASSERT_TRUE(isCompressed(rec.db));
  std::string plain = plainRecording(rec.db);
  json packed = reportWithoutPath(rec.db);
  EXPECT_EQ(packed, reportWithoutPath(plain));
  EXPECT_EQ(packed["leaks"]["count"], 7) << packed["leaks"].dump();
  for (std::vector<std::string> args : {std::vector<std::string>{"leaks"}, {"export", "--format", "folded"}}) {
    std::vector<std::string> a = {memledgerBinary(), args[0], rec.db}, b = {memledgerBinary(), args[0], plain};
    a.insert(a.end(), args.begin() + 1, args.end());
    b.insert(b.end(), args.begin() + 1, args.end());
    RunResult ra = run(a), rb = run(b);
    EXPECT_EQ(ra.status, 0) << ra.err;
    // The text views name the file in their first line only.
    auto body = [](const std::string& out) { return out.substr(std::min(out.size(), out.find('\n'))); };
    EXPECT_EQ(body(ra.out), body(rb.out)) << args[0];
    EXPECT_GT(body(ra.out).size(), 100u) << ra.out;
  }
  RunResult d = run({memledgerBinary(), "diff", rec.db, plain});
  EXPECT_EQ(d.status, 0) << d.err;
}

TEST(CompressedRecording, NoCompressKeepsPlainSqlite) {
  TempDir dir;
  std::string db = dir.file("plain.db");
  RunResult r = run({memledgerBinary(), "record", "--no-compress", "-o", db, "--", sample("leak_chains")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(isPlainSqlite(db));
  EXPECT_EQ(memledger::test::sqlInt(db, "SELECT count(*) FROM meta WHERE key = 'complete' AND value = '1'"), 1);
  EXPECT_EQ(memledger::test::reportJson(db)["leaks"]["count"], 7);
}

// Cut anywhere (inside the frame header, mid-block, one byte short of the checksum) or damaged:
// the one line every bad file gets, exit 2.
TEST(CompressedRecording, TruncatedOrCorruptIsOneLineAndExit2) {
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  std::string bytes = memledger::test::fileBytes(rec.db);
  ASSERT_TRUE(isCompressed(rec.db));
  std::vector<std::string> damaged = {bytes.substr(0, 6), bytes.substr(0, bytes.size() / 2),
                                      bytes.substr(0, bytes.size() - 1), bytes + "trailing"};
  std::string flipped = bytes;
  flipped[bytes.size() / 3] = static_cast<char>(~flipped[bytes.size() / 3]);
  damaged.push_back(flipped);
  for (size_t i = 0; i < damaged.size(); i++) {
    std::string path = rec.dir->file("bad" + std::to_string(i) + ".db");
    std::ofstream(path, std::ios::binary) << damaged[i];
    RunResult r = run({memledgerBinary(), "report", path, "--json"});
    EXPECT_EQ(r.status, 2) << i;
    EXPECT_EQ(r.err, "memledger: '" + path + "' is truncated or corrupt\n") << i;
    EXPECT_EQ(r.out, "") << i;
  }
}

// `check -- PROGRAM` reads its recording once and deletes it: compressing it would be wasted
// time. Kept recordings (--record-dir) are compressed like any other.
TEST(CompressedRecording, CheckCompressesOnlyTheRecordingsItKeeps) {
  TempDir dir;
  // leak_chains keeps its 6 blocks in a global: still reachable, which check passes by default
  // (docs/leak-kinds.md); every kind counts here, so it fails and keeps its recording.
  RunResult r = run({memledgerBinary(), "check", "--leak-kinds", "all", "--record-dir", dir.path(), "--",
                     sample("leak_chains")});
  EXPECT_EQ(r.status, 1) << r.out << r.err;  // it leaks
  EXPECT_NE(r.out.find("leaks: 6 blocks"), std::string::npos) << r.out;
  ASSERT_TRUE(std::filesystem::exists(dir.file("check.db"))) << r.err;
  EXPECT_TRUE(isCompressed(dir.file("check.db")));
}

// The README's way back to a plain SQLite file.
TEST(CompressedRecording, ZstdCommandLineGivesThePlainFileBack) {
  if (run({"sh", "-c", "command -v zstd"}).status != 0) GTEST_SKIP() << "no zstd command";
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  std::string out = rec.dir->file("back.db");
  RunResult r = run({"sh", "-c", "zstd -d < '" + rec.db + "' > '" + out + "'"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(isPlainSqlite(out));
  EXPECT_EQ(memledger::test::fileBytes(out), memledger::test::fileBytes(plainRecording(rec.db)));
  EXPECT_EQ(memledger::test::sqlInt(out, "SELECT count(*) FROM processes"), 1);
}

}  // namespace
