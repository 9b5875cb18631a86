// One Recording asked from eight threads at once (a GUI's worker pool): every answer must be the
// one a single thread gets, and the run must be clean under ThreadSanitizer (scripts/tsan.sh
// builds these tests with -fsanitize=thread). The recording's caches start cold, so the threads
// race to fill them: stacks, the frames of each ip, the stack tree nodes.
#include <sqlite3.h>

#include <atomic>
#include <thread>

#include "analyzer/analyzer.h"
#include "analyzer/curve.h"
#include "analyzer/export_formats.h"
#include "analyzer_fixture.h"
#include "analyzer_sample_recording.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;

namespace {

constexpr int kThreads = 8;

// 600 sites whose stacks share their outer frames (main -> run -> worker_K): stack tree nodes
// with parents, so that threads walk and fill the same nodes. A timeline with a peak, markers,
// site activity for the phases.
std::string sharedStacksRecording() {
  RecordingBuilder b("threads_shared.db");
  b.process({.id = 1, .pid = 4242, .peak_heap_bytes = 9000000, .peak_heap_ns = 500000000});
  int64_t base = b.stack(1, {{"run", "app.c", 20}, {"main", "app.c", 3}});
  int64_t nextIp = 100000;
  auto ipWithFrame = [&](const std::string& fn, int line) {
    int64_t ip = ++nextIp;
    b.exec("INSERT INTO ips VALUES (" + std::to_string(ip) + ",1," + std::to_string(0x400000 + ip) + ",1)");
    b.exec("INSERT INTO frames VALUES (" + std::to_string(ip) + ",0,'" + fn + "','work.c'," + std::to_string(line) + ")");
    return ip;
  };
  std::vector<int64_t> workers;
  for (int w = 0; w < 12; ++w) workers.push_back(b.node(1, {ipWithFrame("worker_" + std::to_string(w), 100 + w)}, base));
  for (int i = 0; i < 600; ++i) {
    int64_t leaf = b.node(1, {ipWithFrame("alloc_" + std::to_string(i), 1000 + i)}, workers[size_t(i) % workers.size()]);
    int64_t leak = i % 7 == 0 ? 64 * (i + 1) : 0;
    b.site({.stack = leaf, .alloc_count = 10 + i, .alloc_bytes = 1000 * (i + 1), .free_count = 10 + i - (leak ? 1 : 0),
            .freed_bytes = 1000 * (i + 1) - leak, .leak_count = leak ? 1 : 0, .leak_bytes = leak,
            .peak_count = 1, .peak_bytes = 500 + i, .temp_count = i % 3, .temp_bytes = 16 * (i % 3),
            .max_live_count = 2, .max_live_bytes = 2000, .min_size = 16, .max_size = 4096});
    b.siteActivity(1, int64_t(i) * 1000000, leaf, 10 + i, 1000 * (i + 1));
  }
  for (int t = 0; t < 1000; ++t) {
    int64_t heap = t < 500 ? t * 18000 : (1000 - t) * 18000;
    b.timeline({.t_ns = int64_t(t) * 1000000, .heap_bytes = heap, .heap_max = t == 500 ? 9000000 : heap,
                .allocs = 5, .frees = 5, .alloc_bytes = 5000});
  }
  b.marker(1, 0, "load");
  b.marker(1, 400000000, "train");
  return b.finish();
}

// What one thread asks, as text to compare: the report, every site with its stack, the folded
// export, the curve.
std::string answers(const Recording& rec) {
  std::string out = jsonText(toJson(report(rec)));
  for (const Site& s : sites(rec)) out += std::to_string(s.stack_id) + stackKey(s.stack) + "\n";
  for (const Site& s : sites(rec)) {
    std::vector<const Frame*> frames;
    rec.stackFrames(s.stack_id, &frames);
    for (const Frame* f : frames) out += frameText(*f) + ";";
    out += stackKey(rec.stack(s.stack_id)) + "\n";
  }
  out += exportFolded(rec, Metric::Allocated);
  Curve c = curve(rec, {.max_points = 100});
  out += std::to_string(c.peak_bytes) + "@" + std::to_string(c.peak_ns) + "/" + std::to_string(c.points.size());
  return out;
}

// Eight threads ask everything of one fresh Recording at once, each in its own order; every
// answer must equal the one a single thread got from another Recording of the same file.
void askFromEightThreads(const std::string& path) {
  std::string expected = answers(Recording::open(path));
  ASSERT_GT(expected.size(), 1000u);
  Recording shared = Recording::open(path);
  std::atomic<int> ready{0}, mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together: cold caches
      try {
        std::vector<Site> all = sites(shared);
        // Odd threads ask the stacks first, back to front, even ones the report first.
        if (t % 2) {
          for (auto it = all.rbegin(); it != all.rend(); ++it) (void)shared.stack(it->stack_id);
        } else {
          (void)phases(shared);
        }
        for (int round = 0; round < 2; ++round)
          if (answers(shared) != expected) mismatches.fetch_add(1);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        errors.fetch_add(1);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

}  // namespace

TEST(AnalyzerThreads, SqliteIsBuiltThreadSafe) {
  // SQLITE_OPEN_FULLMUTEX serializes a connection only in a library built with threads.
  EXPECT_NE(sqlite3_threadsafe(), 0);
}

TEST(AnalyzerThreads, SharedStacksFromEightThreads) {
  std::string path = sharedStacksRecording();
  {
    // The fixture is what the comparison rests on: the stacks have their shared outer frames.
    Recording rec = Recording::open(path);
    std::vector<Site> all = sites(rec);
    ASSERT_EQ(all.size(), 600u);
    const Stack& s = rec.stack(all.back().stack_id);
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[1].function, "worker_0");
    EXPECT_EQ(s[3].function, "main");
  }
  askFromEightThreads(path);
}

TEST(AnalyzerThreads, RealRecordingFromEightThreads) {
  std::string why;
  std::string path = memledger::testing::sampleRecording("demo_leaky_peaky", &why);
  if (path.empty()) GTEST_SKIP() << why;
  {
    Recording rec = Recording::open(path);
    Report r = report(rec);
    ASSERT_GE(r.leaks.bytes, 3 * 256 + 20 * 1024);  // the sample's ground truth (+ libc's own)
    ASSERT_GE(r.peak.bytes, 64 << 20);
  }
  askFromEightThreads(path);
}

TEST(AnalyzerThreads, CompressedRecordingFromEightThreads) {
  // As `record` leaves it: zstd, decompressed into memory and read from there (one connection).
  std::string why;
  std::string path = memledger::testing::sampleRecording("demo_leaky_peaky", &why, true);
  if (path.empty()) GTEST_SKIP() << why;
  ASSERT_NE(memledger::testing::readFile(path).substr(0, 15), "SQLite format 3");
  askFromEightThreads(path);
}
