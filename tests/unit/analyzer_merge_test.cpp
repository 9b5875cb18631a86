// One site per piece of code across processes, filters checked against the recording, and
// suggestions that fire only where their evidence holds (analyzer/site_merge.cpp, filter.cpp,
// suggestions.cpp), on hand-made recordings with exact numbers.
#include "analyzer/analyzer.h"
#include "analyzer/suppressions.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;
using memledger::testing::SiteSpec;

namespace {

constexpr int64_t MiB = 1 << 20;

// The same program in several images: each image maps /usr/bin/prog at its own base (as an exec
// under ASLR does), and a stack is return addresses at fixed offsets inside it.
class SameProgram {
 public:
  explicit SameProgram(RecordingBuilder& b) : b_(b) {}
  void image(int64_t id, int64_t base) {
    bases_[id] = base;
    b_.exec("INSERT INTO modules (id, image_id, path, bias, start, end, load_ns) VALUES (" + std::to_string(id) +
            "," + std::to_string(id) + ",'/usr/bin/prog'," + std::to_string(base) + "," + std::to_string(base) +
            "," + std::to_string(base + 0x100000) + ",0)");
  }
  // Frames at these offsets (innermost first), each named function@offset.
  int64_t stack(int64_t image, const std::vector<int64_t>& offsets) {
    std::vector<int64_t> ips;
    for (int64_t off : offsets) {
      int64_t ip = ++ips_;
      b_.exec("INSERT INTO ips VALUES (" + std::to_string(ip) + "," + std::to_string(image) + "," +
              std::to_string(bases_[image] + off) + "," + std::to_string(image) + ")");
      b_.exec("INSERT INTO frames VALUES (" + std::to_string(ip) + ",0,'fn_" + std::to_string(off) +
              "','/src/p.c'," + std::to_string(off % 1000 + 1) + ")");
      ips.push_back(ip);
    }
    return b_.node(image, ips);
  }

 private:
  RecordingBuilder& b_;
  std::map<int64_t, int64_t> bases_;
  int64_t ips_ = 100000;
};

// Four processes running the same program (pids 1000-1003), each leaking 3 blocks of 500 bytes
// at the same code; process 1002 also leaks 7 bytes at another line.
std::string fourProcesses(const std::string& name) {
  RecordingBuilder b(name);
  SameProgram prog(b);
  for (int64_t i = 1; i <= 4; ++i) {
    b.process({.id = i, .pid = 999 + i, .peak_heap_bytes = 1500});
    prog.image(i, 0x550000000000 + i * 0x1000000);
    int64_t s = prog.stack(i, {0x1234, 0x2345, 0x3456});
    b.site({.stack = s, .image = i, .alloc_count = 3, .alloc_bytes = 1500, .leak_count = 3, .leak_bytes = 1500});
  }
  int64_t other = prog.stack(3, {0x1240, 0x2345, 0x3456});  // another line of the innermost function
  b.site({.stack = other, .image = 3, .alloc_count = 1, .alloc_bytes = 7, .leak_count = 1, .leak_bytes = 7});
  return b.finish();
}

std::vector<Suggestion> ofKind(const std::vector<Suggestion>& all, const std::string& kind) {
  std::vector<Suggestion> out;
  for (const auto& s : all)
    if (s.kind == kind) out.push_back(s);
  return out;
}

}  // namespace

TEST(AnalyzerMerge, TheSameLeakInFourProcessesIsOneSite) {
  auto rec = Recording::open(fourProcesses("merge-four.db"));
  Leaks l = leaks(rec);
  EXPECT_EQ(l.count, 13);
  EXPECT_EQ(l.bytes, 6007);
  ASSERT_EQ(l.site_count, 2u);
  ASSERT_EQ(l.sites.size(), 2u);
  const SiteAmount& s = l.sites[0];
  EXPECT_EQ(s.count, 12);
  EXPECT_EQ(s.bytes, 6000);
  ASSERT_EQ(s.processes.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(s.processes[i].pid, 1000 + i);  // equal amounts: by pid
    EXPECT_EQ(s.processes[i].count, 3);
    EXPECT_EQ(s.processes[i].bytes, 1500);
  }
  EXPECT_EQ(l.sites[1].bytes, 7);
  ASSERT_EQ(l.sites[1].processes.size(), 1u);
  EXPECT_EQ(l.sites[1].processes[0].pid, 1002);

  nlohmann::json j = toJson(l);
  EXPECT_EQ(j["sites"][0]["process_count"], 4);
  EXPECT_EQ(j["sites"][0]["processes"][3]["bytes"], 1500);
  EXPECT_EQ(j["sites"][0]["origin"], "program");

  // --by-process: the stored rows, one per image.
  Leaks per = leaks(rec, {.by_process = true});
  EXPECT_EQ(per.site_count, 5u);
  EXPECT_EQ(per.bytes, 6007);
  // --pid: one process, its own amounts.
  Leaks one = leaks(rec, {.pid = 1002});
  ASSERT_EQ(one.sites.size(), 2u);
  EXPECT_EQ(one.sites[0].bytes, 1500);
  EXPECT_EQ(one.bytes, 1507);
}

TEST(AnalyzerMerge, OnlyTheSameOffsetsInTheSameModuleMerge) {
  RecordingBuilder b("merge-distinct.db");
  SameProgram prog(b);
  b.process({.id = 1, .pid = 10});
  b.process({.id = 2, .pid = 11});
  prog.image(1, 0x10000000);
  prog.image(2, 0x20000000);
  int64_t a = prog.stack(1, {0x100, 0x200});
  int64_t c = prog.stack(2, {0x100, 0x201});  // same innermost frame, other caller: another site
  b.site({.stack = a, .image = 1, .alloc_count = 1, .alloc_bytes = 64, .leak_count = 1, .leak_bytes = 64});
  b.site({.stack = c, .image = 2, .alloc_count = 1, .alloc_bytes = 64, .leak_count = 1, .leak_bytes = 64});
  // Same code, another kind: another site.
  int64_t d = prog.stack(2, {0x100, 0x200});
  b.site({.stack = d, .kind = "new", .image = 2, .alloc_count = 1, .alloc_bytes = 64, .leak_count = 1, .leak_bytes = 64});
  auto rec = Recording::open(b.finish());
  EXPECT_EQ(leaks(rec).site_count, 3u);
}

TEST(AnalyzerMerge, SuggestionsAreNeverRepeatedAcrossProcesses) {
  RecordingBuilder b("merge-suggest.db");
  SameProgram prog(b);
  for (int64_t i = 1; i <= 3; ++i) {
    b.process({.id = i, .pid = 50 + i, .peak_heap_bytes = MiB});
    prog.image(i, 0x40000000 * i);
    int64_t leak = prog.stack(i, {0x10, 0x20});
    b.site({.stack = leak, .image = i, .alloc_count = 20, .alloc_bytes = 20 * 4096, .leak_count = 20,
            .leak_bytes = 20 * 4096});
    int64_t storm = prog.stack(i, {0x30, 0x20});
    b.site({.stack = storm, .image = i, .alloc_count = 20000, .alloc_bytes = 20000 * 64, .free_count = 20000,
            .freed_bytes = 20000 * 64, .temp_count = 20000, .temp_bytes = 20000 * 64, .min_size = 64,
            .max_size = 64, .same_size_count = 19999, .lifetime_ns_sum = 20000 * 100});
  }
  auto rec = Recording::open(b.finish());
  auto all = suggestions(rec);
  auto fix = ofKind(all, "fix_leak");
  ASSERT_EQ(fix.size(), 1u);
  EXPECT_EQ(fix[0].evidence["leak_count"], 60);
  EXPECT_EQ(fix[0].evidence["processes"], 3);
  EXPECT_NE(fix[0].message.find("in 3 processes"), std::string::npos) << fix[0].message;
  EXPECT_EQ(fix[0].confidence, "high");
  auto reuse = ofKind(all, "reuse_buffer");
  ASSERT_EQ(reuse.size(), 1u);  // the storm, once; the churn rule stays quiet on the same site
  EXPECT_EQ(reuse[0].evidence["temp_count"], 60000);
  EXPECT_EQ(reuse[0].evidence["processes"], 3);
  for (const auto& s : all) {
    EXPECT_FALSE(s.confidence.empty()) << s.kind;
    EXPECT_FALSE(s.confidence_reason.empty()) << s.kind;
  }
  // Per process the sites are three, the advice still one line, which says so.
  auto perProcess = ofKind(suggestions(rec, {.by_process = true}), "fix_leak");
  ASSERT_EQ(perProcess.size(), 1u);
  EXPECT_EQ(perProcess[0].evidence["leak_count"], 20);
  EXPECT_EQ(perProcess[0].evidence["same_code_sites"], 3);
  EXPECT_NE(perProcess[0].message.find("2 more sites in the same code"), std::string::npos) << perProcess[0].message;
}

TEST(AnalyzerFilter, UnknownKindsPidsAndTimesAreErrors) {
  RecordingBuilder b("filter-check.db");
  b.process({.id = 1, .pid = 4242, .end_ns = 1000000000});
  auto rec = Recording::open(b.finish());
  auto message = [&](const Filter& f) -> std::string {
    try {
      validateFilter(rec, f);
    } catch (const FilterError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message({.kind = "foo"}), "memledger: unknown kind 'foo' (known: malloc, new, mmap, custom, device, pinned, managed, pool, vmm, torch_block, pyobject)");
  EXPECT_EQ(message({.kind = "MALLOC"}), "memledger: unknown kind 'MALLOC' (known: malloc, new, mmap, custom, device, pinned, managed, pool, vmm, torch_block, pyobject)");
  EXPECT_EQ(message({.pid = 1}), "memledger: no process with pid 1 in '" + rec.info().path + "'");
  EXPECT_EQ(message({.t_from_ns = 5000000000, .t_to_ns = 9000000000}),
            "memledger: time range 5.00 s to 9.00 s is outside the recording '" + rec.info().path + "' (0 to 1.00 s)");
  EXPECT_EQ(message({.t_from_ns = 2000000000}),
            "memledger: time range 2.00 s to the end is outside the recording '" + rec.info().path + "' (0 to 1.00 s)");
  // What the recording has passes; a range that runs past the end is cut there.
  for (const std::string& k : knownKinds()) EXPECT_EQ(message({.kind = k}), "") << k;
  EXPECT_EQ(message({.pid = 4242}), "");
  EXPECT_EQ(message({.t_from_ns = 500000000, .t_to_ns = 9000000000}), "");
  EXPECT_THROW(report(rec, {.kind = "foo"}), FilterError);
  // A filtered report says which of its numbers the filter does not apply to.
  Report r = report(rec, {.kind = "malloc"});
  ASSERT_EQ(r.unfiltered.size(), 1u);
  EXPECT_NE(r.unfiltered[0].find("not by kind"), std::string::npos);
  EXPECT_TRUE(report(rec).unfiltered.empty());
  EXPECT_FALSE(toJson(report(rec)).contains("filter"));

  // A recorder that was killed may not know where the run ended: its times are not judged.
  RecordingBuilder cut("filter-incomplete.db", /*complete=*/false);
  cut.process({.id = 1, .pid = 4242, .end_ns = 1000000000});
  auto partial = Recording::open(cut.finish());
  EXPECT_NO_THROW(validateFilter(partial, {.t_from_ns = 5000000000}));
  EXPECT_THROW(validateFilter(partial, {.pid = 1}), FilterError);
  EXPECT_EQ(toJson(r)["filter"]["kind"], "malloc");
}

TEST(AnalyzerSuggestions, GeometricGrowthGetsNoReserveCapacityButConstantStepsDo) {
  auto suggest = [](const std::string& name, SiteSpec site) {
    RecordingBuilder b(name);
    b.process({.peak_heap_bytes = 10 * MiB});
    site.stack = b.stack(1, {{"grow", "/src/g.c", 7}, {"main", "/src/main.c", 3}});
    b.site(site);
    auto rec = Recording::open(b.finish());
    return std::make_pair(suggestions(rec), patterns(rec));
  };
  // Doubling as realloc_doubling.c records it: 16 reallocs of one block at the loop's line,
  // sizes 32 B .. 1 MiB, their sum 2^21 - 32.
  auto [doubling, doublingPatterns] =
      suggest("sg-doubling.db", {.alloc_count = 16, .alloc_bytes = (int64_t{1} << 21) - 32, .free_count = 16,
                                 .freed_bytes = (int64_t{1} << 21) - 32, .realloc_count = 16, .min_size = 32,
                                 .max_size = MiB, .max_realloc_chain = 16});
  EXPECT_TRUE(ofKind(doubling, "reserve_capacity").empty());
  ASSERT_EQ(doublingPatterns.size(), 1u);  // still a pattern, with the factor that clears it
  EXPECT_DOUBLE_EQ(doublingPatterns[0].evidence["growth_factor"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(doublingPatterns[0].evidence["sum_vs_linear"].get<double>(), 2097120.0 / (16 * (32 + 1048576) / 2));

  // Many blocks, each doubled 10 times (perl's bucket arrays): the longest chain's factor is 2
  // and the sizes crowd at the small end (sum_vs_linear 0.36).
  // 1000 blocks, each 8 B doubled to 8 KiB: 11 sizes summing to 16376 bytes per block.
  auto [buckets, bp] = suggest("sg-buckets.db", {.alloc_count = 11000, .alloc_bytes = 1000 * 16376,
                                                 .free_count = 11000, .realloc_count = 10000, .min_size = 8,
                                                 .max_size = 8 << 10, .max_realloc_chain = 10});
  EXPECT_TRUE(ofKind(buckets, "reserve_capacity").empty());

  // A constant step from a small start looks geometric by its end sizes (16 -> 8208 in 8 steps
  // of 1 KiB: factor 2.2), but its sizes are evenly spaced (sum_vs_linear 1): still advised.
  int64_t sum = 0;
  for (int k = 0; k <= 8; ++k) sum += 16 + 1024 * k;
  auto [steps, sp] = suggest("sg-steps.db", {.alloc_count = 9, .alloc_bytes = sum, .free_count = 9,
                                             .realloc_count = 8, .min_size = 16, .max_size = 16 + 8 * 1024,
                                             .max_realloc_chain = 8});
  auto reserve = ofKind(steps, "reserve_capacity");
  ASSERT_EQ(reserve.size(), 1u);
  EXPECT_EQ(reserve[0].confidence, "high");
  EXPECT_EQ(reserve[0].evidence["growth_bytes"], 1024);

  // realloc_growth.c: 16 bytes a step, 10,000 times.
  int64_t linear = 0;
  for (int k = 1; k <= 10000; ++k) linear += 16 * k;
  auto [lin, lp] = suggest("sg-linear.db", {.alloc_count = 10000, .alloc_bytes = linear, .free_count = 10000,
                                            .realloc_count = 9999, .min_size = 16, .max_size = 160000,
                                            .max_realloc_chain = 9999});
  ASSERT_EQ(ofKind(lin, "reserve_capacity").size(), 1u);
  EXPECT_EQ(ofKind(lin, "reserve_capacity")[0].confidence, "high");
  EXPECT_DOUBLE_EQ(ofKind(lin, "reserve_capacity")[0].evidence["sum_vs_linear"].get<double>(), 1.0);

  // Two sizes at the site (the chain was made elsewhere): its growth cannot be told, no advice.
  auto [two, tp] = suggest("sg-two.db", {.alloc_count = 2, .alloc_bytes = 9728, .free_count = 2, .realloc_count = 2,
                                         .min_size = 3648, .max_size = 6080, .max_realloc_chain = 16});
  EXPECT_TRUE(ofKind(two, "reserve_capacity").empty());
  // Five evenly spaced sizes, but the block's chain of 15 made most of its steps at other sites
  // (CPython's list_resize reached from other callers): a sample of the growth, no advice.
  auto [sampled, smp] = suggest("sg-sampled.db", {.alloc_count = 5, .alloc_bytes = 15840, .free_count = 5,
                                                  .realloc_count = 5, .min_size = 1024, .max_size = 5376,
                                                  .max_realloc_chain = 15});
  EXPECT_TRUE(ofKind(sampled, "reserve_capacity").empty());
  EXPECT_NE(ofKind(lin, "reserve_capacity")[0].message.find("or grow geometrically"), std::string::npos);
}

TEST(AnalyzerSuggestions, RuntimeBlocksAreLabelledNotBlamed) {
  RecordingBuilder b("sg-runtime.db");
  b.process({.peak_heap_bytes = MiB});
  int64_t stdio = b.stack(1, {{"_IO_file_doallocate", nullptr, 0}, {"_IO_doallocbuf", nullptr, 0}, {"printf"},
                              {"main", "/src/main.c", 3}},
                          "/lib/x86_64-linux-gnu/libc.so.6");
  int64_t arena = b.stack(1, {{"_PyObject_ArenaMmap", nullptr, 0}, {"new_arena"}, {"main"}}, "/usr/bin/python3.11");
  int64_t own = b.stack(1, {{"leak_here", "/src/p.c", 5}, {"main", "/src/main.c", 9}});
  b.site({.stack = stdio, .alloc_count = 1, .alloc_bytes = 4096, .leak_count = 1, .leak_bytes = 4096});
  b.site({.stack = arena, .kind = "mmap", .alloc_count = 1, .alloc_bytes = MiB, .leak_count = 1, .leak_bytes = MiB});
  b.site({.stack = own, .alloc_count = 1, .alloc_bytes = 2048, .leak_count = 1, .leak_bytes = 2048});
  auto rec = Recording::open(b.finish());
  Leaks l = leaks(rec);
  ASSERT_EQ(l.sites.size(), 3u);
  EXPECT_EQ(l.sites[0].origin, kOriginAllocator);
  EXPECT_NE(l.sites[0].origin_reason.find("Python"), std::string::npos) << l.sites[0].origin_reason;
  EXPECT_EQ(l.sites[1].origin, kOriginRuntime);
  EXPECT_NE(l.sites[1].origin_reason.find("stdio"), std::string::npos) << l.sites[1].origin_reason;
  EXPECT_EQ(l.sites[2].origin, kOriginProgram);
  auto fix = ofKind(suggestions(rec), "fix_leak");
  ASSERT_EQ(fix.size(), 1u);
  EXPECT_EQ(fix[0].message.rfind("`leak_here`", 0), 0u) << fix[0].message;
  EXPECT_EQ(fix[0].confidence, "medium");  // one block: may be kept on purpose
  // check's built-in list is the same classification: the stdio entry keeps its line.
  SuppressionList list;
  list.addDefaults();
  ASSERT_NE(list.match(l.sites[1].stack), nullptr);
  EXPECT_EQ(list.match(l.sites[1].stack)->origin, "built-in:2");
}
