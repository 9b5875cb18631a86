// Bad input to the CLI: programs that cannot run, an output file that already exists, and files
// that are not (readable) recordings. Each gives its documented exit code and one clear line.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

namespace {

// stderr is exactly one line starting with "memledger: ".
::testing::AssertionResult oneLine(const std::string& err) {
  if (err.rfind("memledger: ", 0) != 0 || err.empty() || err.back() != '\n' ||
      err.find('\n') != err.size() - 1)
    return ::testing::AssertionFailure() << "stderr is not one 'memledger: ' line: [" << err << "]";
  return ::testing::AssertionSuccess();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void execSql(const std::string& db, const char* sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(h, sql, nullptr, nullptr, &error);
  std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(h);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

RunResult report(const std::string& file) { return run({memledgerBinary(), "report", file, "--json"}); }

}  // namespace

TEST(BadInput, RecordingAMissingProgramExits127) {
  TempDir dir;
  RunResult r = run({memledgerBinary(), "record", "-o", dir.file("x.db"), "--", "/nonexistent"});
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(r.err, "memledger: cannot run '/nonexistent': No such file or directory\n");
  EXPECT_EQ(r.out, "");
}

TEST(BadInput, RecordingANonExecutableFileExits126) {
  TempDir dir;
  writeFile(dir.file("script"), "#!/bin/sh\necho should not run\n");
  chmod(dir.file("script").c_str(), 0644);
  RunResult r = run({memledgerBinary(), "record", "-o", dir.file("x.db"), "--", dir.file("script")});
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(r.err, "memledger: cannot run '" + dir.file("script") + "': Permission denied\n");
  EXPECT_EQ(r.out, "");
}

TEST(BadInput, RecordingOverAnExistingFileExits2BeforeTheProgramStarts) {
  TempDir dir;
  const std::string existing = dir.file("existing.db");
  writeFile(existing, "precious");
  const std::string marker = dir.file("marker");
  RunResult r = run({memledgerBinary(), "record", "-o", existing, "--", "/bin/sh", "-c", "touch " + marker});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(oneLine(r.err));
  EXPECT_NE(r.err.find(existing), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran although the output file exists";
  EXPECT_EQ(readFile(existing), "precious");
}

TEST(BadInput, RecordingWithoutAProgramExits2) {
  RunResult r = run({memledgerBinary(), "record"});
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.err.empty());
}

TEST(BadInput, RecordWritesItsDefaultFileInTheCurrentFolder) {
  TempDir dir;
  RunOptions options;
  options.cwd = dir.path();
  RunResult r = run({memledgerBinary(), "record", "--", sample("leak_chains")}, options);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> made;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    made.push_back(entry.path().filename().string());
  ASSERT_EQ(made.size(), 1u);
  // memledger.<program>.<pid>.db
  const std::string& name = made[0];
  EXPECT_EQ(name.rfind("memledger.leak_chains.", 0), 0u) << name;
  ASSERT_TRUE(name.ends_with(".db")) << name;
  std::string pid = name.substr(22, name.size() - 22 - 3);
  EXPECT_FALSE(pid.empty());
  EXPECT_EQ(pid.find_first_not_of("0123456789"), std::string::npos) << name;
  json rep = reportJson(dir.file(name));
  EXPECT_TRUE(hasOneSite(rep["leaks"]["sites"], "leak_malloc", 3, 3000, "malloc"));
}

TEST(BadInput, ReportOnAMissingFileExits2) {
  RunResult r = report("/nonexistent/x.db");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: cannot open '/nonexistent/x.db': No such file or directory\n");
  EXPECT_EQ(r.out, "");
}

TEST(BadInput, ReportOnATextFileExits2) {
  TempDir dir;
  writeFile(dir.file("notes.db"), "this is not a database\n");
  RunResult r = report(dir.file("notes.db"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: '" + dir.file("notes.db") + "' is not a memledger recording\n");
  EXPECT_EQ(r.out, "");
}

TEST(BadInput, ReportOnAForeignSqliteDatabaseExits2) {
  TempDir dir;
  execSql(dir.file("other.db"), "CREATE TABLE people(name TEXT); INSERT INTO people VALUES ('ada');");
  RunResult r = report(dir.file("other.db"));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: '" + dir.file("other.db") + "' is not a memledger recording\n");
  EXPECT_EQ(r.out, "");
}

TEST(BadInput, ReportOnARecordingOfANewerSchemaExits2) {
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const std::string newer = rec.dir->file("newer.db");
  std::filesystem::copy_file(memledger::test::plainRecording(rec.db), newer);
  // The version this memledger writes (and reads up to): the copy's before it is raised.
  int own = 0;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(newer.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
    own = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_GT(own, 0);
  execSql(newer, "PRAGMA user_version = 99;");
  RunResult r = report(newer);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: '" + newer + "' was written by a newer memledger (schema 99 > " + std::to_string(own) + ")\n");
  EXPECT_EQ(r.out, "");
  // The original still reads.
  EXPECT_EQ(report(rec.db).status, 0);
}

// The plain SQLite file cut in half (a compressed one: CompressedRecordingTest).
TEST(BadInput, ReportOnATruncatedRecordingExits2) {
  Recorded rec = record(sample("leak_chains"));
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  const std::string cut = rec.dir->file("cut.db");
  std::string bytes = readFile(memledger::test::plainRecording(rec.db));
  ASSERT_GT(bytes.size(), 8192u);
  writeFile(cut, bytes.substr(0, bytes.size() / 2));
  RunResult r = report(cut);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(oneLine(r.err));
  EXPECT_EQ(r.out, "");
}

// A command line that is not UTF-8 (any bytes are a valid argv) is recorded as it is; the JSON
// report and the exports still come out, with U+FFFD for the bytes JSON cannot carry. (Found by
// the fuzz target: the JSON writer threw, and `report --json` exited 2 on a good recording.)
TEST(BadInput, CommandLineThatIsNotUtf8StillGivesJson) {
  Recorded rec = record("/bin/sh", {"-c", "exit 0", std::string("\xff\xfe-arg", 6)});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  json report = reportJson(rec.db);
  ASSERT_FALSE(report["processes"].empty());
  std::string command = report["processes"][0]["command"].get<std::string>();
  EXPECT_NE(command.find("\xEF\xBF\xBD\xEF\xBF\xBD-arg"), std::string::npos) << command;
  for (const char* format : {"json", "chrome-trace"}) {
    RunResult r = run({memledgerBinary(), "export", rec.db, "--format", format});
    EXPECT_EQ(r.status, 0) << format << ": " << r.err;
    EXPECT_TRUE(json::accept(r.out)) << format;
  }
}
