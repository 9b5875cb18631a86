// What a recording exposes (samples/rel_security.c, rel_fork.c): the file is private (0600), the
// recorder's transport directory is private (0700) and removed afterwards, memory contents never
// reach the file, --no-follow-children stops at the first process, and set-id programs (which the
// loader runs without LD_PRELOAD) get a clear warning.
#include <gtest/gtest.h>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::memledgerBinary;
using memledger::test::record;
using memledger::test::reportJson;
using memledger::test::run;

const std::string kSecurity = relSample("rel_security");

TEST(ReliabilitySecurity, RecordingIsPrivateAndHoldsNoMemoryContents) {
  auto rec = record(kSecurity);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_NE(rec.program.out.find("\nsecret written\n"), std::string::npos) << rec.program.out;

  struct stat st {};
  ASSERT_EQ(stat(rec.db.c_str(), &st), 0);
  // Created 0600 whatever the umask (the test runs with the usual 022).
  EXPECT_EQ(st.st_mode & 07777, 0600u) << std::oct << (st.st_mode & 07777);

  // The program wrote "SECRET-4711-ledger" into 200 heap blocks: no byte of it may be recorded,
  // in the database or any file SQLite left beside it.
  for (const auto& entry : std::filesystem::directory_iterator(rec.dir->path())) {
    std::string bytes = readFile(entry.path().string());
    EXPECT_EQ(bytes.find("SECRET"), std::string::npos) << entry.path();
    EXPECT_EQ(bytes.find("4711-ledger"), std::string::npos) << entry.path();
  }
  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "secret_holder"), (Amount{10, 10 * 256, 1})) << leakDump(report);
}

TEST(ReliabilitySecurity, TransportDirectoryIsPrivateAndRemoved) {
  auto rec = record(kSecurity);
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  // First line: "dir=PATH mode=OCT", as the traced program saw MEMLEDGER_DIR while it ran.
  std::string first = rec.program.out.substr(0, rec.program.out.find('\n'));
  ASSERT_EQ(first.rfind("dir=", 0), 0u) << first;
  auto space = first.rfind(" mode=");
  ASSERT_NE(space, std::string::npos) << "the program saw no MEMLEDGER_DIR: " << first;
  std::string dir = first.substr(4, space - 4);
  EXPECT_EQ(first.substr(space + 6), "700") << first;
  EXPECT_FALSE(std::filesystem::exists(dir)) << dir << " is left behind";
}

TEST(ReliabilitySecurity, NoFollowChildrenRecordsOnlyTheFirstProcess) {
  memledger::test::TempDir tmp;
  std::string db = tmp.file("x.db");
  auto r = run({memledgerBinary(), "record", "--no-follow-children", "-o", db, "--", relSample("rel_fork"),
                "leakchild", "8080"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "leakchild status 0\n");
  auto ims = images(db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_FALSE(ims[0].forked);
  EXPECT_EQ(ims[0].command, relSample("rel_fork") + " leakchild 8080");
  json report = reportJson(db);
  EXPECT_EQ(leaksAt(report, "child_leak"), (Amount{})) << leakDump(report);
}

// The loader ignores LD_PRELOAD (outside the trusted paths) for a real set-id transition, so such
// a program would silently record nothing: memledger must say so, and still run it. The copy is
// owned by `nobody`, so that even as root the exec really changes ids (a root-owned setuid file
// run by root changes nothing, records normally and needs no warning).
void expectSetIdWarning(bool setuid) {
  memledger::test::TempDir tmp;
  std::filesystem::permissions(tmp.path(), std::filesystem::perms::others_exec, std::filesystem::perm_options::add);
  std::string copy = tmp.file("rel_security_setid");
  std::filesystem::copy_file(kSecurity, copy);
  constexpr uid_t nobody = 65534;
  constexpr gid_t nogroup = 65534;
  if (::chown(copy.c_str(), setuid ? nobody : ::geteuid(), setuid ? ::getegid() : nogroup) != 0)
    GTEST_SKIP() << "cannot give the copy to another user (" << std::strerror(errno) << "): needs root";
  // chown clears set-id bits, so they are set afterwards.
  ASSERT_EQ(::chmod(copy.c_str(), 0755 | (setuid ? S_ISUID : S_ISGID)), 0);
  struct stat st {};
  ASSERT_EQ(stat(copy.c_str(), &st), 0);
  ASSERT_NE(st.st_mode & (S_ISUID | S_ISGID), 0u) << "this filesystem drops set-id bits";
  auto rec = record(copy);
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_NE(rec.program.out.find("secret written\n"), std::string::npos) << rec.program.out;
  bool warned = false;
  std::istringstream lines(rec.program.err);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("memledger: ", 0) == 0 &&
        (line.find("setuid") != std::string::npos || line.find("setgid") != std::string::npos))
      warned = true;
  EXPECT_TRUE(warned) << "no 'memledger: ...' line about setuid/setgid on stderr:\n" << rec.program.err;
}

TEST(ReliabilitySecurity, SetuidProgramGetsAWarning) { expectSetIdWarning(true); }

TEST(ReliabilitySecurity, SetgidProgramGetsAWarning) { expectSetIdWarning(false); }

}  // namespace
