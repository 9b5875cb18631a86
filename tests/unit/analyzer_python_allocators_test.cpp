// The analyzer on a real `record --python-allocators` recording (docs/python.md, "Small objects"):
// Python's objects are blocks of the pool "pymalloc", in the mmap space but never counted as mmap
// blocks: the fragmentation map gives them the pool's own regions, and the leak totals leave them
// out while listing their sites.
#include <unistd.h>

#include "analyzer/heap_map.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;

namespace {

// samples/python/small_objects.py recorded with the option by /usr/bin/python3, a row for every
// block (--no-fold: finalization frees the objects, none is live at exit); "" and why.
std::string smallObjects(std::string* why) {
  static std::string path, failed;
  if (!path.empty() || !failed.empty()) {
    *why = failed;
    return path;
  }
  const std::string cli = memledger::testing::recordBuild() + "/bin/memledger";
  if (access("/usr/bin/python3", X_OK) != 0 || !std::filesystem::exists(cli)) {
    failed = *why = "needs /usr/bin/python3 and " + cli;
    return "";
  }
  const std::string out = memledger::testing::tempPath("small_objects.db");
  const std::string cmd = "'" + cli + "' record --no-compress --force --no-fold --python-allocators -o '" + out +
                          "' -- /usr/bin/python3 '" MEMLEDGER_SOURCE_DIR "/samples/python/small_objects.py' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    failed = *why = "`" + cmd + "` failed";
    return "";
  }
  return path = out;
}

}  // namespace

TEST(AnalyzerPythonAllocators, ObjectsHaveThePoolsRegionsNotTheMmapSpaces) {
  std::string why;
  std::string db = smallObjects(&why);
  if (db.empty()) GTEST_SKIP() << why;
  auto rec = Recording::open(db);
  int64_t poolRows = 0, mmapRows = 0;
  for (const MapRegion& r : mapRegions(rec)) {
    if (r.space == "pymalloc") poolRows += r.rows;
    if (r.space == "mmap") mmapRows += r.rows;
  }
  // Every object has a row in the pool's regions; the mmap regions hold the mappings alone.
  int64_t objects = 0, mappings = 0;
  for (const Site& s : sites(rec)) {
    if (s.kind == "pyobject") objects += s.alloc_count;
    if (s.kind == "mmap") mappings += s.alloc_count;
  }
  EXPECT_GE(objects, 110000);
  EXPECT_EQ(poolRows, objects);
  EXPECT_EQ(mmapRows, mappings);
}

TEST(AnalyzerPythonAllocators, LeakTotalsListTheObjectsApart) {
  std::string why;
  std::string db = smallObjects(&why);
  if (db.empty()) GTEST_SKIP() << why;
  auto rec = Recording::open(db);
  Leaks l = leaks(rec, {});
  int64_t objects = 0, objectBytes = 0, others = 0;
  size_t objectSites = 0;
  for (const SiteAmount& s : l.sites) {
    if (s.kind == "pyobject") {
      objects += s.count;
      objectBytes += s.bytes;
      ++objectSites;
    } else {
      others += s.bytes;
    }
  }
  EXPECT_EQ(l.pool_count, objects);
  EXPECT_EQ(l.pool_bytes, objectBytes);
  EXPECT_EQ(l.pool_site_count, objectSites);
  EXPECT_EQ(l.bytes, others);
  EXPECT_GE(objects, 10000);  // small_objects.py keeps 10,000 of them in a global
}
