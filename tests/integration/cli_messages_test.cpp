// The CLI's smaller promises, end to end (issue 15, "smaller things seen"): a program that cannot
// be executed leaves no recording; -o refuses folders and existing files the same way for
// record and export (--force for both); check --per-test reports a missing program as 127;
// control characters in a command line cannot break the report's header or process table; diff
// names the two recordings; check --top; help texts; PEAK RSS of a process never sampled.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness.h"

using namespace memledger::test;

namespace {

void writeFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::ofstream(path, std::ios::binary) << text;
  chmod(path.c_str(), mode);
}

std::vector<std::string> filesIn(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t countOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

RunResult cli(const std::vector<std::string>& args, const RunOptions& options = {}) {
  std::vector<std::string> argv = {memledgerBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, options);
}

}  // namespace

// An executable text file without "#!": exec gives ENOEXEC. Before issue 15 `record` left a
// 53 KB recording that `report` called INCOMPLETE; now nothing is created, one line, exit 126.
TEST(CliMessages, TextFileWithoutShebangIsNotRunAndLeavesNoRecording) {
  TempDir dir;
  const std::string script = dir.file("noshebang");
  const std::string marker = dir.file("ran");
  writeFile(script, "touch " + marker + "\n", 0755);
  const std::string line =
      "memledger: cannot run '" + script + "': Exec format error (neither an ELF program nor a '#!' script)\n";

  RunResult r = cli({"record", "-o", dir.file("x.db"), "--", script});
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(r.err, line);
  EXPECT_EQ(r.out, "");
  // The default output name too: nothing at all is written into the current folder.
  RunOptions here;
  here.cwd = dir.path();
  r = cli({"record", "--", script}, here);
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(r.err, line);
  EXPECT_EQ(filesIn(dir.path()), std::vector<std::string>{"noshebang"});
  // check -- PROGRAM and check --per-test -- PROGRAM say the same (no /bin/sh fallback either).
  for (std::vector<std::string> args : {std::vector<std::string>{"check", "--", script},
                                        {"check", "--per-test", "--", script}}) {
    r = cli(args);
    EXPECT_EQ(r.status, 126) << joinArgs(args) << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, line) << joinArgs(args);
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the file was run by a shell";
}

// "#!" naming an interpreter that does not exist: exec's ENOENT, 127 as bash reports it.
TEST(CliMessages, ScriptWithAMissingInterpreterExits127AndLeavesNoRecording) {
  TempDir dir;
  const std::string script = dir.file("badinterp");
  writeFile(script, "#!/nonexistent/interpreter -x\necho never\n", 0755);
  RunResult r = cli({"record", "-o", dir.file("x.db"), "--", script});
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(r.err, "memledger: cannot run '" + script +
                       "': its interpreter '/nonexistent/interpreter': No such file or directory\n");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.db")));
}

// The checks above do not refuse what can run: a "#!" script is recorded with its own status.
TEST(CliMessages, ShebangScriptIsStillRecorded) {
  TempDir dir;
  const std::string script = dir.file("ok.sh");
  writeFile(script, "#!/bin/sh\nexit 3\n", 0755);
  RunResult r = cli({"record", "-o", dir.file("x.db"), "--", script});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("x.db")));
}

TEST(CliMessages, RecordIntoADirectorySaysItIsADirectory) {
  TempDir dir;
  const std::string folder = dir.file("out");
  std::filesystem::create_directory(folder);
  for (bool force : {false, true}) {
    std::vector<std::string> args = {"record", "-o", folder};
    if (force) args.push_back("--force");
    args.insert(args.end(), {"--", "/bin/true"});
    RunResult r = cli(args);
    EXPECT_EQ(r.status, 2) << joinArgs(args);
    EXPECT_EQ(r.err, "memledger: record: cannot write '" + folder + "': it is a directory (give a file name)\n");
    EXPECT_TRUE(std::filesystem::is_directory(folder));
    EXPECT_TRUE(std::filesystem::is_empty(folder));
  }
}

// record -o and export -o follow one rule: an existing file is kept (one line, exit 2) unless
// --force; before issue 15 export overwrote it silently.
TEST(CliMessages, RecordAndExportRefuseAnExistingFileUnlessForced) {
  TempDir dir;
  const std::string db = dir.file("x.db");
  ASSERT_EQ(cli({"record", "-o", db, "--", sample("leak_chains")}).status, 0);

  const std::string existing = dir.file("existing");
  writeFile(existing, "precious");
  RunResult r = cli({"record", "-o", existing, "--", sample("leak_chains")});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: record: '" + existing + "' already exists (--force replaces it)\n");
  EXPECT_EQ(fileBytes(existing), "precious");

  for (std::string format : {"folded", "json", "chrome-trace", "pprof"}) {
    r = cli({"export", db, "--format", format, "-o", existing});
    EXPECT_EQ(r.status, 2) << format;
    EXPECT_EQ(r.err, "memledger: export: '" + existing + "' already exists (--force replaces it)\n") << format;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(fileBytes(existing), "precious") << format;
  }
  r = cli({"export", db, "--format", "folded", "-o", dir.path()});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "memledger: export: cannot write '" + dir.path() + "': it is a directory (give a file name)\n");

  // --force replaces, with what stdout would have had.
  RunResult folded = cli({"export", db, "--format", "folded"});
  ASSERT_EQ(folded.status, 0) << folded.err;
  ASSERT_NE(folded.out.find("leak_malloc"), std::string::npos) << folded.out;
  r = cli({"export", db, "--format", "folded", "-o", existing, "--force"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(fileBytes(existing), folded.out);
  r = cli({"record", "-o", existing, "--force", "--", sample("leak_chains")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(isCompressed(existing));
  // A new file needs no --force.
  r = cli({"export", db, "--format", "folded", "-o", dir.file("new.folded")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(fileBytes(dir.file("new.folded")), folded.out);
}

// Like `check -- ./missing`; before issue 15 --per-test said its listing failed, exit 2.
TEST(CliMessages, PerTestOfAMissingProgramExits127) {
  for (bool perTest : {true, false}) {
    std::vector<std::string> args = {"check"};
    if (perTest) args.push_back("--per-test");
    args.insert(args.end(), {"--", "/nonexistent/program"});
    RunResult r = cli(args);
    EXPECT_EQ(r.status, 127) << joinArgs(args);
    EXPECT_EQ(r.err, "memledger: cannot run '/nonexistent/program': No such file or directory\n") << joinArgs(args);
    EXPECT_EQ(r.out, "") << joinArgs(args);
  }
}

// A command line with a newline and a tab: text output shows them escaped, on one line; JSON
// keeps the exact command.
TEST(CliMessages, ControlCharactersInACommandLineAreEscapedInText) {
  TempDir dir;
  const std::string db = dir.file("x.db");
  const std::string script = "x=1\ntrue\t# done";
  RunResult rec = cli({"record", "-o", db, "--", "/bin/sh", "-c", script});
  ASSERT_EQ(rec.status, 0) << rec.err;
  const std::string shown = "/bin/sh -c x=1\\ntrue\\t# done";

  RunResult r = cli({"report", db});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines = linesOf(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("memledger report: " + db + ": " + shown + ", ", 0), 0u) << lines[0];
  for (const auto& line : lines) {
    EXPECT_NE(line.rfind("true", 0), 0u) << "a command line broke a line:\n" << r.out;
    EXPECT_EQ(line.find('\t'), std::string::npos) << line;
  }
  // The process table: one row per process, the sh row naming the escaped command.
  json report = reportJson(db);
  auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l == "Processes"; });
  ASSERT_NE(header, lines.end()) << r.out;
  size_t rows = 0;
  for (auto it = header + 2; it != lines.end() && !it->empty(); ++it) ++rows;
  EXPECT_EQ(rows, report["processes"].size()) << r.out;
  EXPECT_EQ(countOf(r.out, "  " + shown + "\n"), 1u) << r.out;
  EXPECT_EQ(report["recording"]["command"], "/bin/sh -c " + script);

  // The same in the focused views' header and in check's verdict.
  r = cli({"leaks", db});
  EXPECT_EQ(linesOf(r.out)[0].rfind("memledger leaks: " + db + ": " + shown + ", ", 0), 0u) << r.out;
  r = cli({"check", "--max-leaked-bytes", "1G", "--", "/bin/sh", "-c", script});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("memledger check '" + shown + "': PASS\n"), std::string::npos) << r.out;
}

TEST(CliMessages, DiffNamesTheTwoRecordings) {
  TempDir dir;
  const std::string a = dir.file("before.db"), b = dir.file("after.db");
  ASSERT_EQ(cli({"record", "-o", a, "--", sample("ci_leaky"), "leak", "1"}).status, 0);
  ASSERT_EQ(cli({"record", "-o", b, "--", sample("ci_leaky"), "leak", "3"}).status, 0);
  RunResult r = cli({"diff", a, b});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines = linesOf(r.out);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "before (A):     " + a + " (" + sample("ci_leaky") + " leak 1)");
  EXPECT_EQ(lines[1], "after (B):      " + b + " (" + sample("ci_leaky") + " leak 3)");
  r = cli({"diff", a, b, "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["before"]["path"], a);
  EXPECT_EQ(j["after"]["path"], b);
  EXPECT_EQ(j["before"]["command"], sample("ci_leaky") + " leak 1");
  EXPECT_EQ(j["after"]["command"], sample("ci_leaky") + " leak 3");
}

// demo_leaky_peaky leaks from two sites (load_config, fill_cache) that no built-in suppression
// covers: --top 1 prints one with its stack and counts the other; the default (10) and --top 0
// print both.
TEST(CliMessages, CheckTopLimitsTheStacksPrinted) {
  TempDir dir;
  const std::string db = dir.file("x.db");
  ASSERT_EQ(cli({"record", "-o", db, "--", sample("demo_leaky_peaky")}).status, 0);
  RunResult all = cli({"check", db});
  EXPECT_EQ(all.status, 1) << all.out << all.err;
  ASSERT_NE(all.out.find(" in 2 sites"), std::string::npos) << all.out;
  EXPECT_EQ(countOf(all.out, "\n  site "), 2u) << all.out;
  EXPECT_EQ(all.out.find(" more site"), std::string::npos) << all.out;
  EXPECT_EQ(cli({"check", db, "--top", "0"}).out, all.out);

  RunResult one = cli({"check", db, "--top", "1"});
  EXPECT_EQ(one.status, 1);
  EXPECT_EQ(countOf(one.out, "\n  site "), 1u) << one.out;
  EXPECT_EQ(countOf(one.out, "\n  ... 1 more site (--top N shows more, --top 0 all)\n"), 1u) << one.out;
  EXPECT_NE(one.out.find("fill_cache"), std::string::npos) << one.out;  // the larger one first
  EXPECT_EQ(one.out.find("load_config"), std::string::npos) << one.out;

  RunResult bad = cli({"check", db, "--top", "x"});
  EXPECT_EQ(bad.status, 2);
}

TEST(CliMessages, HelpTexts) {
  RunResult top = cli({"--help"});
  EXPECT_EQ(top.status, 0);
  EXPECT_NE(top.out.find("  --version "), std::string::npos) << top.out;
  RunResult version = cli({"--version"});
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.out.rfind("memledger ", 0), 0u) << version.out;

  RunResult help = cli({"check", "--help"});
  EXPECT_EQ(help.status, 0);
  size_t usageLines = 0;
  for (std::string line : linesOf(help.out)) {
    std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
    usageLines += line.find("usage:") != std::string::npos;
  }
  EXPECT_EQ(usageLines, 1u) << help.out;
  EXPECT_NE(help.out.find("Usage: memledger check [LIMITS...] (FILE | -- PROGRAM ARGS...)\n"), std::string::npos)
      << help.out;
  EXPECT_NE(help.out.find("--top"), std::string::npos) << help.out;
}

// rel_fork mtfork: forked children that malloc, free and _exit at once, well within one RSS
// sampling period. A process whose RSS was never sampled has peak_rss null in JSON (0 in the
// recording) and "n/a" in the process table, never "0 B".
TEST(CliMessages, PeakRssOfAProcessNeverSampledIsNA) {
  TempDir dir;
  const std::string db = dir.file("x.db");
  ASSERT_EQ(cli({"record", "-o", db, "--", sample("rel_fork"), "mtfork", "10"}).status, 0);
  json report = reportJson(db);
  RunResult text = cli({"report", db});
  ASSERT_EQ(text.status, 0);
  size_t unsampled = 0, sampled = 0;
  for (const auto& p : report["processes"]) {
    ASSERT_FALSE(p["peak_rss"].is_number() && p["peak_rss"].get<int64_t>() == 0) << p.dump();
    // The row whose PID column (the first, "%8lld") is this pid; PEAK RSS is the 12 columns at 47.
    char pid[16];
    std::snprintf(pid, sizeof pid, "  %8lld ", static_cast<long long>(p["pid"].get<int64_t>()));
    std::string row;
    for (const auto& line : linesOf(text.out))
      if (line.rfind(pid, 0) == 0) row = line;
    ASSERT_GE(row.size(), 59u) << pid << "\n" << text.out;
    std::string rss = row.substr(47, 12);
    if (p["peak_rss"].is_null()) {
      ++unsampled;
      EXPECT_EQ(rss, "         n/a") << row;
    } else {
      ++sampled;
      EXPECT_NE(rss, "         0 B") << row;
      EXPECT_EQ(rss.find("n/a"), std::string::npos) << row;
    }
  }
  EXPECT_EQ(unsampled + sampled, 11u);
  EXPECT_GE(sampled, 1u) << "the parent runs long enough to be sampled";
  EXPECT_GE(unsampled, 1u) << "every child was sampled: the test no longer shows the n/a case";
}
