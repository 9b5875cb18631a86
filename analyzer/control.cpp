// Progress and cancellation of long questions (analyzer/control.h), and the controlled overloads
// of the questions a GUI runs on worker threads (analyzer.h, export_formats.h).
#include "analyzer/control.h"

#include <exception>

#include "analyzer/export_formats.h"

namespace memledger::analyzer {

namespace detail {

namespace {

// The current thread's question: its control and the part of [0, 1] the current stage covers.
struct ThreadState {
  QueryControl* control = nullptr;
  double lo = 0, hi = 1;
  double last = -1;  // the last fraction reported
};
thread_local ThreadState state;

}  // namespace

QueryControl* currentControl() { return state.control; }

void throwIfCancelled() {
  if (cancelRequested()) throw Cancelled();
}

namespace {

// progress() without the cancellation check.
void tell(double fraction) {
  QueryControl* c = state.control;
  if (!c || !c->progress) return;
  fraction = fraction < 0 ? 0 : fraction > 1 ? 1 : fraction;
  double value = state.lo + (state.hi - state.lo) * fraction;
  // A loop may report every row: the callback hears of steps of 1/1000 (and of the end).
  if (value < 1 && value < state.last + 1e-3) return;
  if (value <= state.last) return;
  state.last = value;
  c->progress(value);
}

}  // namespace

void progress(double fraction) {
  if (!state.control) return;
  throwIfCancelled();
  tell(fraction);
}

Stage::Stage(double from, double to)
    : savedLo_(state.lo), savedHi_(state.hi), to_(to), exceptions_(std::uncaught_exceptions()) {
  throwIfCancelled();
  double width = state.hi - state.lo;
  state.lo = savedLo_ + width * from;
  state.hi = savedLo_ + width * to;
}

Stage::~Stage() {
  state.lo = savedLo_;
  state.hi = savedHi_;
  // Not on the way out of an exception (a cancelled stage did not get there), and never a throw
  // from here: a callback that throws is not heard on this path.
  if (std::uncaught_exceptions() > exceptions_) return;
  try {
    tell(to_);
  } catch (...) {
  }
}

ControlScope::ControlScope(QueryControl& control)
    : nested_(state.control == &control),
      savedControl_(state.control),
      savedLo_(state.lo),
      savedHi_(state.hi),
      savedLast_(state.last) {
  if (nested_) return;
  state = ThreadState{&control, 0, 1, -1};
  try {
    progress(0);
  } catch (...) {  // the callback threw: the destructor will not run
    state = ThreadState{savedControl_, savedLo_, savedHi_, savedLast_};
    throw;
  }
}

ControlScope::~ControlScope() {
  if (nested_) return;
  state = ThreadState{savedControl_, savedLo_, savedHi_, savedLast_};
}

int sqliteProgressHandler(void*) { return cancelRequested() ? 1 : 0; }

}  // namespace detail

Report report(const Recording& rec, const Filter& filter, QueryControl& control) {
  return detail::controlled(control, [&] { return report(rec, filter); });
}

Report reportFirstPart(const Recording& rec, const Filter& filter, QueryControl& control) {
  return detail::controlled(control, [&] { return reportFirstPart(rec, filter); });
}

void reportSecondPart(const Recording& rec, Report& report, QueryControl& control) {
  detail::controlled(control, [&] {
    reportSecondPart(rec, report);
    return 0;
  });
}
std::vector<Site> sites(const Recording& rec, const Filter& filter, QueryControl& control) {
  return detail::controlled(control, [&] { return sites(rec, filter); });
}
Leaks leaks(const Recording& rec, const Filter& filter, QueryControl& control) {
  return detail::controlled(control, [&] { return leaks(rec, filter); });
}
std::vector<Phase> phases(const Recording& rec, const Filter& filter, QueryControl& control) {
  return detail::controlled(control, [&] { return phases(rec, filter); });
}
std::vector<TimelinePoint> timeline(const Recording& rec, std::optional<int64_t> image_id, QueryControl& control) {
  return detail::controlled(control, [&] { return timeline(rec, image_id); });
}
std::string exportFolded(const Recording& rec, Metric metric, QueryControl& control) {
  return detail::controlled(control, [&] { return exportFolded(rec, metric); });
}
nlohmann::json exportChromeTrace(const Recording& rec, QueryControl& control) {
  return detail::controlled(control, [&] { return exportChromeTrace(rec); });
}
std::string exportPprof(const Recording& rec, QueryControl& control) {
  return detail::controlled(control, [&] { return exportPprof(rec); });
}

}  // namespace memledger::analyzer
