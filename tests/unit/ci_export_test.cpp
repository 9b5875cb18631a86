#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "analyzer/export_formats.h"
#include "ci_fixture.h"
#include "profile.pb.h"

namespace an = memledger::analyzer;
using memledger::testing::buildCiRecording;

namespace {

// Sums the values of folded lines ("a;b;c 123"), checking each line's shape on the way.
int64_t foldedSum(const std::string& text, std::map<std::string, int64_t>* lines = nullptr) {
  std::istringstream in(text);
  std::string line;
  int64_t sum = 0;
  while (std::getline(in, line)) {
    auto space = line.rfind(' ');
    EXPECT_NE(space, std::string::npos) << line;
    int64_t v = std::stoll(line.substr(space + 1));
    EXPECT_GT(v, 0) << line;
    sum += v;
    if (lines) (*lines)[line.substr(0, space)] += v;
  }
  return sum;
}

}  // namespace

TEST(CiExport, FoldedSumsEqualTheReportTotalsForEveryMetric) {
  an::Recording rec = an::Recording::open(buildCiRecording("export-folded.db"));
  std::map<std::string, int64_t> leaked;
  EXPECT_EQ(foldedSum(an::exportFolded(rec, an::Metric::Leaked), &leaked), an::leaks(rec).bytes);
  EXPECT_EQ(leaked.at("main;leak_here"), 4096);  // outermost first
  EXPECT_EQ(leaked.at("main;printf;_IO_file_doallocate"), 1024);
  EXPECT_EQ(foldedSum(an::exportFolded(rec, an::Metric::Allocated)), an::totals(rec).allocated_bytes);
  EXPECT_EQ(foldedSum(an::exportFolded(rec, an::Metric::Count)), an::totals(rec).allocations);
  an::Peak peak = an::peak(rec);
  int64_t peakSites = 0;
  for (const auto& s : peak.sites) peakSites += s.bytes;
  EXPECT_EQ(foldedSum(an::exportFolded(rec, an::Metric::Peak)), peakSites);
  EXPECT_EQ(peakSites, peak.bytes);  // the fixture's live set at the peak is the whole heap peak
  EXPECT_EQ(an::totals(rec).allocated_bytes, 10000 + 1024 + 50000 + 65536);
}

TEST(CiExport, PprofDecodesWithTotalsPerSampleType) {
  an::Recording rec = an::Recording::open(buildCiRecording("export-pprof.db"));
  std::string gz = an::exportPprof(rec);
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  perftools::profiles::Profile p;
  ASSERT_TRUE(p.ParseFromString(an::gunzipBytes(gz)));
  ASSERT_EQ(p.sample_type_size(), 4);
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  EXPECT_EQ(str(0), "");
  EXPECT_EQ(str(p.sample_type(0).type()), "alloc_objects");
  EXPECT_EQ(str(p.sample_type(0).unit()), "count");
  EXPECT_EQ(str(p.sample_type(1).type()), "alloc_space");
  EXPECT_EQ(str(p.sample_type(1).unit()), "bytes");
  EXPECT_EQ(str(p.sample_type(2).type()), "inuse_objects");
  EXPECT_EQ(str(p.sample_type(3).type()), "inuse_space");
  EXPECT_EQ(str(p.default_sample_type()), "inuse_space");
  int64_t sums[4] = {0, 0, 0, 0};
  for (const auto& s : p.sample()) {
    ASSERT_EQ(s.value_size(), 4);
    for (int i = 0; i < 4; ++i) sums[i] += s.value(i);
    ASSERT_GT(s.location_id_size(), 0);
  }
  an::Totals t = an::totals(rec);
  an::Leaks l = an::leaks(rec);
  EXPECT_EQ(sums[0], t.allocations);
  EXPECT_EQ(sums[1], t.allocated_bytes);
  EXPECT_EQ(sums[2], l.count);
  EXPECT_EQ(sums[3], l.bytes);
  // Every referenced location, function and mapping exists; the leaf of the leak is leak_here.
  std::map<uint64_t, const perftools::profiles::Location*> locs;
  for (const auto& loc : p.location()) locs[loc.id()] = &loc;
  std::map<uint64_t, std::string> fns;
  for (const auto& f : p.function()) fns[f.id()] = str(f.name());
  std::map<uint64_t, std::string> maps;
  for (const auto& m : p.mapping()) maps[m.id()] = str(m.filename());
  bool sawLeak = false;
  for (const auto& s : p.sample()) {
    for (uint64_t id : s.location_id()) {
      ASSERT_TRUE(locs.count(id));
      const auto* loc = locs[id];
      EXPECT_NE(loc->address(), 0u);
      ASSERT_TRUE(maps.count(loc->mapping_id()));
      ASSERT_GT(loc->line_size(), 0);
      ASSERT_TRUE(fns.count(loc->line(0).function_id()));
    }
    const auto* leaf = locs[s.location_id(0)];
    if (fns[leaf->line(0).function_id()] == "leak_here") {
      sawLeak = true;
      EXPECT_EQ(s.value(3), 4096);
      EXPECT_EQ(leaf->line(0).line(), 10);
      EXPECT_EQ(maps[leaf->mapping_id()], "/usr/bin/prog");
    }
  }
  EXPECT_TRUE(sawLeak);
}

TEST(CiExport, GunzipRejectsGarbage) {
  EXPECT_THROW(an::gunzipBytes("not gzip at all"), std::runtime_error);
  EXPECT_EQ(an::gunzipBytes(an::gzipBytes("hello")), "hello");
}

TEST(CiExport, ChromeTraceHasCounterTracksAndInstants) {
  an::Recording rec = an::Recording::open(buildCiRecording("export-trace.db"));
  nlohmann::json t = an::exportChromeTrace(rec);
  ASSERT_TRUE(t["traceEvents"].is_array());
  int heap = 0, mmap = 0, rss = 0, marker = 0, names = 0;
  for (const auto& e : t["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph"));
    ASSERT_TRUE(e.contains("pid"));
    std::string ph = e["ph"];
    if (ph == "C") {
      ASSERT_TRUE(e["ts"].is_number());
      heap += e["name"] == "heap";
      mmap += e["name"] == "mmap";
      rss += e["name"] == "RSS";
    }
    if (ph == "i" && e["name"] == "load") {
      ++marker;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.4);  // 400 ns in microseconds
      EXPECT_EQ(e["pid"], 1000);
    }
    if (ph == "M" && e["name"] == "process_name") {
      ++names;
      EXPECT_EQ(e["args"]["name"], "./prog <arg> & \"quoted\"");
    }
  }
  EXPECT_EQ(heap, 2);
  EXPECT_EQ(mmap, 2);
  EXPECT_EQ(rss, 2);
  EXPECT_EQ(marker, 1);
  EXPECT_EQ(names, 1);
  // The last heap counter is the bucket's live heap.
  int64_t lastHeap = -1;
  for (const auto& e : t["traceEvents"])
    if (e["ph"] == "C" && e["name"] == "heap") lastHeap = e["args"]["bytes"];
  EXPECT_EQ(lastHeap, 10000);
}
