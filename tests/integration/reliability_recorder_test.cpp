// The recorder failing under a running program (samples/rel_loop.c): killed with SIGKILL, or out
// of disk space. The program must run to its normal end unharmed either way, and what the
// recorder had committed must stay readable.
#include <gtest/gtest.h>

#include <sys/mount.h>

#include <regex>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::memledgerBinary;
using memledger::test::run;

const std::string kLoop = relSample("rel_loop");

std::string expectedTicks(int ticks) {
  std::string text;
  for (int i = 0; i < ticks; i++) text += "tick " + std::to_string(i) + "\n";
  return text + "end\n";
}

TEST(ReliabilityRecorder, KilledRecorderLeavesTheProgramUnharmed) {
  constexpr int ticks = 25;  // 2.5 s
  memledger::test::TempDir tmp;
  std::string db = tmp.file("x.db");
  std::string marker = tmp.file("loop.done");
  // A small ring: after the recorder is gone the program fills it quickly and must not wait for
  // space forever.
  Spawned rec({memledgerBinary(), "record", "-o", db, "--", kLoop, "loop", std::to_string(ticks), marker},
              {{"MEMLEDGER_RING_SLOTS", "4096"}});
  ASSERT_TRUE(rec.waitForOutput("tick 8\n", 30)) << rec.out() << rec.err();
  ASSERT_EQ(kill(rec.pid(), SIGKILL), 0);

  // The program keeps our stdout pipe open until it ends: EOF means it finished.
  RunResult r = rec.finish(60);
  ASSERT_FALSE(r.timedOut) << "the program did not end after its recorder died\n" << r.out << r.err;
  EXPECT_TRUE(r.signaled);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.out, expectedTicks(ticks));
  ASSERT_TRUE(std::filesystem::exists(marker));
  EXPECT_EQ(readFile(marker), "loop done 25\n");

  // A recorder killed before it finished never compressed: the file is plain SQLite, so sqlite3
  // and older tools read it too. What was committed before the kill is readable; the report says
  // the recording is incomplete.
  EXPECT_TRUE(memledger::test::isPlainSqlite(db));
  auto report = run({memledgerBinary(), "report", db});
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_NE((report.out + report.err).find("incomplete"), std::string::npos) << report.out << report.err;
  auto reportJ = run({memledgerBinary(), "report", db, "--json"});
  ASSERT_EQ(reportJ.status, 0) << reportJ.err;
  json j = json::parse(reportJ.out);
  EXPECT_EQ(j["recording"]["complete"], false) << j["recording"].dump();
  EXPECT_NE(meta(db, "complete"), "1");
  auto ims = images(db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].command.rfind(kLoop + " loop 25 ", 0), 0u) << describe(ims);
  // Batches were committed while it ran (the kill came 0.8 s in): the memory curve is there.
  EXPECT_GT(num(query(db, "SELECT count(*) AS n FROM timeline_buckets")[0]["n"]), 0);
  // At least 9 tick_leak blocks were alive, never freed, when the recorder died: an incomplete
  // recording may not know them, but must not claim that nothing leaked.
  auto leaks = run({memledgerBinary(), "leaks", db});
  EXPECT_EQ(leaks.status, 0) << leaks.err;
  EXPECT_EQ(leaks.out.find("every block was freed"), std::string::npos) << leaks.out;
}

// A tmpfs of 1 MiB: room for the empty recording (schema 6 has five tables more than 5, which
// 200 KiB no longer held: the program then never ran), not for what the flood writes.
class TinyDisk {
 public:
  explicit TinyDisk(const std::string& path) : path_(path) {
    std::filesystem::create_directories(path);
    mounted_ = mount("tmpfs", path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") == 0;
    if (!mounted_) why_ = std::strerror(errno);
  }
  ~TinyDisk() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_, why_;
  bool mounted_ = false;
};

TEST(ReliabilityRecorder, FullDiskIsAClearErrorAndTheProgramRunsOn) {
  memledger::test::TempDir tmp;
  TinyDisk disk(tmp.file("tiny"));
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here (" << disk.why() << "): needs root/CAP_SYS_ADMIN";
  std::string marker = tmp.file("flood.done");
  memledger::test::RunOptions options;
  options.timeoutSeconds = 90;
  options.env = {{"MEMLEDGER_RING_SLOTS", "8192"}};
  auto r = run({memledgerBinary(), "record", "-o", tmp.file("tiny") + "/x.db", "--", kLoop, "flood", "200000", marker},
               options);
  ASSERT_FALSE(r.timedOut) << "the program hung once the disk was full\n" << r.err;
  EXPECT_FALSE(r.signaled) << r.err;
  EXPECT_EQ(r.out, "flood done\n");
  ASSERT_TRUE(std::filesystem::exists(marker));
  EXPECT_EQ(readFile(marker), "flood done 200000\n");
  // One clear line from memledger naming the problem.
  std::regex clear(R"((^|\n)memledger: [^\n]*(No space|no space|disk is full|full)[^\n]*\n)");
  EXPECT_TRUE(std::regex_search(r.err, clear)) << "stderr:\n" << r.err;
}

}  // namespace
