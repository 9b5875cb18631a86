// Recording across module unloads, anonymous mmap, a fork/exec tree and a crash: the samples
// dlopen_leak, mmap_leak, fork_tree and segv_leak (ground truth in their header comments).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "harness.h"
#include "site_expect.h"

using namespace memledger::test;

TEST(DlopenLeak, LeakInAnUnloadedLibraryIsNamedWithFileAndLine) {
  const Recorded& rec = recordSampleUnchanged("dlopen_leak");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  const json& sites = report["leaks"]["sites"];
  ASSERT_TRUE(hasOneSite(sites, "dl_leaker", 1, 4242, "malloc"));
  const json frame = sitesWith(sites, "dl_leaker")[0]["stack"][0];
  ASSERT_TRUE(frame["module"].is_string()) << frame.dump();
  std::string module = frame["module"].get<std::string>();
  EXPECT_TRUE(module.ends_with("/libdlleak.so")) << module;
  EXPECT_TRUE(innermostAt(sites, "dl_leaker", "samples/libdlleak.c",
                          lineOf(sourceDir() + "/samples/libdlleak.c", "char* p = malloc(4242);")));
  // The caller in the main executable is still resolved after the library went away.
  EXPECT_TRUE(stackHas(sitesWith(sites, "dl_leaker")[0]["stack"], "main"));
  EXPECT_TRUE(leaksAccountedFor(report, "dlopen_leak", {}));
}

TEST(MmapLeak, UnmappedRangesAreSubtractedExactly) {
  const Recorded& rec = recordSampleUnchanged("mmap_leak");
  EXPECT_EQ(rec.program.status, 0);
  const json& report = reportOnce(rec);
  const json& sites = report["leaks"]["sites"];
  // Region 0 unmapped, region 1 half unmapped, region 2 kept: 64 KiB + 32 KiB in 2 regions.
  EXPECT_TRUE(hasOneSite(sites, "map_regions", 2, 64 * 1024 + 32 * 1024, "mmap"));
  EXPECT_TRUE(hasNoSite(sites, "unmap_some"));
  EXPECT_TRUE(leaksAccountedFor(report, "mmap_leak", {"map_regions"}));
  EXPECT_GE(report["leaks"]["bytes"].get<int64_t>(), 98304);
  // All three regions were mapped at once before any was unmapped.
  EXPECT_EQ(report["peak"]["by_kind"]["mmap"]["bytes"], 3 * 64 * 1024) << report["peak"].dump().substr(0, 600);
}

namespace {

// The fork_tree sample's processes, told apart by how each ended.
struct Tree {
  json root;
  std::vector<json> children;  // ppid == root pid
};

Tree treeOf(const json& report) {
  std::set<int64_t> pids;
  for (const auto& p : report["processes"]) pids.insert(p["pid"].get<int64_t>());
  Tree tree;
  auto roots = processesWhere(report, [&](const json& p) { return !pids.count(p["ppid"].get<int64_t>()); });
  if (roots.size() != 1) throw std::runtime_error("expected one root process: " + report["processes"].dump());
  tree.root = roots[0];
  tree.children = processesWhere(report, [&](const json& p) { return p["ppid"] == tree.root["pid"]; });
  return tree;
}

std::vector<json> childrenWhere(const Tree& tree, const std::function<bool(const json&)>& pred) {
  std::vector<json> out;
  for (const auto& c : tree.children)
    if (pred(c)) out.push_back(c);
  return out;
}

bool exitedWith(const json& p, int code) {
  return p.value("ended_by", json()) == "exit" && p.value("exit_code", json()) == code;
}

}  // namespace

TEST(ForkTree, EveryProcessIsARowWithItsParentAndExitStatus) {
  const Recorded& rec = recordSampleUnchanged("fork_tree");
  ASSERT_EQ(rec.program.status, 0) << rec.program.out << rec.program.err;
  const json& report = reportOnce(rec);
  Tree tree = treeOf(report);
  // The parent, children 1 and 2, child 3 before its exec, and the image child 3 exec'd.
  EXPECT_EQ(report["processes"].size(), 5u) << report["processes"].dump(1);
  EXPECT_TRUE(exitedWith(tree.root, 0)) << tree.root.dump();
  EXPECT_EQ(tree.children.size(), 4u) << report["processes"].dump(1);

  auto exit0 = childrenWhere(tree, [](const json& p) { return exitedWith(p, 0); });
  auto exit3 = childrenWhere(tree, [](const json& p) { return exitedWith(p, 3); });
  auto exit5 = childrenWhere(tree, [](const json& p) { return exitedWith(p, 5); });
  auto execd = childrenWhere(tree, [](const json& p) { return p.value("ended_by", json()) == "exec"; });
  ASSERT_EQ(exit0.size(), 1u) << report["processes"].dump(1);
  ASSERT_EQ(exit3.size(), 1u) << report["processes"].dump(1);
  ASSERT_EQ(exit5.size(), 1u) << report["processes"].dump(1);
  ASSERT_EQ(execd.size(), 1u) << report["processes"].dump(1);
  // exec keeps the pid: the exec'd image is the same process as child 3 before it.
  EXPECT_EQ(exit5[0]["pid"], execd[0]["pid"]);
  EXPECT_NE(exit5[0]["command"].get<std::string>().find("--exec-child"), std::string::npos) << exit5[0].dump();
  EXPECT_EQ(execd[0]["command"].get<std::string>().find("--exec-child"), std::string::npos) << execd[0].dump();
  for (const json* p : {&exit0[0], &exit3[0], &execd[0]}) EXPECT_NE((*p)["pid"], tree.root["pid"]);
}

TEST(ForkTree, EachProcessLeaksOnlyWhatItAllocated) {
  const json& report = reportOnce(recordSampleUnchanged("fork_tree"));
  Tree tree = treeOf(report);
  const json& sites = report["leaks"]["sites"];
  auto pidOf = [&](int code) {
    auto found = childrenWhere(tree, [&](const json& p) { return exitedWith(p, code); });
    return found.size() == 1 ? found[0]["pid"] : json();
  };
  // parent_leak ran before the forks: the children inherit the block but do not own it, so it
  // is exactly one site, of the parent.
  ASSERT_TRUE(hasOneSite(sites, "parent_leak", 1, 111, "malloc", false));
  EXPECT_EQ(sitesWith(sites, "parent_leak")[0]["pid"], tree.root["pid"]);
  ASSERT_TRUE(hasOneSite(sites, "child_exit_leak", 1, 222, "malloc", false));
  EXPECT_EQ(sitesWith(sites, "child_exit_leak")[0]["pid"], pidOf(0));
  ASSERT_TRUE(hasOneSite(sites, "child_underscore_exit_leak", 1, 333, "malloc", false));
  EXPECT_EQ(sitesWith(sites, "child_underscore_exit_leak")[0]["pid"], pidOf(3));
  ASSERT_TRUE(hasOneSite(sites, "exec_child_leak", 1, 444, "malloc", false));
  EXPECT_EQ(sitesWith(sites, "exec_child_leak")[0]["pid"], pidOf(5));
  // The shared helper `leak` is the innermost frame of all four.
  for (const char* fn : {"parent_leak", "child_exit_leak", "child_underscore_exit_leak", "exec_child_leak"})
    EXPECT_EQ(innermost(sitesWith(sites, fn)[0]), "leak") << fn;
  EXPECT_GE(report["leaks"]["bytes"].get<int64_t>(), 111 + 222 + 333 + 444);
  EXPECT_TRUE(leaksAccountedFor(report, "fork_tree",
                                {"parent_leak", "child_exit_leak", "child_underscore_exit_leak", "exec_child_leak"}));
}

TEST(SegvLeak, LeaksOfACrashedProgramAreKept) {
  const Recorded& rec = recordSampleUnchanged("segv_leak");
  EXPECT_EQ(rec.program.status, 139);
  EXPECT_EQ(rec.program.out, "segv_leak: about to crash\n");
  const json& report = reportOnce(rec);
  EXPECT_TRUE(hasOneSite(report["leaks"]["sites"], "leak_pages", 5, 5 * 4096, "malloc"));
  EXPECT_TRUE(leaksAccountedFor(report, "segv_leak", {"leak_pages"}));
  ASSERT_EQ(report["processes"].size(), 1u) << report["processes"].dump();
  const json& proc = report["processes"][0];
  EXPECT_EQ(proc["ended_by"], "signal") << proc.dump();
  EXPECT_EQ(proc["signal"], 11) << proc.dump();
  EXPECT_TRUE(proc["exit_code"].is_null()) << proc.dump();
}
