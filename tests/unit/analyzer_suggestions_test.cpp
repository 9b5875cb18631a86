// The suggestions rules engine: each rule fires with its evidence, and stays silent without it.
#include "analyzer/analyzer.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;
using memledger::testing::SiteSpec;

namespace {

constexpr int64_t MiB = 1 << 20;

std::vector<Suggestion> ofKind(const std::vector<Suggestion>& all, const std::string& kind) {
  std::vector<Suggestion> out;
  for (const auto& s : all)
    if (s.kind == kind) out.push_back(s);
  return out;
}

// A recording with one site (at `function` in `file`:`line`) and a 10 MiB heap peak.
std::vector<Suggestion> suggestFor(const std::string& name, SiteSpec site, const char* function = "work",
                                   const char* file = "/src/work.c", int line = 42) {
  RecordingBuilder b(name);
  b.process({.peak_heap_bytes = 10 * MiB});
  site.stack = b.stack(1, {{function, file, line}, {"main", "/src/main.c", 3}});
  b.site(site);
  auto rec = Recording::open(b.finish());
  auto out = suggestions(rec);
  for (const auto& s : out) EXPECT_TRUE(s.evidence.is_object() && !s.evidence.empty()) << s.kind;
  return out;
}

}  // namespace

TEST(AnalyzerSuggestions, FixLeak) {
  auto s = ofKind(suggestFor("sg-leak.db", {.alloc_count = 4, .alloc_bytes = 2 * MiB, .leak_count = 4,
                                           .leak_bytes = 2 * MiB},
                             "load_table", "/src/table.c", 77),
                  "fix_leak");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].severity, "high");
  EXPECT_EQ(s[0].evidence["leak_count"], 4);
  EXPECT_EQ(s[0].evidence["leak_bytes"], 2 * MiB);
  EXPECT_EQ(s[0].message.rfind("`load_table` (table.c:77) leaked 4 blocks (2.00 MiB)", 0), 0u) << s[0].message;
  ASSERT_FALSE(s[0].stack.empty());
  EXPECT_EQ(s[0].stack[0].function, "load_table");

  // One small block: not worth a line.
  EXPECT_TRUE(ofKind(suggestFor("sg-leak-small.db", {.alloc_count = 1, .alloc_bytes = 100, .leak_count = 1,
                                                     .leak_bytes = 100}),
                     "fix_leak")
                  .empty());
}

TEST(AnalyzerSuggestions, ReuseBufferForTemporaryStorm) {
  auto s = ofKind(suggestFor("sg-temp.db", {.alloc_count = 20000, .alloc_bytes = 20000 * 256, .free_count = 20000,
                                           .freed_bytes = 20000 * 256, .temp_count = 20000,
                                           .temp_bytes = 20000 * 256, .min_size = 256, .max_size = 256},
                             "format_line"),
                  "reuse_buffer");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].evidence["temp_count"], 20000);
  EXPECT_EQ(s[0].evidence["temp_bytes"], 20000 * 256);
  EXPECT_NE(s[0].message.find("`format_line` (work.c:42) made 20,000 temporary allocations"), std::string::npos)
      << s[0].message;

  EXPECT_TRUE(ofKind(suggestFor("sg-temp-few.db", {.alloc_count = 9999, .alloc_bytes = 9999, .free_count = 9999,
                                                   .freed_bytes = 9999, .temp_count = 9999, .temp_bytes = 9999}),
                     "reuse_buffer")
                  .empty());
}

TEST(AnalyzerSuggestions, ReserveCapacityForReallocGrowth) {
  auto s = ofKind(suggestFor("sg-realloc.db", {.alloc_count = 4097, .alloc_bytes = 1000000, .free_count = 4096,
                                              .freed_bytes = 900000, .realloc_count = 4096, .min_size = 16,
                                              .max_size = 16 + 16 * 4096, .max_realloc_chain = 4096},
                             "grow_buffer", "/src/growth.c", 12),
                  "reserve_capacity");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].evidence["max_realloc_chain"], 4096);
  EXPECT_EQ(s[0].evidence["growth_bytes"], 16);
  EXPECT_EQ(s[0].message.rfind("`grow_buffer` (growth.c:12) realloc'ed one block 4,096 times, growing by 16 bytes", 0),
            0u)
      << s[0].message;
  EXPECT_NE(s[0].message.find("reserve the final capacity up front"), std::string::npos);

  EXPECT_TRUE(ofKind(suggestFor("sg-realloc-few.db", {.alloc_count = 8, .alloc_bytes = 100, .realloc_count = 7,
                                                      .min_size = 8, .max_size = 64, .max_realloc_chain = 7}),
                     "reserve_capacity")
                  .empty());
}

TEST(AnalyzerSuggestions, ObjectPoolForManySameSizeBlocks) {
  auto s = ofKind(suggestFor("sg-pool.db", {.alloc_count = 5000, .alloc_bytes = 5000 * 64, .max_live_count = 5000,
                                           .max_live_bytes = 5000 * 64, .min_size = 64, .max_size = 64},
                             "new_node"),
                  "object_pool");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].evidence["max_live_count"], 5000);
  EXPECT_EQ(s[0].evidence["size"], 64);
  EXPECT_NE(s[0].message.find("`new_node`"), std::string::npos);

  // Mixed sizes: not one object type.
  EXPECT_TRUE(ofKind(suggestFor("sg-pool-mixed.db", {.alloc_count = 5000, .alloc_bytes = 5000 * 64,
                                                     .max_live_count = 5000, .max_live_bytes = 5000 * 64,
                                                     .min_size = 32, .max_size = 128}),
                     "object_pool")
                  .empty());
}

TEST(AnalyzerSuggestions, ReuseForSameSizeChurn) {
  // Same size, freed after 1 us on average, but not "temporary" (other allocations in between).
  auto s = ofKind(suggestFor("sg-churn.db", {.alloc_count = 50000, .alloc_bytes = 50000 * 48, .free_count = 50000,
                                            .freed_bytes = 50000 * 48, .min_size = 48, .max_size = 48,
                                            .same_size_count = 50000, .lifetime_ns_sum = 50000LL * 1000}),
                  "reuse_buffer");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].evidence["mean_lifetime_ns"], 1000);
  EXPECT_EQ(s[0].evidence["same_size_count"], 50000);

  // Long-lived (10 ms each): not churn.
  EXPECT_TRUE(ofKind(suggestFor("sg-churn-slow.db", {.alloc_count = 50000, .alloc_bytes = 50000 * 48,
                                                     .free_count = 50000, .freed_bytes = 50000 * 48, .min_size = 48,
                                                     .max_size = 48, .same_size_count = 50000,
                                                     .lifetime_ns_sum = 50000LL * 10000000}),
                     "reuse_buffer")
                  .empty());
}

TEST(AnalyzerSuggestions, FreeEarlierWhenOneSiteHoldsMostOfThePeak) {
  auto s = ofKind(suggestFor("sg-peak.db", {.alloc_count = 1, .alloc_bytes = 8 * MiB, .free_count = 1,
                                           .freed_bytes = 8 * MiB, .peak_count = 1, .peak_bytes = 8 * MiB},
                             "build_index"),
                  "free_earlier");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].severity, "high");
  EXPECT_EQ(s[0].evidence["site_peak_bytes"], 8 * MiB);
  EXPECT_EQ(s[0].evidence["peak_bytes"], 10 * MiB);
  EXPECT_DOUBLE_EQ(s[0].evidence["share"].get<double>(), 0.8);
  EXPECT_NE(s[0].message.find("`build_index` (work.c:42) held 8.00 MiB at the heap peak, 80% of 10.0 MiB"),
            std::string::npos)
      << s[0].message;

  EXPECT_TRUE(ofKind(suggestFor("sg-peak-small.db", {.alloc_count = 1, .alloc_bytes = 4 * MiB, .free_count = 1,
                                                     .freed_bytes = 4 * MiB, .peak_count = 1,
                                                     .peak_bytes = 4 * MiB}),
                     "free_earlier")
                  .empty());
}

TEST(AnalyzerSuggestions, AllocatorTuningForFragmentation) {
  auto make = [](const std::string& name, int64_t heap, int64_t anon) {
    RecordingBuilder b(name);
    b.process({.peak_heap_bytes = heap});
    b.timeline({.t_ns = 0, .heap_bytes = heap, .rss_bytes = anon, .anon_bytes = anon});
    auto rec = Recording::open(b.finish());
    return ofKind(suggestions(rec), "allocator_tuning");
  };
  auto s = make("sg-frag.db", 60 * MiB, 100 * MiB);  // 40% of 100 MiB holds nothing
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].evidence["peak_ratio"].get<double>(), 0.4);
  EXPECT_EQ(s[0].evidence["resident_bytes"], 100 * MiB);
  EXPECT_EQ(s[0].evidence["unused_bytes"], 40 * MiB);
  EXPECT_TRUE(s[0].stack.empty());
  EXPECT_NE(s[0].message.find("malloc_trim"), std::string::npos);
  EXPECT_NE(s[0].message.find("MALLOC_ARENA_MAX"), std::string::npos);

  EXPECT_TRUE(make("sg-frag-small.db", 600 * 1024, 1 * MiB).empty());     // too little memory to matter
  EXPECT_TRUE(make("sg-frag-low.db", 90 * MiB, 100 * MiB).empty());       // 10%: normal overhead
}

TEST(AnalyzerSuggestions, QuietRecordingHasNone) {
  auto s = suggestFor("sg-quiet.db", {.alloc_count = 10, .alloc_bytes = 1000, .free_count = 10, .freed_bytes = 1000,
                                      .peak_count = 1, .peak_bytes = 100, .min_size = 100, .max_size = 100});
  EXPECT_TRUE(s.empty());
}

TEST(AnalyzerSuggestions, PatternsListTheirEvidence) {
  RecordingBuilder b("patterns.db");
  b.process({});
  int64_t st = b.stack(1, {{"grow", "g.c", 1}});
  b.site({.stack = st, .alloc_count = 9, .alloc_bytes = 100, .realloc_count = 8, .min_size = 8, .max_size = 72,
          .max_realloc_chain = 8});
  auto rec = Recording::open(b.finish());
  auto p = patterns(rec);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, PatternKind::ReallocGrowth);
  EXPECT_STREQ(patternName(p[0].kind), "realloc_growth");
  EXPECT_EQ(p[0].evidence["growth_bytes"], 8);
  EXPECT_EQ(p[0].site.stack_id, st);
}
