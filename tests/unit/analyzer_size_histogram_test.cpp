// Allocation sizes in power-of-two buckets from hand-made recordings: sites of one bucket from
// site_totals alone, sites spanning buckets split by their allocation rows (or estimated at their
// mean size without them), a time range from the rows.
#include "analyzer/size_histogram.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

TEST(AnalyzerSizeHistogram, BucketIndex) {
  EXPECT_EQ(sizeBucketIndex(0), 0);
  EXPECT_EQ(sizeBucketIndex(1), 0);
  EXPECT_EQ(sizeBucketIndex(2), 1);
  EXPECT_EQ(sizeBucketIndex(3), 1);
  EXPECT_EQ(sizeBucketIndex(1024), 10);
  EXPECT_EQ(sizeBucketIndex(2047), 10);
  EXPECT_EQ(sizeBucketIndex(uint64_t(1) << 40), 40);
}

TEST(AnalyzerSizeHistogram, SitesSplitByTheirRows) {
  RecordingBuilder b("sizes.db");
  b.process({});
  int64_t one = b.stack(1, {{"one_size", "a.c", 1}});
  int64_t two = b.stack(1, {{"two_sizes", "a.c", 2}});
  // one_size: 5 x 256 B (min = max: no rows needed)
  b.site({.stack = one, .alloc_count = 5, .alloc_bytes = 1280, .min_size = 256, .max_size = 256});
  // two_sizes: 2 x 100 B and 1 x 5000 B, every block with a row
  b.site({.stack = two, .alloc_count = 3, .alloc_bytes = 5200, .min_size = 100, .max_size = 5000});
  b.alloc(1, two, 0x1000, 100, 10, 20);
  b.alloc(1, two, 0x2000, 100, 30, 40);
  b.alloc(1, two, 0x3000, 5000, 50);
  auto rec = Recording::open(b.finish());
  SizeHistogram h = sizeHistogram(rec);
  ASSERT_EQ(h.buckets.size(), 3u);
  EXPECT_EQ(h.buckets[0].from, 64u);
  EXPECT_EQ(h.buckets[0].to, 127u);
  EXPECT_EQ(h.buckets[0].count, 2);
  EXPECT_EQ(h.buckets[0].bytes, 200);
  ASSERT_EQ(h.buckets[0].sites.size(), 1u);
  EXPECT_EQ(h.buckets[0].sites[0].stack_id, two);
  ASSERT_FALSE(h.buckets[0].sites[0].stack.empty());
  EXPECT_EQ(h.buckets[0].sites[0].stack[0].function.value_or(""), "two_sizes");
  EXPECT_EQ(h.buckets[1].from, 256u);
  EXPECT_EQ(h.buckets[1].count, 5);
  EXPECT_EQ(h.buckets[1].sites[0].stack_id, one);
  EXPECT_EQ(h.buckets[2].from, 4096u);
  EXPECT_EQ(h.buckets[2].count, 1);
  EXPECT_EQ(h.buckets[2].bytes, 5000);
  EXPECT_EQ(h.count, 8);
  EXPECT_EQ(h.bytes, 6480);
  EXPECT_EQ(h.estimated_count, 0);

  // A time range counts the rows made in it.
  SizeHistogram range = sizeHistogram(rec, {.t_from_ns = 25, .t_to_ns = 60});
  ASSERT_EQ(range.buckets.size(), 2u);
  EXPECT_EQ(range.buckets[0].count, 1);
  EXPECT_EQ(range.buckets[1].bytes, 5000);
  EXPECT_EQ(range.count, 2);
}

TEST(AnalyzerSizeHistogram, WithoutRowsAtTheMeanSizeAndCounted) {
  RecordingBuilder b("sizes-folded.db");
  b.meta("allocation_rows", "leaks");
  b.process({});
  int64_t two = b.stack(1, {{"two_sizes", "a.c", 2}});
  int64_t other = b.stack(1, {{"other", "a.c", 3}});
  b.site({.stack = two, .alloc_count = 4, .alloc_bytes = 4000, .min_size = 10, .max_size = 3000});
  b.site({.stack = other, .alloc_count = 1, .alloc_bytes = 600, .min_size = 600, .max_size = 600});
  auto rec = Recording::open(b.finish());
  SizeHistogram h = sizeHistogram(rec, {}, 1);
  ASSERT_EQ(h.buckets.size(), 1u);
  EXPECT_EQ(h.buckets[0].from, 512u);  // mean 1000 B
  EXPECT_EQ(h.buckets[0].count, 5);
  EXPECT_EQ(h.buckets[0].site_count, 2u);
  ASSERT_EQ(h.buckets[0].sites.size(), 1u);  // top 1: the site of most blocks
  EXPECT_EQ(h.buckets[0].sites[0].stack_id, two);
  EXPECT_FALSE(h.buckets[0].sites[0].exact);
  EXPECT_EQ(h.estimated_count, 4);
}
