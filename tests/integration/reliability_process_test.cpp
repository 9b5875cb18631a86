// Processes under recording (samples/rel_fork.c): fork from a multithreaded program, fork without
// exec, posix_spawn, vfork+exec, an exec chain through sh and python, and a daemon. Every process
// must be a row of `processes` linked to its parent, with its own exact leaks.
#include <gtest/gtest.h>

#include "reliability_support.h"

namespace {

using namespace memledger::reltest;
using memledger::test::record;
using memledger::test::reportJson;

const std::string kFork = relSample("rel_fork");

const Image* find(const std::vector<Image>& ims, int64_t id) {
  for (const auto& im : ims)
    if (im.id == id) return &im;
  return nullptr;
}

const Image* root(const std::vector<Image>& ims) {
  const Image* found = nullptr;
  for (const auto& im : ims)
    if (!im.parent) {
      if (found) return nullptr;  // two roots: a parent link is missing
      found = &im;
    }
  return found;
}

// A parent link is right when the parent is the process that forked/spawned this one (its pid is
// our ppid) or the image this one exec'd from (same pid).
void expectParentLinksConsistent(const std::vector<Image>& ims) {
  for (const auto& im : ims) {
    if (!im.parent) continue;
    const Image* parent = find(ims, *im.parent);
    ASSERT_NE(parent, nullptr) << "image " << im.id << " names a missing parent\n" << describe(ims);
    EXPECT_TRUE(parent->pid == im.ppid || parent->pid == im.pid)
        << "image " << im.id << " parent " << parent->id << "\n" << describe(ims);
  }
}

TEST(ReliabilityProcess, ForkFromMultithreadedProgramNeverDeadlocks) {
  memledger::test::RunOptions options;
  options.timeoutSeconds = 90;
  auto rec = record(kFork, {"mtfork", "50"}, options);
  ASSERT_EQ(rec.program.status, 0) << rec.program.out << rec.program.err;
  EXPECT_EQ(rec.program.out, "mtfork ok 50\n");

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 51u) << describe(ims);
  const Image* parent = root(ims);
  ASSERT_NE(parent, nullptr) << describe(ims);
  EXPECT_EQ(parent->exitCode, 0);
  for (const auto& im : ims) {
    if (&im == parent) continue;
    EXPECT_TRUE(im.forked) << describe({im});
    EXPECT_EQ(im.parent, parent->id) << describe({im});
    EXPECT_EQ(im.ppid, parent->pid) << describe({im});
    EXPECT_EQ(im.endedBy, "exit") << describe({im});
    EXPECT_EQ(im.exitCode, 0) << describe({im});
  }
}

TEST(ReliabilityProcess, ForkWithoutExecOnlyTheChildLeaks) {
  constexpr int64_t size = 6061;
  auto rec = record(kFork, {"leakchild", std::to_string(size)});
  ASSERT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "leakchild status 0\n");

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 2u) << describe(ims);
  const Image* parent = root(ims);
  ASSERT_NE(parent, nullptr) << describe(ims);
  const Image& child = ims[0].id == parent->id ? ims[1] : ims[0];
  EXPECT_TRUE(child.forked);
  EXPECT_EQ(child.parent, parent->id);
  EXPECT_EQ(child.exitCode, 0);

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "child_leak", child.pid), (Amount{1, size, 1})) << leakDump(report);
  EXPECT_EQ(leaksAt(report, "child_leak", parent->pid), (Amount{})) << leakDump(report);
  // The child never freed the block it inherited, and the parent freed its own: a fork child
  // starts with an empty live set, so the inherited block is nobody's leak.
  EXPECT_EQ(leaksAt(report, "inherited_block"), (Amount{})) << leakDump(report);
}

// posix_spawn and vfork+exec start a fresh image of this same program as "leaf SIZE 7".
void expectSpawnedLeaf(const std::string& how, int64_t size) {
  auto rec = record(kFork, {how, std::to_string(size)});
  EXPECT_EQ(rec.program.status, 7) << rec.program.err;
  EXPECT_EQ(rec.program.out, "");

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 2u) << describe(ims);
  const Image* parent = root(ims);
  ASSERT_NE(parent, nullptr) << describe(ims);
  const Image& leaf = ims[0].id == parent->id ? ims[1] : ims[0];
  EXPECT_EQ(leaf.command, "rel_fork leaf " + std::to_string(size) + " 7") << describe(ims);
  EXPECT_EQ(leaf.parent, parent->id) << describe(ims);
  EXPECT_EQ(leaf.ppid, parent->pid) << describe(ims);
  EXPECT_EQ(leaf.exitCode, 7) << describe(ims);
  EXPECT_EQ(parent->exitCode, 7) << describe(ims);

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "leaf_leak", leaf.pid), (Amount{1, size, 1})) << leakDump(report);
  EXPECT_EQ(leaksAt(report, "leaf_leak"), (Amount{1, size, 1})) << leakDump(report);
}

TEST(ReliabilityProcess, PosixSpawnedChildIsRecorded) { expectSpawnedLeaf("spawn", 3131); }

TEST(ReliabilityProcess, VforkExecChildIsRecorded) { expectSpawnedLeaf("vfork", 3232); }

TEST(ReliabilityProcess, ExecChainThroughShellAndPython) {
  constexpr int64_t size = 3434;
  // sh -> /usr/bin/python3 -> subprocess -> rel_fork leaf; the leaf's status 7 comes back up.
  std::string python = "import subprocess, sys; sys.exit(subprocess.run(['" + kFork + "', 'leaf', '" +
                       std::to_string(size) + "', '7']).returncode)";
  auto rec = record("/bin/sh", {"-c", "/usr/bin/python3 -c \"" + python + "\"; exit $?"});
  EXPECT_EQ(rec.program.status, 7) << rec.program.err;
  EXPECT_EQ(rec.program.out, "");

  auto ims = images(rec.db);
  expectParentLinksConsistent(ims);
  const Image* r = root(ims);
  ASSERT_NE(r, nullptr) << "exactly one image without a parent\n" << describe(ims);
  EXPECT_EQ(r->command.rfind("/bin/sh -c ", 0), 0u) << describe(ims);

  const Image* leaf = nullptr;
  for (const auto& im : ims)
    if (im.command == kFork + " leaf " + std::to_string(size) + " 7") leaf = &im;
  ASSERT_NE(leaf, nullptr) << describe(ims);
  EXPECT_EQ(leaf->exitCode, 7) << describe(ims);

  // Walking up from the leaf passes through python and ends at the shell.
  bool sawPython = false;
  const Image* at = leaf;
  for (int hops = 0; at->parent && hops < 10; hops++) {
    at = find(ims, *at->parent);
    ASSERT_NE(at, nullptr) << describe(ims);
    if (at->command.rfind("/usr/bin/python3 -c ", 0) == 0) sawPython = true;
  }
  EXPECT_TRUE(sawPython) << describe(ims);
  EXPECT_EQ(at, r) << describe(ims);
  // Every image's end is known: nothing is left 'running' in a finished recording.
  for (const auto& im : ims) EXPECT_TRUE(im.endedBy.has_value()) << describe({im});

  // Every site: python's leaks are what was live when its interpreter started finalizing
  // (docs/python.md), hundreds of sites that would push the leaf's out of the default top 20.
  json report = reportJson(rec.db, {"--top", "2000"});
  EXPECT_EQ(leaksAt(report, "leaf_leak", leaf->pid), (Amount{1, size, 1})) << leakDump(report);
}

TEST(ReliabilityProcess, DaemonOutlivingItsParentIsRecorded) {
  constexpr int64_t size = 3535;
  memledger::test::TempDir tmp;
  std::string marker = tmp.file("daemon.done");
  auto rec = record(kFork, {"daemon", std::to_string(size), marker});
  EXPECT_EQ(rec.program.status, 0) << rec.program.err;
  EXPECT_EQ(rec.program.out, "parent exits\n");
  // The recording is only whole once the daemon ended: the recorder waits for it.
  ASSERT_TRUE(std::filesystem::exists(marker)) << "memledger record returned before the daemon ended";
  EXPECT_EQ(readFile(marker), "daemon done\n");

  auto ims = images(rec.db);
  ASSERT_EQ(ims.size(), 3u) << describe(ims);
  expectParentLinksConsistent(ims);
  const Image* first = root(ims);
  ASSERT_NE(first, nullptr) << describe(ims);
  const Image* middle = nullptr;
  const Image* daemon = nullptr;
  for (const auto& im : ims) {
    if (im.parent == first->id) middle = &im;
  }
  ASSERT_NE(middle, nullptr) << describe(ims);
  for (const auto& im : ims) {
    if (im.parent == middle->id) daemon = &im;
  }
  ASSERT_NE(daemon, nullptr) << describe(ims);
  EXPECT_TRUE(middle->forked);
  EXPECT_TRUE(daemon->forked);
  EXPECT_EQ(first->exitCode, 0) << describe(ims);
  EXPECT_EQ(middle->exitCode, 0) << describe(ims);
  EXPECT_EQ(daemon->exitCode, 0) << describe(ims);
  EXPECT_EQ(daemon->endedBy, "exit") << describe(ims);

  json report = reportJson(rec.db);
  EXPECT_EQ(leaksAt(report, "daemon_leak", daemon->pid), (Amount{1, size, 1})) << leakDump(report);
}

}  // namespace
