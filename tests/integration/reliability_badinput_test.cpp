// Bad input, table-driven: every reading command given files that are not (whole, readable)
// recordings must exit 2 with exactly one line on stderr, and never crash. Bad command lines are
// usage errors (exit 2).
#include <gtest/gtest.h>

#include <random>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::memledgerBinary;
using memledger::test::run;

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void sqlite(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string why = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error("sqlite on " + path + ": " + why);
}

const memledger::test::TempDir& filesDir() {
  static memledger::test::TempDir dir;
  return dir;
}

// One real recording (a one-process program with one leak), made on first use: under ctest each
// test is its own process and most cases need no real recording at all.
const std::string& goodRecording() {
  static std::string good = [] {
    std::string path = filesDir().file("good.db");
    auto rec = run({memledgerBinary(), "record", "-o", path, "--", relSample("rel_fork"), "leaf", "100", "0"});
    if (rec.status != 0) throw std::runtime_error("cannot record the good recording: " + rec.err);
    if (!memledger::test::isCompressed(path)) throw std::runtime_error("record did not compress " + path);
    return path;
  }();
  return good;
}

// The good recording as plain SQLite (`record` compresses by default), for damage done to SQLite.
const std::string& plainGood() {
  static std::string plain = memledger::test::plainRecording(goodRecording());
  return plain;
}

// The bad file called `name`, made on first use.
std::string badFile(const std::string& name) {
  const auto& dir = filesDir();
  std::string path = dir.file(name + ".db");
  if (std::filesystem::exists(path) || name == "missing") return path;
  if (name == "empty") {
    writeFile(path, "");
  } else if (name == "random") {
    std::mt19937 prng(20261130);
    std::string noise(64 * 1024, '\0');
    for (auto& c : noise) c = static_cast<char>(prng());
    writeFile(path, noise);
  } else if (name == "truncated") {
    std::string bytes = readFile(plainGood());
    writeFile(path, bytes.substr(0, bytes.size() / 2));
  } else if (name == "truncated_compressed") {
    std::string bytes = readFile(goodRecording());
    writeFile(path, bytes.substr(0, bytes.size() / 2));
  } else if (name == "corrupt_compressed") {
    // Bytes flipped inside the frame: the block decoder or the checksum must catch it.
    std::string bytes = readFile(goodRecording());
    for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 16; i++) bytes[i] = static_cast<char>(~bytes[i]);
    writeFile(path, bytes);
  } else if (name == "compressed_garbage") {
    std::string bytes = std::string("\x28\xB5\x2F\xFD", 4);
    std::mt19937 prng(20261201);
    for (int i = 0; i < 4096; i++) bytes += static_cast<char>(prng());
    writeFile(path, bytes);
  } else if (name == "foreign") {
    sqlite(path, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, customer TEXT, total REAL);"
                 "INSERT INTO invoices VALUES (1, 'ACME', 12.5);");
  } else if (name == "newer") {
    writeFile(path, readFile(plainGood()));
    sqlite(path, "PRAGMA user_version = 99;");
  } else if (name == "directory") {
    std::filesystem::create_directory(path);
  } else {
    throw std::runtime_error("no bad file named " + name);
  }
  return path;
}

struct Case {
  std::string name;
  std::vector<std::string> args;  // FILE: the bad file, GOOD: the good recording
};

void PrintTo(const Case& c, std::ostream* os) { *os << memledger::test::joinArgs(c.args); }

std::vector<Case> readingCommands() {
  return {
      {"report", {"report", "FILE"}},
      {"report_json", {"report", "FILE", "--json"}},
      {"leaks", {"leaks", "FILE"}},
      {"peak", {"peak", "FILE"}},
      {"phases", {"phases", "FILE"}},
      {"fragmentation", {"fragmentation", "FILE"}},
      {"suggest", {"suggest", "FILE", "--json"}},
      {"check", {"check", "FILE"}},
      {"diff_first", {"diff", "FILE", "GOOD"}},
      {"diff_second", {"diff", "GOOD", "FILE"}},
      {"export_folded", {"export", "FILE", "--format", "folded"}},
      {"export_json", {"export", "FILE", "--format", "json", "-o", "OUT"}},
  };
}

std::vector<std::string> badNames() {
  return {"missing", "empty", "random", "truncated", "foreign", "newer", "directory",
          "truncated_compressed", "corrupt_compressed", "compressed_garbage"};
}

class ReliabilityBadFile : public ::testing::TestWithParam<std::tuple<Case, std::string>> {};

TEST_P(ReliabilityBadFile, ExitsTwoWithOneLine) {
  const auto& [c, badName] = GetParam();
  const std::string bad = badFile(badName);
  memledger::test::TempDir out;
  std::vector<std::string> argv = {memledgerBinary()};
  for (const auto& a : c.args)
    argv.push_back(a == "FILE" ? bad : a == "GOOD" ? goodRecording() : a == "OUT" ? out.file("o") : a);
  memledger::test::RunOptions options;
  options.timeoutSeconds = 30;
  auto r = run(argv, options);
  std::string cmd = memledger::test::joinArgs(argv);
  EXPECT_FALSE(r.timedOut) << cmd;
  EXPECT_FALSE(r.signaled) << cmd << " died of signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.status, 2) << cmd << "\n" << r.err;
  // Exactly one line, ours, naming the file.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << cmd << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.err.rfind("memledger: ", 0), 0u) << cmd << "\nstderr:\n" << r.err;
  EXPECT_NE(r.err.find(bad), std::string::npos) << cmd << "\nstderr:\n" << r.err;
  if (badName == "newer") {
    EXPECT_NE(r.err.find("newer"), std::string::npos) << r.err;
  }
  // Nothing was written over the bad file (readers open read-only).
  if (badName == "truncated") {
    EXPECT_EQ(std::filesystem::file_size(bad), std::filesystem::file_size(plainGood()) / 2);
  }
  if (badName.ends_with("_compressed")) {
    EXPECT_NE(r.err.find("is truncated or corrupt"), std::string::npos) << cmd << "\n" << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCommands, ReliabilityBadFile,
                         ::testing::Combine(::testing::ValuesIn(readingCommands()), ::testing::ValuesIn(badNames())),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
                         });

// Bad command lines: usage errors, exit 2, something on stderr, no crash. (`record` of a program
// that cannot run is not a usage error: 126/127 as a shell reports it.)
struct UsageCase {
  std::string name;
  std::vector<std::string> args;
  int status;
};

void PrintTo(const UsageCase& c, std::ostream* os) {
  *os << "memledger " << memledger::test::joinArgs(c.args) << " -> " << c.status;
}

class ReliabilityUsage : public ::testing::TestWithParam<UsageCase> {};

TEST_P(ReliabilityUsage, IsAUsageError) {
  const UsageCase& c = GetParam();
  memledger::test::TempDir tmp;
  std::string notExecutable = tmp.file("not-executable");
  writeFile(notExecutable, "#!/bin/sh\necho never\n");
  std::filesystem::permissions(notExecutable, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::vector<std::string> argv = {memledgerBinary()};
  for (const auto& a : c.args) {
    if (a == "GOOD") argv.push_back(goodRecording());
    else if (a == "OUT") argv.push_back(tmp.file("o.db"));
    else if (a == "SAMPLE") argv.push_back(relSample("rel_security"));
    else if (a == "NOTEXEC") argv.push_back(notExecutable);
    else argv.push_back(a);
  }
  memledger::test::RunOptions options;
  options.timeoutSeconds = 30;
  auto r = run(argv, options);
  std::string cmd = memledger::test::joinArgs(argv);
  EXPECT_FALSE(r.signaled) << cmd << " died of signal " << r.signal << "\n" << r.err;
  EXPECT_EQ(r.status, c.status) << cmd << "\nstdout:\n" << r.out << "stderr:\n" << r.err;
  EXPECT_NE(r.err.find("memledger"), std::string::npos) << cmd << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << cmd << "\n" << r.err;
  // A usage error records nothing.
  if (c.status == 2 && !c.args.empty() && c.args[0] == "record") {
    EXPECT_FALSE(std::filesystem::exists(tmp.file("o.db"))) << cmd;
  }
}

INSTANTIATE_TEST_SUITE_P(
    CommandLines, ReliabilityUsage,
    ::testing::Values(UsageCase{"no_command", {}, 2}, UsageCase{"unknown_command", {"frobnicate"}, 2},
                      UsageCase{"report_without_file", {"report"}, 2},
                      UsageCase{"report_unknown_option", {"report", "GOOD", "--bogus"}, 2},
                      UsageCase{"leaks_bad_top", {"leaks", "GOOD", "--top", "abc"}, 2},
                      UsageCase{"leaks_bad_pid", {"leaks", "GOOD", "--pid", "12x"}, 2},
                      UsageCase{"leaks_time_not_a_range", {"leaks", "GOOD", "--time", "abc"}, 2},
                      UsageCase{"leaks_time_reversed", {"leaks", "GOOD", "--time", "5:1"}, 2},
                      UsageCase{"peak_time_garbage_end", {"peak", "GOOD", "--time", "1:x"}, 2},
                      UsageCase{"record_without_program", {"record", "-o", "OUT"}, 2},
                      UsageCase{"record_without_separator", {"record", "-o", "OUT", "SAMPLE"}, 2},
                      UsageCase{"record_unknown_option", {"record", "--bogus", "-o", "OUT", "--", "SAMPLE"}, 2},
                      UsageCase{"record_missing_output_value", {"record", "-o"}, 2},
                      UsageCase{"export_unknown_format", {"export", "GOOD", "--format", "nonsense"}, 2},
                      UsageCase{"diff_one_file", {"diff", "GOOD"}, 2},
                      UsageCase{"record_not_found", {"record", "-o", "OUT", "--", "/nonexistent/program"}, 127},
                      UsageCase{"record_not_executable", {"record", "-o", "OUT", "--", "NOTEXEC"}, 126}),
    [](const auto& info) { return info.param.name; });

}  // namespace
