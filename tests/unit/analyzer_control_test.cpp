// Progress and cancellation of long questions (analyzer.h QueryControl, analyzer/control.h).
#include <atomic>
#include <chrono>
#include <thread>

#include "analyzer/analyzer.h"
#include "analyzer/control.h"
#include "analyzer/curve.h"
#include "analyzer/export_formats.h"
#include "analyzer/sql.h"
#include "analyzer_fixture.h"

using namespace memledger::analyzer;
using memledger::testing::RecordingBuilder;
using Clock = std::chrono::steady_clock;

namespace {

// 3000 sites with stacks of their own, site activity in 3000 buckets and a 3000-bucket curve:
// enough rows that a report runs through many of them.
const std::string& bigRecording() {
  static const std::string path = [] {
    RecordingBuilder b("control_big.db");
    b.process({.id = 1, .pid = 77, .peak_heap_bytes = 3000 * 4096, .peak_heap_ns = 2999000000});
    for (int i = 0; i < 3000; ++i) {
      std::string fn = "site_" + std::to_string(i);
      int64_t s = b.stack(1, {{fn.c_str(), "big.c", i + 1}, {"main", "big.c", 1}});
      b.site({.stack = s, .alloc_count = 1 + i, .alloc_bytes = 4096 * (1 + i), .free_count = i,
              .freed_bytes = 4096 * i, .leak_count = 1, .leak_bytes = 4096, .peak_count = 1, .peak_bytes = 4096,
              .temp_count = i % 5, .temp_bytes = 32 * (i % 5), .min_size = 4096, .max_size = 4096,
              .same_size_count = i});
      b.siteActivity(1, int64_t(i) * 1000000, s, 1 + i, 4096 * (1 + i));
      b.timeline({.t_ns = int64_t(i) * 1000000, .heap_bytes = int64_t(i + 1) * 4096, .allocs = 1,
                  .alloc_bytes = 4096});
    }
    b.meta("duration_ns", "3000000000");
    return b.finish();
  }();
  return path;
}

}  // namespace

TEST(AnalyzerControl, ReportProgressRisesToOne) {
  Recording rec = Recording::open(bigRecording());
  std::vector<double> seen;
  QueryControl control;
  control.progress = [&](double f) { seen.push_back(f); };
  Report r = report(rec, {}, control);
  EXPECT_EQ(r.leaks.count, 3000);  // the same report as without a control
  EXPECT_EQ(jsonText(toJson(r)), jsonText(toJson(report(rec))));
  ASSERT_GE(seen.size(), 9u);  // at least one step per part of the report
  EXPECT_EQ(seen.front(), 0.0);
  EXPECT_EQ(seen.back(), 1.0);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_GT(seen[i], seen[i - 1]) << "at " << i;
}

TEST(AnalyzerControl, EveryControlledQuestionEndsAtOne) {
  Recording rec = Recording::open(bigRecording());
  auto lastOf = [&](auto&& ask) {
    QueryControl control;
    double last = -1;
    int calls = 0;
    control.progress = [&](double f) {
      EXPECT_GT(f, last);
      last = f;
      ++calls;
    };
    ask(control);
    EXPECT_GE(calls, 2);
    return last;
  };
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_EQ(sites(rec, {}, c).size(), 3000u); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_FALSE(phases(rec, {}, c).empty()); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_EQ(timeline(rec, {}, c).size(), 3000u); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_FALSE(exportFolded(rec, Metric::Allocated, c).empty()); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_FALSE(exportPprof(rec, c).empty()); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_TRUE(exportChromeTrace(rec, c).contains("traceEvents")); }), 1.0);
  EXPECT_EQ(lastOf([&](QueryControl& c) { EXPECT_EQ(curve(rec, {.max_points = 10}, c).points.size(), 10u); }), 1.0);
}

TEST(AnalyzerControl, CancelledInsideTheReportStopsIt) {
  Recording rec = Recording::open(bigRecording());
  QueryControl control;
  double last = 0;
  Clock::time_point cancelledAt{};
  control.progress = [&](double f) {
    last = f;
    if (f >= 0.3 && cancelledAt == Clock::time_point{}) {
      cancelledAt = Clock::now();
      control.cancel();
    }
  };
  EXPECT_THROW(report(rec, {}, control), Cancelled);
  auto ms = std::chrono::duration<double, std::milli>(Clock::now() - cancelledAt).count();
  EXPECT_LT(last, 0.5);  // no further part of the report was started
  EXPECT_LT(ms, 50.0);
  // The recording is still whole: a question after a cancelled one gets its full answer.
  EXPECT_EQ(report(rec).leaks.count, 3000);
}

TEST(AnalyzerControl, CancelFromAnotherThreadIsPrompt) {
  Recording rec = Recording::open(bigRecording());
  QueryControl control;
  std::atomic<bool> started{false};
  std::atomic<int64_t> stoppedNs{0};
  int reports = 0;
  std::thread worker([&] {
    try {
      control.progress = [&](double) { started.store(true); };
      for (;;) {  // one report after another until cancelled
        (void)report(rec, {}, control);
        ++reports;
      }
    } catch (const Cancelled&) {
      stoppedNs.store(Clock::now().time_since_epoch().count());
    }
  });
  while (!started.load()) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto cancelledAt = Clock::now();
  control.cancel();
  worker.join();
  ASSERT_NE(stoppedNs.load(), 0);
  auto ms = std::chrono::duration<double, std::milli>(Clock::time_point(Clock::duration(stoppedNs.load())) - cancelledAt).count();
  EXPECT_LT(ms, 50.0) << "after " << reports << " whole reports";
}

TEST(AnalyzerControl, CancellingOneQuestionLeavesAnotherThreadsAlone) {
  // One connection serves both threads: the interrupt must hit only the cancelled question.
  Recording rec = Recording::open(bigRecording());
  const std::string expected = jsonText(toJson(report(rec)));
  std::atomic<bool> stop{false};
  std::atomic<int> other{0}, wrong{0};
  std::thread bystander([&] {
    while (!stop.load() || other.load() == 0) {
      if (jsonText(toJson(report(rec))) != expected) wrong.fetch_add(1);
      other.fetch_add(1);
    }
  });
  int cancelled = 0;
  for (int i = 0; i < 5; ++i) {
    QueryControl control;
    int calls = 0;
    control.progress = [&](double) {
      if (++calls == 3 + i) control.cancel();
    };
    try {
      (void)report(rec, {}, control);
    } catch (const Cancelled&) {
      ++cancelled;
    }
  }
  stop.store(true);
  bystander.join();
  EXPECT_EQ(cancelled, 5);
  EXPECT_GT(other.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(AnalyzerControl, AStatementRunningLongIsInterrupted) {
  // One row that never comes (an endless recursive query): only the progress handler can stop it.
  Recording rec = Recording::open(bigRecording());
  QueryControl control;
  std::atomic<bool> inside{false}, threw{false};
  std::thread worker([&] {
    detail::ControlScope scope(control);
    try {
      detail::Statement q(rec, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                               "SELECT count(*) FROM c");
      inside.store(true);
      q.step();
    } catch (const Cancelled&) {
      threw.store(true);
    }
  });
  while (!inside.load()) std::this_thread::yield();
  // Meanwhile another thread's statements on the same connection run to their end.
  const std::string expected = jsonText(toJson(report(Recording::open(bigRecording()))));
  std::atomic<bool> bystanderStarted{false};
  std::string seen;
  std::thread bystander([&] {
    QueryControl own;  // a control of its own, never cancelled
    own.progress = [&](double) { bystanderStarted.store(true); };
    seen = jsonText(toJson(report(rec, {}, own)));
  });
  while (!bystanderStarted.load()) std::this_thread::yield();
  auto cancelledAt = Clock::now();
  control.cancel();
  worker.join();
  auto ms = std::chrono::duration<double, std::milli>(Clock::now() - cancelledAt).count();
  bystander.join();
  EXPECT_TRUE(threw.load());
  EXPECT_LT(ms, 50.0);
  EXPECT_EQ(seen, expected);
}

TEST(AnalyzerControl, ACancelledControlStopsBeforeStarting) {
  Recording rec = Recording::open(bigRecording());
  QueryControl control;
  control.cancel();
  EXPECT_THROW(sites(rec, {}, control), Cancelled);
  EXPECT_THROW(curve(rec, {}, control), Cancelled);
  // Without a control nothing is cancelled: the thread's control ended with its question.
  EXPECT_EQ(sites(rec).size(), 3000u);
}
