// The fragmentation map (analyzer/heap_map.h): regions, layouts at an instant and after an event,
// holes and slack, the block under a pixel, the series, and when a layout is exact. Hand-made
// recordings for the rules, real ones for the truth: samples/heap_holes (addresses the program
// printed), samples/fragmenting (200,000 blocks) and samples/pool_arena (a reserved pool).
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "analyzer/heap_map.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

namespace {

constexpr int64_t kMs = 1000000;

const MapRegion* regionAt(const std::vector<MapRegion>& regions, const std::string& space, uint64_t address) {
  for (const MapRegion& r : regions)
    if (r.space == space && address >= r.from && address < r.to) return &r;
  return nullptr;
}

// `memledger record OPTIONS` of build/samples/SAMPLE, plain SQLite; the program's stderr (with
// the recorder's own lines) in *err. "" with `why` set when the CLI or the sample is missing.
std::string recordWith(const std::string& sample, const std::string& options, std::string* why, std::string* err = nullptr) {
  const std::string build = memledger::testing::recordBuild();
  const std::string cli = build + "/bin/memledger", program = build + "/samples/" + sample;
  if (!std::filesystem::exists(cli) || !std::filesystem::exists(program)) {
    *why = "needs " + cli + " and " + program + " (build the memledger and memledger_samples targets)";
    return "";
  }
  std::string name = sample + options;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  const std::string out = memledger::testing::tempPath(name + ".db"), errFile = out + ".err";
  const std::string cmd = "'" + cli + "' record --no-compress --force " + options + " -o '" + out + "' -- '" + program +
                          "' >/dev/null 2>'" + errFile + "'";
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(out)) {
    *why = "`" + cmd + "` failed";
    return "";
  }
  if (err) *err = memledger::testing::readFile(errFile);
  return out;
}

// "small 3 0x5581c0a2f2a0" lines of heap_holes' stderr: name -> addresses by index.
std::map<std::string, std::map<int, uint64_t>> printedAddresses(const std::string& err) {
  std::map<std::string, std::map<int, uint64_t>> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line)) {
    char name[16];
    int i = 0;
    unsigned long long address = 0;
    if (std::sscanf(line.c_str(), "%15s %d %llx", name, &i, &address) == 3 &&
        (std::string(name) == "small" || std::string(name) == "large"))
      out[name][i] = address;
  }
  return out;
}

int64_t markerTime(const Recording& rec, const std::string& name) {
  for (const Marker& m : markers(rec))
    if (m.name == name) return m.t_ns;
  ADD_FAILURE() << "no marker " << name;
  return 0;
}

}  // namespace

// Four neighbours 1008 bytes apart (glibc's chunks of 1000-byte blocks), one freed: its chunk and
// the 8 bytes before it are one hole; the 8-byte gaps between neighbours are slack, not holes.
TEST(AnalyzerHeapMap, LayoutHolesSlackSitesAndTheBlockUnderAPixel) {
  RecordingBuilder b("heapmap.db");
  b.process({});
  const int64_t f = b.stack(1, {{"f", "f.c", 1}}), g = b.stack(1, {{"g", "g.c", 2}});
  const uint64_t base = 0x10000;
  b.alloc(1, f, base, 1000, 10);
  b.alloc(1, g, base + 1008, 1000, 20, 50);
  b.alloc(1, f, base + 2016, 1000, 30);
  b.alloc(1, g, base + 3024, 24, 40);
  b.alloc(1, f, 0x900000, 100, 5);  // 9 MiB: more than 1 MiB away, a region of its own
  auto rec = Recording::open(b.finish());

  std::vector<MapRegion> regions = mapRegions(rec);
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions[0].space, "heap");
  EXPECT_EQ(regions[0].from, base);
  EXPECT_EQ(regions[0].to, base + 3048);
  EXPECT_EQ(regions[0].rows, 4);
  EXPECT_EQ(regions[0].bytes, 3024u);
  EXPECT_EQ(regions[0].first_ns, 10);
  EXPECT_EQ(regions[0].last_ns, 50);
  EXPECT_FALSE(regions[0].reserved);
  EXPECT_EQ(regions[1].from, 0x900000u);
  EXPECT_EQ(regions[1].pid, 1000);
  EXPECT_EQ(regionText(regions[0]), "heap 0x10000-0x10be8 (2.98 KiB, 4 blocks)");

  HeapHistory h = heapHistory(rec, regions[0]);
  EXPECT_EQ(h.slack_limit, 32u);
  ASSERT_EQ(h.blocks.size(), 4u);
  ASSERT_EQ(h.events.size(), 5u);
  EXPECT_EQ(h.events[4].t_ns, 50);
  EXPECT_FALSE(h.events[4].alloc);
  EXPECT_EQ(h.events[4].block, 1u);
  EXPECT_EQ(h.ops[h.blocks[0].op], "malloc");
  EXPECT_EQ(h.eventsUpTo(49), 4u);
  EXPECT_EQ(h.eventsUpTo(50), 5u);
  EXPECT_TRUE(h.everyBlock());

  MapLayout all = h.layoutAt(45);
  EXPECT_EQ(all.live.size(), 4u);
  EXPECT_TRUE(all.holes.empty());
  EXPECT_EQ(all.slack_bytes, 24u);  // three gaps of 8
  EXPECT_EQ(all.live_bytes, 3024u);
  EXPECT_TRUE(all.exact);
  MapLayout afterFour = h.layoutAfter(4);
  EXPECT_EQ(afterFour.t_ns, 40);
  EXPECT_EQ(afterFour.live, all.live);

  MapLayout l = h.layoutAt(60);
  ASSERT_EQ(l.live.size(), 3u);
  ASSERT_EQ(l.holes.size(), 1u);
  EXPECT_EQ(l.holes[0].address, base + 1000);
  EXPECT_EQ(l.holes[0].size, 1016u);
  EXPECT_EQ(l.hole_bytes, 1016u);
  EXPECT_EQ(l.largest_hole, 1016u);
  EXPECT_EQ(l.slack_bytes, 8u);
  EXPECT_EQ(l.live_bytes, 2024u);
  EXPECT_EQ(l.span_from, base);
  EXPECT_EQ(l.span_to, base + 3048);
  EXPECT_DOUBLE_EQ(l.freeRatio(), 1.0 - 2024.0 / 3048.0);
  EXPECT_DOUBLE_EQ(l.internalShare(), 8.0 / 1024.0);
  EXPECT_DOUBLE_EQ(l.externalFragmentation(), 0.0);
  ASSERT_EQ(l.sites.size(), 2u);
  EXPECT_EQ(l.sites[0].stack_id, f);
  EXPECT_EQ(l.sites[0].count, 2);
  EXPECT_EQ(l.sites[0].bytes, 2000u);
  EXPECT_EQ(l.sites[1].stack_id, g);
  EXPECT_EQ(l.sites[1].bytes, 24u);

  // A pixel's bytes: inside the hole nothing; across a block's end that block; the larger cover wins.
  EXPECT_FALSE(h.blockAt(l, base + 1500, base + 1501));
  auto a = h.blockAt(l, base + 990, base + 1010);
  ASSERT_TRUE(a);
  EXPECT_EQ(h.blocks[*a].address, base);
  auto c = h.blockAt(l, base + 2000, base + 3030);  // 1000 B of C, 6 B of D
  ASSERT_TRUE(c);
  EXPECT_EQ(h.blocks[*c].address, base + 2016);

  // The series follows every event; its last point is the last layout.
  ASSERT_FALSE(h.series.empty());
  const MapPoint& last = h.series.back();
  EXPECT_EQ(last.t_ns, 50);
  EXPECT_EQ(last.live_bytes, l.live_bytes);
  EXPECT_EQ(last.hole_bytes, l.hole_bytes);
  EXPECT_EQ(last.slack_bytes, l.slack_bytes);
  EXPECT_EQ(last.largest_hole, 1016u);
  EXPECT_EQ(last.holes, 1);
  EXPECT_EQ(last.span, 3048u);
}

// At one instant a free comes before an allocation (realloc in place), but a block that lived
// 0 ns is allocated before it is freed.
TEST(AnalyzerHeapMap, EventsAtOneInstant) {
  RecordingBuilder b("heapmap-instant.db");
  b.process({});
  const int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.alloc(1, s, 0x20000, 100, 10, 20);
  b.alloc(1, s, 0x20000, 200, 20);
  b.alloc(1, s, 0x20100, 10, 30, 30);
  auto rec = Recording::open(b.finish());
  std::vector<MapRegion> regions = mapRegions(rec);
  ASSERT_EQ(regions.size(), 1u);
  HeapHistory h = heapHistory(rec, regions[0]);
  ASSERT_EQ(h.events.size(), 5u);
  MapLayout at20 = h.layoutAt(20);
  ASSERT_EQ(at20.live.size(), 1u);
  EXPECT_EQ(h.blocks[at20.live[0]].size, 200u);
  EXPECT_EQ(h.layoutAt(30).live.size(), 1u);
  ASSERT_TRUE(h.events[3].alloc);
  EXPECT_EQ(h.blocks[h.events[3].block].address, 0x20100u);
  EXPECT_EQ(h.layoutAfter(4).live.size(), 2u);  // the 0-ns block, between its two events
  EXPECT_FALSE(h.events[4].alloc);
}

// The default rows (leaks only): a layout is exact at the process's end, and mid-run wherever the
// heap curve shows that the rows hold every live byte; elsewhere it gives the bytes without a row.
TEST(AnalyzerHeapMap, ExactnessFromTheCurveWithLeakRowsOnly) {
  RecordingBuilder b("heapmap-leaks.db");
  b.meta("allocation_rows", "leaks");
  b.process({.end_ns = 20 * kMs});
  const int64_t s = b.stack(1, {{"f", "f.c", 1}});
  b.alloc(1, s, 0x1000, 100, 1 * kMs);  // the leak: a row
  // A 50-byte block from 2 ms to 5 ms has no row; the curve counts it.
  b.timeline({.t_ns = 1 * kMs, .heap_bytes = 100, .heap_max = 100, .heap_min = 0});
  b.timeline({.t_ns = 2 * kMs, .heap_bytes = 150, .heap_max = 150, .heap_min = 100});
  b.timeline({.t_ns = 5 * kMs, .heap_bytes = 100, .heap_max = 150, .heap_min = 100});
  auto rec = Recording::open(b.finish());
  std::vector<MapRegion> regions = mapRegions(rec);
  ASSERT_EQ(regions.size(), 1u);
  HeapHistory h = heapHistory(rec, regions[0]);
  EXPECT_FALSE(h.everyBlock());
  ASSERT_TRUE(h.image_end_ns);
  EXPECT_EQ(*h.image_end_ns, 20 * kMs);

  MapLayout quietWithout = h.layoutAt(3500000);  // after the 2 ms bucket: 150 live, 100 in rows
  EXPECT_FALSE(quietWithout.exact);
  EXPECT_EQ(quietWithout.rowless_min, 50);
  EXPECT_EQ(quietWithout.rowless_max, 50);
  MapLayout busy = h.layoutAt(5500000);  // inside the 5 ms bucket: 100 to 150 live
  EXPECT_FALSE(busy.exact);
  EXPECT_EQ(busy.rowless_min, 0);
  EXPECT_EQ(busy.rowless_max, 50);
  MapLayout quietAll = h.layoutAt(7 * kMs);  // every live byte is the leak's
  EXPECT_TRUE(quietAll.exact);
  EXPECT_EQ(quietAll.rowless_max, 0);
  EXPECT_TRUE(h.layoutAt(20 * kMs).exact);  // the end
  EXPECT_NE(mapCoverageText(h).find("--no-fold"), std::string::npos);
}

// samples/heap_holes recorded with every block: the map holds the addresses the program printed,
// and each phase's exact layout (64 x 4000 B; every even one freed; 8 x 9000 B above).
TEST(AnalyzerHeapMap, HeapHolesEveryBlockMatchesThePrintedAddresses) {
  std::string why, err;
  const std::string path = recordWith("heap_holes", "--no-fold", &why, &err);
  if (path.empty()) GTEST_SKIP() << why;
  auto printed = printedAddresses(err);
  ASSERT_EQ(printed["small"].size(), 64u) << err;
  ASSERT_EQ(printed["large"].size(), 8u) << err;
  const auto& small = printed["small"];
  const auto& large = printed["large"];
  for (int i = 1; i < 64; ++i) ASSERT_EQ(small.at(i) - small.at(i - 1), 4016u) << "block " << i;

  auto rec = Recording::open(path);
  std::vector<MapRegion> regions = mapRegions(rec);
  const MapRegion* region = regionAt(regions, "heap", small.at(0));
  ASSERT_TRUE(region);
  EXPECT_EQ(region->from, small.at(0));
  EXPECT_EQ(region->to, large.at(7) + 9000);
  EXPECT_EQ(region->rows, 72);
  HeapHistory h = heapHistory(rec, *region);
  EXPECT_EQ(h.events.size(), 72u * 2 - 32);  // the 32 odd blocks are never freed

  MapLayout allocated = h.layoutAt(markerTime(rec, "allocated") + 10 * kMs);
  EXPECT_TRUE(allocated.exact);
  EXPECT_EQ(allocated.live.size(), 64u);
  EXPECT_EQ(allocated.live_bytes, 64u * 4000);
  EXPECT_TRUE(allocated.holes.empty());
  EXPECT_EQ(allocated.slack_bytes, 63u * 16);

  MapLayout holes = h.layoutAt(markerTime(rec, "holes") + 10 * kMs);
  EXPECT_TRUE(holes.exact);
  ASSERT_EQ(holes.live.size(), 32u);
  for (size_t k = 0; k < 32; ++k) EXPECT_EQ(h.blocks[holes.live[k]].address, small.at(int(2 * k + 1)));
  EXPECT_EQ(holes.live_bytes, 128000u);
  ASSERT_EQ(holes.holes.size(), 31u);
  for (size_t k = 0; k < 31; ++k) {
    EXPECT_EQ(holes.holes[k].address, small.at(int(2 * k + 1)) + 4000);
    EXPECT_EQ(holes.holes[k].size, 4032u);  // the freed 4016-byte chunk and 16 B of rounding before it
  }
  EXPECT_EQ(holes.hole_bytes, 31u * 4032);
  EXPECT_EQ(holes.largest_hole, 4032u);
  EXPECT_EQ(holes.slack_bytes, 0u);
  EXPECT_EQ(holes.span_from, small.at(1));
  EXPECT_EQ(holes.span_to, small.at(63) + 4000);
  EXPECT_DOUBLE_EQ(holes.externalFragmentation(), 1.0 - 1.0 / 31.0);

  MapLayout larger = h.layoutAt(markerTime(rec, "larger") + 10 * kMs);
  EXPECT_EQ(larger.live.size(), 40u);
  EXPECT_EQ(larger.live_bytes, 128000u + 8 * 9000);
  EXPECT_EQ(larger.holes.size(), 31u);  // none of the larger blocks fits a hole
  EXPECT_EQ(large.at(0), small.at(63) + 4016);
  EXPECT_EQ(larger.slack_bytes, 16u + 7 * 8);  // 9000 B blocks are 9008-byte chunks
  ASSERT_EQ(larger.sites.size(), 2u);
  EXPECT_EQ(larger.sites[0].bytes, 128000u);
  EXPECT_EQ(rec.stack(larger.sites[0].stack_id).at(0).function.value_or(""), "make_blocks");
  EXPECT_EQ(rec.stack(larger.sites[1].stack_id).at(0).function.value_or(""), "make_larger");
  auto under = h.blockAt(larger, large.at(3) + 100, large.at(3) + 200);
  ASSERT_TRUE(under);
  EXPECT_EQ(rec.stack(h.blocks[*under].stack_id).at(0).function.value_or(""), "make_larger");

  // Shown first: the last state with the most free bytes outside the largest hole. While
  // drop_larger frees the larger blocks in order, the last one still holds the freed others
  // below it: 31 holes of 4032 B besides the largest (8 B of rounding after block 63, then 7
  // freed 9008-byte chunks); when it goes, the largest hole is one of the 4032-byte ones.
  MapLayout first = h.layoutAt(h.defaultInstant());
  EXPECT_EQ(first.applied, h.events.size() - 1);
  EXPECT_EQ(first.live.size(), 33u);
  ASSERT_EQ(first.holes.size(), 32u);
  EXPECT_EQ(first.largest_hole, 16u + 7 * 9008);
  EXPECT_EQ(first.hole_bytes - first.largest_hole, 31u * 4032);

  // Stepping: the event after "holes" is make_larger's first allocation.
  const size_t at = holes.applied;
  ASSERT_LT(at, h.events.size());
  EXPECT_TRUE(h.events[at].alloc);
  EXPECT_EQ(h.blocks[h.events[at].block].address, large.at(0));
  MapLayout stepped = h.layoutAfter(at + 1);
  EXPECT_EQ(stepped.live.size(), 33u);
  EXPECT_EQ(stepped.live_bytes, 128000u + 9000);
}

// The same program with the default rows (leaks only): exact where the curve shows the 32 leaks
// are all that is live (after the holes were punched, at the end), not while more was live.
TEST(AnalyzerHeapMap, HeapHolesLeakRowsOnlySayWhereTheyAreExact) {
  std::string why, err;
  const std::string path = recordWith("heap_holes", "", &why, &err);
  if (path.empty()) GTEST_SKIP() << why;
  auto printed = printedAddresses(err);
  ASSERT_EQ(printed["small"].size(), 64u) << err;
  auto rec = Recording::open(path);
  EXPECT_EQ(rec.info().allocation_rows, "leaks");
  const std::vector<MapRegion> regions = mapRegions(rec);
  const MapRegion* region = regionAt(regions, "heap", printed["small"].at(1));
  ASSERT_TRUE(region);
  EXPECT_EQ(region->rows, 32);
  HeapHistory h = heapHistory(rec, *region);

  MapLayout allocated = h.layoutAt(markerTime(rec, "allocated") + 10 * kMs);
  EXPECT_FALSE(allocated.exact);
  EXPECT_EQ(allocated.rowless_min, 32 * 4000);  // the even blocks, freed later: no row
  EXPECT_EQ(allocated.rowless_max, 32 * 4000);
  MapLayout holes = h.layoutAt(markerTime(rec, "holes") + 10 * kMs);
  EXPECT_TRUE(holes.exact);
  EXPECT_EQ(holes.holes.size(), 31u);
  MapLayout larger = h.layoutAt(markerTime(rec, "larger") + 10 * kMs);
  EXPECT_FALSE(larger.exact);
  EXPECT_EQ(larger.rowless_max, 8 * 9000);
  ASSERT_TRUE(h.image_end_ns);
  MapLayout end = h.layoutAt(*h.image_end_ns);
  EXPECT_TRUE(end.exact);
  EXPECT_EQ(end.live_bytes, 128000u);
}

// --fold-ms 15: every block of heap_holes lived at least 20 ms (the sample waits 20 ms between
// phases), so each has a row; not "every block" by the recording's word, but exact in each quiet
// stretch by the curve.
TEST(AnalyzerHeapMap, HeapHolesLongLivedRowsExactByTheCurve) {
  std::string why;
  const std::string path = recordWith("heap_holes", "--fold-ms 15", &why);
  if (path.empty()) GTEST_SKIP() << why;
  auto rec = Recording::open(path);
  EXPECT_EQ(rec.info().allocation_rows, "long_lived");
  std::vector<MapRegion> regions = mapRegions(rec);
  const MapRegion* region = nullptr;
  for (const MapRegion& r : regions)
    if (r.space == "heap" && (!region || r.rows > region->rows)) region = &r;
  ASSERT_TRUE(region);
  EXPECT_EQ(region->rows, 72);
  HeapHistory h = heapHistory(rec, *region);
  EXPECT_FALSE(h.everyBlock());
  EXPECT_NE(mapCoverageText(h).find("lived at least 15.00 ms"), std::string::npos) << mapCoverageText(h);
  MapLayout allocated = h.layoutAt(markerTime(rec, "allocated") + 10 * kMs);
  EXPECT_TRUE(allocated.exact);
  EXPECT_EQ(allocated.rowless_max, 0);
  EXPECT_EQ(allocated.live.size(), 64u);
  MapLayout holes = h.layoutAt(markerTime(rec, "holes") + 10 * kMs);
  EXPECT_TRUE(holes.exact);
  EXPECT_EQ(holes.holes.size(), 31u);
  EXPECT_EQ(holes.hole_bytes, 31u * 4032);
}

// samples/fragmenting with every block: 200,000 x 1000 B, every other one freed, then
// 100,000 x 3000 B that fit none of the 1016-byte holes.
TEST(AnalyzerHeapMap, FragmentingEveryBlock) {
  std::string why;
  const std::string path = recordWith("fragmenting", "--no-fold", &why);
  if (path.empty()) GTEST_SKIP() << why;
  auto rec = Recording::open(path);
  std::vector<MapRegion> regions = mapRegions(rec);
  const MapRegion* region = nullptr;
  for (const MapRegion& r : regions)
    if (r.space == "heap" && (!region || r.rows > region->rows)) region = &r;
  ASSERT_TRUE(region);
  EXPECT_GE(region->rows, 300000);
  QueryControl control;
  HeapHistory h = heapHistory(rec, *region, control);
  // Before the program prints (stdout's buffer): the last allocation of allocate_large.
  size_t lastLarge = 0;
  for (size_t i = 0; i < h.events.size(); ++i)
    if (h.events[i].alloc && h.blocks[h.events[i].block].size == 3000) lastLarge = i + 1;
  MapLayout l = h.layoutAfter(lastLarge);
  EXPECT_TRUE(l.exact);
  int64_t small = 0, large = 0, holes1016 = 0;
  for (uint32_t i : l.live) (h.blocks[i].size == 1000 ? small : large) += 1;
  for (const MapGap& g : l.holes) holes1016 += g.size == 1016;
  EXPECT_EQ(small, 100000);
  EXPECT_EQ(large, 100000);
  EXPECT_EQ(l.live_bytes, 400000000u);
  EXPECT_EQ(holes1016, 99999);  // between each two live small blocks: a freed 1008-byte chunk and 8 B
  EXPECT_EQ(l.holes.size(), 99999u);
  EXPECT_EQ(l.hole_bytes, 99999u * 1016);
  EXPECT_EQ(l.slack_bytes, 100000u * 8);  // every 3000 B block (3008-byte chunk) after its neighbour
  EXPECT_EQ(h.series.back().live_bytes, h.layoutAfter(h.events.size()).live_bytes);
}

// samples/pool_arena with every block: the pool "tensors" is its reserved 64 MiB; after 8 of its
// 16 blocks of 4 MiB are freed, the first 32 MiB are one hole, and the pool is half free.
TEST(AnalyzerHeapMap, PoolArenaReservedRange) {
  std::string why;
  const std::string path = recordWith("pool_arena", "--no-fold", &why);
  if (path.empty()) GTEST_SKIP() << why;
  auto rec = Recording::open(path);
  std::vector<MapRegion> regions = mapRegions(rec);
  const MapRegion* pool = nullptr;
  const MapRegion* custom = nullptr;
  for (const MapRegion& r : regions) {
    if (r.space == "pool:tensors") pool = &r;
    if (r.space == "custom") custom = &r;
  }
  ASSERT_TRUE(pool);
  EXPECT_TRUE(pool->reserved);
  EXPECT_EQ(pool->to - pool->from, uint64_t(64) << 20);
  EXPECT_EQ(pool->rows, 16);
  ASSERT_TRUE(custom);  // memledger_alloc's blocks: no reserved range, the span of its rows
  EXPECT_FALSE(custom->reserved);
  EXPECT_EQ(custom->from, pool->from);
  EXPECT_EQ(custom->to - custom->from, uint64_t(64) << 20);
  const MapRegion* arena = regionAt(regions, "heap", pool->from);
  ASSERT_TRUE(arena);  // the malloc'ed arena itself, in the heap's map

  HeapHistory h = heapHistory(rec, *pool);
  EXPECT_EQ(h.slack_limit, 0u);
  MapLayout empty = h.layoutAfter(0);
  ASSERT_EQ(empty.holes.size(), 1u);  // a reserved range with nothing live is one hole
  EXPECT_EQ(empty.hole_bytes, uint64_t(64) << 20);
  MapLayout half = h.layoutAfter(24);  // 16 allocations, 8 frees
  EXPECT_EQ(half.live.size(), 8u);
  EXPECT_EQ(half.live_bytes, uint64_t(32) << 20);
  ASSERT_EQ(half.holes.size(), 1u);
  EXPECT_EQ(half.holes[0].address, pool->from);
  EXPECT_EQ(half.holes[0].size, uint64_t(32) << 20);
  EXPECT_DOUBLE_EQ(half.freeRatio(), 0.5);
  EXPECT_EQ(h.layoutAfter(16).holes.size(), 0u);  // all 16 live: the range is full
}
