// Signals under recording (samples/rel_signals.c): a handler that allocates, deaths by SIGSEGV,
// SIGABRT and SIGKILL (everything allocated before dying is kept, the death is recorded, record
// exits 128+N), and Ctrl-C delivered the way a terminal does and to the recorder alone.
#include <gtest/gtest.h>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::memledgerBinary;
using memledger::test::record;
using memledger::test::reportJson;

const std::string kSignals = relSample("rel_signals");

constexpr int64_t kSignalsSent = 500;

// rel_signals MODE 500 recorded: the program must have handled every signal and exited 0 with its
// usual output. Returns its report (the caller checks the handler's blocks).
json recordHandledSignals(const char* mode) {
  memledger::test::RunOptions options;
  options.timeoutSeconds = 60;
  auto rec = record(kSignals, {mode, std::to_string(kSignalsSent)}, options);
  EXPECT_EQ(rec.program.status, 0) << rec.program.out << rec.program.err;
  EXPECT_EQ(rec.program.out, "usr1 handled 500\n");
  return reportJson(rec.db);
}

// A program whose handler allocates, and which keeps its own allocator calls out of the handler's
// way (SIGUSR1 blocked around them, as POSIX asks: malloc is not async-signal-safe): every one of
// the handler's blocks is recorded, with its stack through the signal frame.
TEST(ReliabilitySignals, HandlerThatAllocatesIsCounted) {
  json report = recordHandledSignals("usr1safe");
  Amount handler = leaksAt(report, "handler_leak");
  EXPECT_EQ(handler.count, kSignalsSent) << leakDump(report);
  EXPECT_EQ(handler.bytes, kSignalsSent * 40) << leakDump(report);
  for (const auto& site : memledger::test::sitesWith(report["leaks"]["sites"], "handler_leak"))
    EXPECT_TRUE(memledger::test::stackHas(site["stack"], "on_usr1")) << site.dump();
}

// The same handler interrupting malloc/free themselves (undefined behaviour for the program: the
// handler re-enters a function that is not async-signal-safe). When the signal lands inside a
// hook, the handler's malloc passes through to the real allocator unrecorded (interpose/runtime.h,
// "Signals"): the ring the hook was writing is never entered twice from one thread. The program
// is unharmed, and what is recorded is never more than what happened.
TEST(ReliabilitySignals, HandlerInterruptingAnAllocatorCallLeavesTheProgramUnharmed) {
  json report = recordHandledSignals("usr1");
  Amount handler = leaksAt(report, "handler_leak");
  EXPECT_GT(handler.count, 0) << leakDump(report);  // the loop spends time outside malloc too
  EXPECT_LE(handler.count, kSignalsSent) << leakDump(report);
  EXPECT_EQ(handler.bytes, handler.count * 40) << leakDump(report);
}

struct Death {
  const char* mode;
  int signal;
  int64_t size;
};

void PrintTo(const Death& d, std::ostream* os) { *os << d.mode << " (signal " << d.signal << ")"; }

class ReliabilityDeath : public ::testing::TestWithParam<Death> {};

TEST_P(ReliabilityDeath, EverythingBeforeDeathIsKept) {
  const Death d = GetParam();
  auto rec = record(kSignals, {d.mode, std::to_string(d.size)});
  EXPECT_EQ(rec.program.status, 128 + d.signal) << rec.program.err;
  // memledger itself is not the one that died: it reports the death as a status.
  EXPECT_FALSE(rec.program.signaled);
  EXPECT_EQ(rec.program.out, "about to die\n");

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].endedBy, "signal") << describe(ims);
  EXPECT_EQ(ims[0].signal, d.signal) << describe(ims);
  EXPECT_FALSE(ims[0].exitCode.has_value()) << describe(ims);

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "doomed_leak"), (Amount{3, 3 * d.size, 1})) << leakDump(report);
  ASSERT_EQ(report["processes"].size(), 1u);
  EXPECT_EQ(report["processes"][0]["signal"], d.signal);
}

INSTANTIATE_TEST_SUITE_P(Signals, ReliabilityDeath,
                         ::testing::Values(Death{"segv", SIGSEGV, 7001}, Death{"abort", SIGABRT, 7002},
                                           Death{"kill9", SIGKILL, 7003}),
                         [](const auto& info) { return std::string(info.param.mode); });

// Ctrl-C: `toGroup` sends SIGINT to the whole process group as a terminal does; otherwise only
// the recorder gets it and must forward it to the program.
void interrupt(bool toGroup) {
  constexpr int64_t size = 5150;
  memledger::test::TempDir tmp;
  std::string db = tmp.file("x.db");
  Spawned rec({memledgerBinary(), "record", "-o", db, "--", kSignals, "sigint", std::to_string(size)});
  ASSERT_TRUE(rec.waitForOutput("ready\n", 30)) << rec.out() << rec.err();
  if (toGroup)
    kill(-rec.pid(), SIGINT);
  else
    kill(rec.pid(), SIGINT);
  RunResult r = rec.finish(30);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_FALSE(r.signaled) << "memledger record died of signal " << r.signal;
  EXPECT_EQ(r.status, 130) << r.err;
  EXPECT_EQ(r.out, "ready\ngot SIGINT\nbye\n");

  // The recording was finished normally, not cut off.
  EXPECT_EQ(meta(db, "complete"), "1");
  auto ims = images(db);
  ASSERT_EQ(ims.size(), 1u) << describe(ims);
  EXPECT_EQ(ims[0].exitCode, 130) << describe(ims);
  json report = reportJson(db);
  EXPECT_EQ(leaksAt(report, "after_sigint_leak"), (Amount{1, size, 1})) << leakDump(report);
}

TEST(ReliabilitySignals, CtrlCToTheProcessGroup) { interrupt(true); }

TEST(ReliabilitySignals, SigintToTheRecorderIsForwarded) { interrupt(false); }

}  // namespace
