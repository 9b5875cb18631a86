// Leaks, peak, totals, temporaries and stacks on a hand-made two-process recording.
#include "analyzer/analyzer.h"
#include "analyzer/format.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

namespace {

struct TwoProcesses {
  int64_t s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  std::string path;

  // schemaVersion 3: the sites in a real `sites` table, as version 1-3 files have them.
  explicit TwoProcesses(int schemaVersion = 4) {
    RecordingBuilder b(schemaVersion == 4 ? "two-processes.db" : "two-processes-v3.db");
    b.meta("peak_image", "1");
    b.process({.id = 1, .pid = 1000, .command = "./parent", .peak_rss = 10000, .peak_heap_bytes = 2500,
               .peak_heap_ns = 555, .peak_mmap_bytes = 4096, .peak_mmap_ns = 400});
    b.process({.id = 2, .pid = 2000, .ppid = 1000, .command = "./parent", .ended_by = "signal",
               .peak_rss = 3000, .peak_heap_bytes = 1000, .peak_heap_ns = 700, .peak_mmap_bytes = 8192,
               .peak_mmap_ns = 800});
    b.exec("UPDATE processes SET exit_code = NULL, signal = 11, forked = 1, parent_id = 1 WHERE id = 2");
    s1 = b.stack(1, {{"leaky_alloc", "/src/leak.c", 10}, {"main", "/src/main.c", 5}}, "/usr/bin/prog",
                 {{"make_node", "/src/node.h", 3}});
    s2 = b.stack(1, {{"other", "/src/o.c", 20}, {"main", "/src/main.c", 6}});
    s3 = b.stack(2, {{"child_leak", "/src/c.c", 7}, {"main", "/src/main.c", 9}});
    s4 = b.rawStack(1);
    b.site({.stack = s1, .alloc_count = 10, .alloc_bytes = 1000, .free_count = 7, .freed_bytes = 700,
            .leak_count = 3, .leak_bytes = 300, .peak_count = 5, .peak_bytes = 500, .temp_count = 2,
            .temp_bytes = 200});
    b.site({.stack = s1, .kind = "new", .alloc_count = 1, .alloc_bytes = 50, .leak_count = 1, .leak_bytes = 50});
    b.site({.stack = s2, .alloc_count = 4, .alloc_bytes = 2000, .free_count = 4, .freed_bytes = 2000,
            .peak_count = 4, .peak_bytes = 2000, .temp_count = 1, .temp_bytes = 10});
    b.site({.stack = s3, .image = 2, .alloc_count = 2, .alloc_bytes = 1000, .leak_count = 2, .leak_bytes = 1000,
            .peak_count = 2, .peak_bytes = 1000});
    b.site({.stack = s4, .kind = "mmap", .alloc_count = 1, .alloc_bytes = 4096, .leak_count = 1,
            .leak_bytes = 4096});
    b.alloc(1, s1, 0x1000, 100, 100);
    b.alloc(1, s1, 0x2000, 100, 200);
    b.alloc(1, s1, 0x3000, 100, 300);
    b.alloc(1, s1, 0x4000, 50, 150, -1, "new");
    b.alloc(1, s2, 0x5000, 500, 120, 130);
    b.alloc(2, s3, 0x1000, 500, 250);
    b.alloc(2, s3, 0x2000, 500, 260);
    b.alloc(1, s4, 0x7000000, 4096, 400, -1, "mmap");
    if (schemaVersion == 3) b.versionThree();
    path = b.finish();
  }
};

std::vector<std::pair<int64_t, std::string>> ids(const std::vector<SiteAmount>& v) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (const auto& s : v) out.emplace_back(s.stack_id, s.kind);
  return out;
}

}  // namespace

// Version 4 packs the sites (site_totals); a version 3 file's `sites` table gives the same answers.
TEST(AnalyzerLeaks, PackedSitesAnswerAsTheVersion3Table) {
  TwoProcesses v4, v3(3);
  auto a = Recording::open(v4.path), b = Recording::open(v3.path);
  EXPECT_EQ(a.info().schema_version, memledger::schema::kSchemaVersion);
  EXPECT_EQ(b.info().schema_version, 3);
  EXPECT_EQ(toJson(report(a))["leaks"], toJson(report(b))["leaks"]);
  EXPECT_EQ(toJson(report(a))["totals"], toJson(report(b))["totals"]);
  EXPECT_EQ(toJson(report(a))["peak"], toJson(report(b))["peak"]);
  EXPECT_EQ(toJson(report(a))["leaks"]["bytes"], 5446);
  ASSERT_EQ(sites(a).size(), 5u);
  ASSERT_EQ(sites(b).size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(sites(a)[i].stack_id, sites(b)[i].stack_id);
    EXPECT_EQ(sites(a)[i].kind, sites(b)[i].kind);
    EXPECT_EQ(sites(a)[i].alloc_bytes, sites(b)[i].alloc_bytes);
    EXPECT_EQ(sites(a)[i].temp_bytes, sites(b)[i].temp_bytes);
  }
}

TEST(AnalyzerLeaks, AllSitesGroupedAndSortedByBytes) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Leaks l = leaks(rec);
  EXPECT_EQ(l.count, 7);
  EXPECT_EQ(l.bytes, 5446);
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(ids(l.sites), (std::vector<P>{{t.s4, "mmap"}, {t.s3, "malloc"}, {t.s1, "malloc"}, {t.s1, "new"}}));
  EXPECT_EQ(l.sites[0].count, 1);
  EXPECT_EQ(l.sites[0].bytes, 4096);
  EXPECT_EQ(l.sites[0].pid, 1000);
  EXPECT_EQ(l.sites[1].pid, 2000);
  EXPECT_EQ(l.sites[1].count, 2);
  EXPECT_EQ(l.sites[1].bytes, 1000);
  EXPECT_EQ(l.sites[2].count, 3);
  EXPECT_EQ(l.sites[2].bytes, 300);
}

// A limit on the frames the lists may hold (the CLI's guard against a --top that would not fit in
// memory): lists within it answer as without one; past it, FilterError with the limit named,
// whatever the order the sites' stacks were read in.
TEST(AnalyzerLeaks, StackFrameLimitStopsWithAMessage) {
  TwoProcesses t;
  auto plain = Recording::open(t.path);
  const Leaks all = leaks(plain);
  size_t frames = 0;
  for (const auto& s : all.sites)
    if (s.kind != "new") frames += s.stack.size();  // s1's two kinds share one stack
  ASSERT_EQ(frames, 3u + 2u + plain.stack(t.s4).size());

  auto roomy = Recording::open(t.path);
  roomy.limitStackFrames(frames);
  EXPECT_EQ(toJson(leaks(roomy)), toJson(all));

  auto tight = Recording::open(t.path);
  tight.limitStackFrames(frames - 1);
  try {
    leaks(tight);
    ADD_FAILURE() << "no error past the limit";
  } catch (const FilterError& e) {
    EXPECT_NE(std::string(e.what()).find("more than " + std::to_string(frames - 1) + " stack frames"), std::string::npos)
        << e.what();
  }
  // The first site alone fits.
  auto first = Recording::open(t.path);
  first.limitStackFrames(frames - 1);
  Leaks one = leaks(first, {.top = 1});
  ASSERT_EQ(one.sites.size(), 1u);
  EXPECT_EQ(one.sites[0].stack_id, t.s4);
  EXPECT_EQ(one.bytes, all.bytes);
}

TEST(AnalyzerLeaks, StacksExpandInlineFramesInnermostFirst) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  const Stack& s = rec.stack(t.s1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].function, "make_node");
  EXPECT_EQ(s[0].file, "/src/node.h");
  EXPECT_EQ(s[0].line, 3);
  EXPECT_EQ(s[1].function, "leaky_alloc");
  EXPECT_EQ(s[2].function, "main");
  EXPECT_EQ(s[2].line, 5);
  EXPECT_EQ(s[0].module, "/usr/bin/prog");
  EXPECT_EQ(frameText(s[1]), "leaky_alloc (leak.c:10)");

  const Stack& raw = rec.stack(t.s4);
  ASSERT_EQ(raw.size(), 1u);
  EXPECT_FALSE(raw[0].function);
  EXPECT_FALSE(raw[0].module);
  EXPECT_EQ(frameText(raw[0]), "??");
  EXPECT_TRUE(rec.stack(999).empty());

  auto j = toJson(s);
  EXPECT_EQ(j[1]["function"], "leaky_alloc");
  EXPECT_EQ(j[1]["file"], "/src/leak.c");
  EXPECT_EQ(j[1]["line"], 10);
  EXPECT_EQ(j[1]["module"], "/usr/bin/prog");
  EXPECT_TRUE(toJson(raw)[0]["function"].is_null());
}

// ld.so's malloc/calloc wrappers forward to the hooked allocator without being hooked: the
// stack starts at the loader code that asked for memory (allocate_dtv), as for any program code.
TEST(AnalyzerLeaks, LoaderAllocatorWrappersAreNotInStacks) {
  int64_t inlined = 0, outOfLine = 0, onlyMalloc = 0, programMalloc = 0;
  std::string path;
  {
    RecordingBuilder b("loader-wrappers.db");
    b.process({.id = 1, .pid = 1000, .command = "./prog"});
    const char* ld = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
    inlined = b.stack(1, {{"allocate_dtv", "dl-tls.c", 397}, {"_dl_allocate_tls", "dl-tls.c", 600}}, ld,
                      {{"calloc", "rtld-malloc.h", 44}});
    outOfLine = b.stack(1, {{"malloc", "dl-minimal.c", 50}, {"_dl_exception_create_format", "dl-exception.c", 120}},
                        ld);
    onlyMalloc = b.stack(1, {{"malloc", nullptr, 0}}, ld);
    programMalloc = b.stack(1, {{"my_malloc", "pool.c", 7}, {"main", "main.c", 3}});
    path = b.finish();
  }
  auto rec = Recording::open(path);
  const Stack& a = rec.stack(inlined);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].function, "allocate_dtv");
  const Stack& o = rec.stack(outOfLine);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].function, "_dl_exception_create_format");
  // Never an empty stack: a lone wrapper frame stays.
  ASSERT_EQ(rec.stack(onlyMalloc).size(), 1u);
  // Only exact allocator entry names go.
  EXPECT_EQ(rec.stack(programMalloc)[0].function, "my_malloc");

  // The copy-free view the exports use gives the same frames, wrappers dropped the same way.
  std::vector<const Frame*> view;
  for (int64_t id : {inlined, outOfLine, onlyMalloc, programMalloc}) {
    rec.stackFrames(id, &view);
    const Stack& whole = rec.stack(id);
    ASSERT_EQ(view.size(), whole.size()) << "stack " << id;
    for (size_t i = 0; i < view.size(); ++i) {
      EXPECT_EQ(view[i]->function, whole[i].function) << "stack " << id << " frame " << i;
      EXPECT_EQ(view[i]->line, whole[i].line) << "stack " << id << " frame " << i;
    }
  }
}

TEST(AnalyzerLeaks, FilterByPid) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Leaks l = leaks(rec, {.pid = 1000});
  EXPECT_EQ(l.count, 5);
  EXPECT_EQ(l.bytes, 4446);
  ASSERT_EQ(l.sites.size(), 3u);
  for (const auto& s : l.sites) EXPECT_EQ(s.pid, 1000);
  EXPECT_EQ(leaks(rec, {.pid = 4242}).count, 0);
}

TEST(AnalyzerLeaks, FilterByKind) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Leaks l = leaks(rec, {.kind = "malloc"});
  EXPECT_EQ(l.count, 5);
  EXPECT_EQ(l.bytes, 1300);
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(ids(l.sites), (std::vector<P>{{t.s3, "malloc"}, {t.s1, "malloc"}}));
}

TEST(AnalyzerLeaks, FilterByTimeUsesAllocationRows) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Leaks l = leaks(rec, {.t_from_ns = 0, .t_to_ns = 200});
  EXPECT_EQ(l.count, 3);
  EXPECT_EQ(l.bytes, 250);
  using P = std::pair<int64_t, std::string>;
  ASSERT_EQ(ids(l.sites), (std::vector<P>{{t.s1, "malloc"}, {t.s1, "new"}}));
  EXPECT_EQ(l.sites[0].count, 2);
  EXPECT_EQ(l.sites[0].bytes, 200);
  // The freed block of s2 at t=120 is never a leak.
  Leaks late = leaks(rec, {.t_from_ns = 250, .t_to_ns = 400});
  EXPECT_EQ(late.count, 4);
  EXPECT_EQ(late.bytes, 100 + 1000 + 4096);
}

TEST(AnalyzerLeaks, TopKeepsTotalsOverAllSites) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Leaks l = leaks(rec, {.top = 2});
  EXPECT_EQ(l.sites.size(), 2u);
  EXPECT_EQ(l.count, 7);
  EXPECT_EQ(l.bytes, 5446);
}

TEST(AnalyzerPeak, ExactPeakOfPeakImageAndItsSites) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Peak p = peak(rec);
  EXPECT_EQ(p.bytes, 2500);
  EXPECT_EQ(p.time_ns, 555);
  EXPECT_EQ(p.pid, 1000);
  ASSERT_EQ(p.by_kind.size(), 2u);
  EXPECT_EQ(p.by_kind[0].kind, "heap");
  EXPECT_EQ(p.by_kind[0].bytes, 2500);
  EXPECT_EQ(p.by_kind[1].kind, "mmap");
  EXPECT_EQ(p.by_kind[1].bytes, 8192);  // the child's mmap peak is the larger one
  EXPECT_EQ(p.by_kind[1].time_ns, 800);
  EXPECT_EQ(p.by_kind[1].pid, 2000);
  EXPECT_EQ(p.rss_bytes, 10000);
  EXPECT_EQ(p.gap_bytes, 7500);
  EXPECT_NE(p.gap_explanation.find("above its own heap peak"), std::string::npos);
  using P = std::pair<int64_t, std::string>;
  EXPECT_EQ(ids(p.sites), (std::vector<P>{{t.s2, "malloc"}, {t.s1, "malloc"}}));
  EXPECT_EQ(p.sites[0].bytes, 2000);
  EXPECT_EQ(p.sites[0].count, 4);
  EXPECT_EQ(p.sites[1].bytes, 500);
  EXPECT_EQ(p.sites[1].count, 5);
}

TEST(AnalyzerPeak, PidFilterPicksThatProcess) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Peak p = peak(rec, {.pid = 2000});
  EXPECT_EQ(p.bytes, 1000);
  EXPECT_EQ(p.time_ns, 700);
  EXPECT_EQ(p.rss_bytes, 3000);
  ASSERT_EQ(p.sites.size(), 1u);
  EXPECT_EQ(p.sites[0].stack_id, t.s3);
}

TEST(AnalyzerTotals, SumOverAllProcessesAndKinds) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  Totals all = totals(rec);
  EXPECT_EQ(all.allocations, 18);
  EXPECT_EQ(all.frees, 11);
  EXPECT_EQ(all.allocated_bytes, 1000 + 50 + 2000 + 1000 + 4096);
  EXPECT_EQ(all.freed_bytes, 2700);
  EXPECT_EQ(all.temporary_count, 3);
  EXPECT_EQ(all.temporary_bytes, 210);
  EXPECT_EQ(totals(rec, {.pid = 2000}).allocations, 2);

  auto temps = temporaries(rec);
  ASSERT_EQ(temps.size(), 2u);
  EXPECT_EQ(temps[0].stack_id, t.s1);
  EXPECT_EQ(temps[0].count, 2);
  EXPECT_EQ(temps[0].bytes, 200);
}

TEST(AnalyzerProcesses, ListWithHowEachEnded) {
  TwoProcesses t;
  auto rec = Recording::open(t.path);
  auto ps = processes(rec);
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0].pid, 1000);
  EXPECT_EQ(ps[0].ended_by, "exit");
  EXPECT_EQ(ps[0].exit_code, 0);
  EXPECT_EQ(ps[1].pid, 2000);
  EXPECT_EQ(ps[1].ppid, 1000);
  EXPECT_EQ(ps[1].ended_by, "signal");
  EXPECT_EQ(ps[1].signal, 11);
  EXPECT_FALSE(ps[1].exit_code);
  EXPECT_TRUE(ps[1].forked);
  EXPECT_EQ(ps[1].peak_heap_bytes, 1000);
}

TEST(AnalyzerFormat, HumanUnits) {
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1536), "1.50 KiB");
  EXPECT_EQ(formatBytes(300LL << 20), "300.0 MiB");
  EXPECT_EQ(formatBytes(3LL << 30), "3.00 GiB");
  EXPECT_EQ(formatCount(1234567), "1,234,567");
  EXPECT_EQ(formatDuration(1500000000), "1.50 s");
  EXPECT_EQ(formatDuration(2500000), "2.50 ms");
}

TEST(AnalyzerFormat, TimeRanges) {
  auto r = parseTimeRange("0.5:2");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->from_ns, 500000000);
  EXPECT_EQ(r->to_ns, 2000000000);
  r = parseTimeRange("100ms:2s");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->from_ns, 100000000);
  EXPECT_EQ(r->to_ns, 2000000000);
  r = parseTimeRange("1us:");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->from_ns, 1000);
  EXPECT_FALSE(r->to_ns);
  r = parseTimeRange(":250ns");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->to_ns, 250);
  for (const char* bad : {"", ":", "2", "a:b", "1:2:3", "2s:1s", "-1:2", "1x:2", "1..2:3", "ms:2"})
    EXPECT_FALSE(parseTimeRange(bad)) << bad;
}
