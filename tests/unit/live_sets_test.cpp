// Schema 8's packed live sets (schemas/packed_sites.h: peak_site_lists, python_finalize_lists):
// the encoding round-trips, a damaged blob is a clear error (never a crash), and the analyzer's
// one reader per table (analyzer/live_sets.h) gives the same entries for a version 8 file and a
// version 7 file of row tables (or a version 6 one without t_ns).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <tuple>

#include "analyzer/analyzer.h"
#include "analyzer/live_sets.h"
#include "analyzer_fixture.h"
#include "schemas/packed_sites.h"

using namespace memledger;
using memledger::testing::RecordingBuilder;

namespace {

std::vector<packed::PeakSiteEntry> decodePeak(const std::vector<uint8_t>& blob, std::string* error = nullptr) {
  std::vector<packed::PeakSiteEntry> out;
  std::string e = packed::decodePeakSites(blob.data(), blob.size(), [&](const packed::PeakSiteEntry& x) { out.push_back(x); });
  if (error) *error = e;
  else EXPECT_EQ(e, "");
  return out;
}

std::vector<packed::FinalizeSiteEntry> decodeFinal(const std::vector<uint8_t>& blob, std::string* error = nullptr) {
  std::vector<packed::FinalizeSiteEntry> out;
  std::string e =
      packed::decodeFinalizeSites(blob.data(), blob.size(), [&](const packed::FinalizeSiteEntry& x) { out.push_back(x); });
  if (error) *error = e;
  else EXPECT_EQ(e, "");
  return out;
}

std::string hex(const std::vector<uint8_t>& b) {
  std::string out;
  char h[3];
  for (uint8_t c : b) {
    std::snprintf(h, sizeof h, "%02x", c);
    out += h;
  }
  return out;
}

}  // namespace

TEST(PackedLiveSets, PeakEntriesRoundTripInAnyOrder) {
  std::vector<packed::PeakSiteEntry> in = {
      {7, 1, 3, 300}, {2, 0, 1, 16}, {7, 0, 1, 8}, {uint64_t{1} << 40, 10, UINT64_MAX, 1}, {0, 4, 0, 0}};
  std::vector<uint8_t> blob;
  packed::encodeEntries(in.data(), in.data() + in.size(), blob);  // unsorted: deltas go both ways
  EXPECT_EQ(decodePeak(blob), in);
  packed::sortEntries(in);
  EXPECT_EQ(in.front(), (packed::PeakSiteEntry{0, 4, 0, 0}));
  EXPECT_EQ(in[2], (packed::PeakSiteEntry{7, 0, 1, 8}));  // same stack: kind order
  blob.clear();
  packed::encodeEntries(in.data(), in.data() + in.size(), blob);
  EXPECT_EQ(decodePeak(blob), in);
  // The bytes (schemas/memledger.sql): zigzag stack delta, kind, count, bytes; the second
  // entry's stack is a delta of 2 (zigzag 4).
  std::vector<packed::PeakSiteEntry> two = {{100, 0, 1, 16}, {102, 1, 1, 16}};
  blob.clear();
  packed::encodeEntries(two.data(), two.data() + 2, blob);
  EXPECT_EQ(hex(blob), "c80100011004010110");
  EXPECT_TRUE(decodePeak({}).empty());
}

TEST(PackedLiveSets, FinalizeEntriesRoundTrip) {
  std::mt19937_64 rng(8);
  std::vector<packed::FinalizeSiteEntry> in;
  for (int i = 0; i < 5000; ++i)
    in.push_back({rng() % 100000, rng() % 11, rng() % 700, 1 + rng() % 50, rng() >> (rng() % 64)});
  std::vector<uint8_t> blob;
  packed::encodeEntries(in.data(), in.data() + in.size(), blob);
  EXPECT_EQ(decodeFinal(blob), in);
  packed::sortEntries(in);
  std::vector<uint8_t> sorted;
  packed::encodeEntries(in.data(), in.data() + in.size(), sorted);
  EXPECT_EQ(decodeFinal(sorted), in);
  EXPECT_LT(sorted.size(), blob.size());  // sorted deltas are smaller
}

TEST(PackedLiveSets, ADamagedBlobIsAnErrorNamingTheEntry) {
  std::vector<packed::PeakSiteEntry> in = {{1, 0, 1, 300}, {5, 1, 2, 70000}};
  std::vector<uint8_t> blob;
  packed::encodeEntries(in.data(), in.data() + 2, blob);
  // Cut inside the second entry's bytes varint: the first entry decodes, then the error.
  std::vector<uint8_t> cut(blob.begin(), blob.end() - 1);
  std::string error;
  std::vector<packed::PeakSiteEntry> got = decodePeak(cut, &error);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(error, "entry 1 at byte 5 is cut or malformed");
  // A varint longer than 64 bits.
  std::vector<uint8_t> overlong(11, 0xff);
  overlong.push_back(0);
  decodeFinal(overlong, &error);
  EXPECT_EQ(error, "entry 0 at byte 0 is cut or malformed");
  // Every truncation and every flipped byte of a real blob: an error or entries, never a crash.
  std::vector<packed::FinalizeSiteEntry> fin = {{3, 0, 2, 1, 64}, {3, 1, 9, 4, 4096}, {900, 10, 1, 1, 1u << 20}};
  std::vector<uint8_t> good;
  packed::encodeEntries(fin.data(), fin.data() + fin.size(), good);
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> part(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    decodeFinal(part, &error);
    size_t whole = 0;
    for (size_t k = 0; k <= fin.size(); ++k) {
      std::vector<uint8_t> prefix;
      packed::encodeEntries(fin.data(), fin.data() + k, prefix);
      if (prefix.size() == n) whole = 1;
    }
    EXPECT_EQ(error.empty(), whole == 1) << "cut at " << n;
  }
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t flip : {0x80, 0xff, 0x01}) {
      std::vector<uint8_t> bad = good;
      bad[i] ^= flip;
      decodeFinal(bad, &error);  // either answer is fine; it returns
    }
}

namespace {

// The same live sets as a version 8 file (packed, as the recorder writes them) or a version 7
// one (row tables; RowsWithoutTimes: version 6 without python_finalize_sites.t_ns, a row per site).
enum class Form { Packed, Rows, RowsWithoutTimes };

std::string liveSetsFile(const std::string& name, Form form) {
  RecordingBuilder b(name);
  b.process({.id = 1, .pid = 100});
  b.process({.id = 2, .pid = 200});
  b.meta("bucket_ns", "1000");
  std::vector<packed::PeakSiteEntry> heap1 = {{9, 1, 2, 200}, {3, 0, 1, 64}, {3, 1, 1, 32}};
  std::vector<packed::PeakSiteEntry> heap2 = {{4, 0, 5, 5000}};
  std::vector<packed::PeakSiteEntry> dev = {{11, 4, 1, 1 << 20}};
  // Image 1's finalization set: site 3 malloc in buckets 2 and 5, site 8 new in bucket 0.
  std::vector<packed::FinalizeSiteEntry> fin = {{8, 1, 0, 1, 24}, {3, 0, 5, 2, 200}, {3, 0, 2, 1, 100}};
  b.exec("INSERT INTO python_finalize VALUES (1, 9000)");
  if (form == Form::Packed) {
    auto peakRow = [&](const char* space, int64_t image, std::vector<packed::PeakSiteEntry> v) {
      packed::sortEntries(v);
      std::vector<uint8_t> blob;
      packed::encodeEntries(v.data(), v.data() + v.size(), blob);
      b.exec("INSERT INTO peak_site_lists (space, image_id, sites) VALUES ('" + std::string(space) + "'," +
             std::to_string(image) + ",X'" + hex(blob) + "')");
    };
    peakRow("heap", 1, heap1);
    peakRow("heap", 2, heap2);
    peakRow("device:0", 2, dev);
    packed::sortEntries(fin);
    std::vector<uint8_t> blob;
    packed::encodeEntries(fin.data(), fin.data() + fin.size(), blob);
    b.exec("INSERT INTO python_finalize_lists (image_id, bucket_ns, sites) VALUES (1, 1000, X'" + hex(blob) + "')");
    return b.finish();
  }
  b.exec("DROP TABLE peak_site_lists; DROP TABLE python_finalize_lists;");
  b.exec("CREATE TABLE peak_sites (space TEXT NOT NULL, image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, "
         "kind INTEGER NOT NULL, count INTEGER NOT NULL, bytes INTEGER NOT NULL)");
  const bool times = form == Form::Rows;
  b.exec(std::string("CREATE TABLE python_finalize_sites (image_id INTEGER NOT NULL, stack_id INTEGER NOT NULL, "
                     "kind TEXT NOT NULL, count INTEGER NOT NULL, bytes INTEGER NOT NULL") +
         (times ? ", t_ns INTEGER)" : ")"));
  b.exec(times ? "PRAGMA user_version = 7" : "PRAGMA user_version = 6");
  auto peakRows = [&](const char* space, int64_t image, const std::vector<packed::PeakSiteEntry>& v) {
    for (const auto& e : v)  // in the recorder's old order (its sites'), not sorted
      b.exec("INSERT INTO peak_sites VALUES ('" + std::string(space) + "'," + std::to_string(image) + "," +
             std::to_string(e.stack) + "," + std::to_string(e.kind) + "," + std::to_string(e.count) + "," +
             std::to_string(e.bytes) + ")");
  };
  peakRows("device:0", 2, dev);
  peakRows("heap", 2, heap2);
  peakRows("heap", 1, heap1);
  if (times) {
    for (const auto& e : fin)
      b.exec("INSERT INTO python_finalize_sites VALUES (1," + std::to_string(e.stack) + ",'" +
             kinds::info(e.kind)->name + "'," + std::to_string(e.count) + "," + std::to_string(e.bytes) + "," +
             std::to_string(e.bucket * 1000) + ")");
  } else {
    b.exec("INSERT INTO python_finalize_sites VALUES (1, 8, 'new', 1, 24), (1, 3, 'malloc', 3, 300)");
  }
  return b.finish();
}

std::string peakText(const analyzer::Recording& rec, const std::string& space) {
  std::string out;
  for (const auto& s : analyzer::detail::peakSites(rec, space))
    out += std::to_string(s.image_id) + ":" + std::to_string(s.stack_id) + "/" + std::to_string(s.kind) + "=" +
           std::to_string(s.count) + "," + std::to_string(s.bytes) + " ";
  return out;
}

// Per (image, stack, kind, t): count, bytes, summed; t -1 when absent.
std::map<std::tuple<int64_t, int64_t, std::string, int64_t>, std::pair<int64_t, int64_t>> finalizeSites(
    const analyzer::Recording& rec, std::optional<int64_t> image = std::nullopt, bool times = true) {
  std::map<std::tuple<int64_t, int64_t, std::string, int64_t>, std::pair<int64_t, int64_t>> out;
  analyzer::detail::forEachFinalizeSite(rec, image, [&](const analyzer::detail::FinalizeSite& s) {
    EXPECT_EQ(s.kind, kinds::byName(s.kind_name)->code);
    auto& v = out[{s.image_id, s.stack_id, std::string(s.kind_name), times ? s.t_ns.value_or(-1) : -1}];
    v.first += s.count;
    v.second += s.bytes;
  });
  return out;
}

}  // namespace

TEST(PackedLiveSets, OldRowTablesAndPackedListsReadTheSame) {
  auto packedRec = analyzer::Recording::open(liveSetsFile("live-sets-8.db", Form::Packed));
  auto rowsRec = analyzer::Recording::open(liveSetsFile("live-sets-7.db", Form::Rows));
  auto sixRec = analyzer::Recording::open(liveSetsFile("live-sets-6.db", Form::RowsWithoutTimes));
  EXPECT_EQ(packedRec.info().schema_version, 8);
  EXPECT_EQ(rowsRec.info().schema_version, 7);
  // One order for both: image, stack, kind.
  EXPECT_EQ(peakText(packedRec, "heap"), "1:3/0=1,64 1:3/1=1,32 1:9/1=2,200 2:4/0=5,5000 ");
  for (const char* space : {"heap", "device:0", "pinned"}) {
    EXPECT_EQ(peakText(rowsRec, space), peakText(packedRec, space)) << space;
    EXPECT_EQ(peakText(sixRec, space), peakText(packedRec, space)) << space;
  }
  EXPECT_EQ(peakText(packedRec, "device:0"), "2:11/4=1,1048576 ");

  EXPECT_TRUE(analyzer::detail::hasFinalizeSites(packedRec));
  EXPECT_TRUE(analyzer::detail::finalizeSitesHaveTimes(packedRec));
  EXPECT_TRUE(analyzer::detail::finalizeSitesHaveTimes(rowsRec));
  EXPECT_FALSE(analyzer::detail::finalizeSitesHaveTimes(sixRec));
  auto fin = finalizeSites(packedRec);
  ASSERT_EQ(fin.size(), 3u);
  EXPECT_EQ((fin[{1, 3, "malloc", 5000}]), std::make_pair(int64_t{2}, int64_t{200}));
  EXPECT_EQ((fin[{1, 3, "malloc", 2000}]), std::make_pair(int64_t{1}, int64_t{100}));
  EXPECT_EQ((fin[{1, 8, "new", 0}]), std::make_pair(int64_t{1}, int64_t{24}));
  EXPECT_EQ(finalizeSites(rowsRec), fin);
  EXPECT_EQ(finalizeSites(sixRec, std::nullopt, false), finalizeSites(packedRec, std::nullopt, false));
  EXPECT_TRUE(finalizeSites(packedRec, 2).empty());
  EXPECT_EQ(finalizeSites(packedRec, 1), fin);
  EXPECT_EQ(finalizeSites(rowsRec, 1), fin);
}

TEST(PackedLiveSets, ADamagedRowIsARecordingErrorNamingIt) {
  std::string path;
  {
    RecordingBuilder b("live-sets-damaged.db");
    b.process({});
    // Entry 0 whole (stack 1, malloc, 1 block of 16 B), entry 1 cut after its stack delta.
    b.exec("INSERT INTO peak_site_lists (space, image_id, sites) VALUES ('heap', 1, X'020001100280')");
    b.exec("INSERT INTO python_finalize_lists (image_id, bucket_ns, sites) VALUES (1, 1000, X'02000201')");
    b.exec("INSERT INTO python_finalize VALUES (1, 5)");
    path = b.finish();
  }
  auto rec = analyzer::Recording::open(path);
  try {
    analyzer::detail::peakSites(rec, "heap");
    ADD_FAILURE() << "no error";
  } catch (const analyzer::RecordingError& e) {
    EXPECT_EQ(e.kind(), analyzer::ErrorKind::Corrupt);
    EXPECT_NE(std::string(e.what()).find("peak_site_lists row 1: entry 1 at byte 4 is cut or malformed"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(finalizeSites(rec), analyzer::RecordingError);
  // Through the public questions: an error, not a crash or a wrong answer.
  EXPECT_THROW(analyzer::leaks(rec, {}), analyzer::RecordingError);
}
