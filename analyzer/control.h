// Internal to the analyzer: the QueryControl (analyzer.h) of the question running on this thread.
//
// A question given a control runs under a ControlScope, which makes that control the thread's
// current one. Everything below it reads the current control instead of taking a parameter:
// Statement::step() (every row of every query) and Recording::stackFrames() throw Cancelled once
// it is cancelled, the connection's SQLite progress handler interrupts a statement that runs long
// between rows, and detail::progress() reports a fraction of the current stage. A thread without
// a control pays one thread_local load per row.
#pragma once

#include <utility>

#include "analyzer/analyzer.h"

namespace memledger::analyzer::detail {

// The current thread's control, nullptr when none.
QueryControl* currentControl();

// Whether the current control (if any) was cancelled; throwIfCancelled() throws Cancelled then.
inline bool cancelRequested() {
  QueryControl* c = currentControl();
  return c && c->cancelled.load(std::memory_order_relaxed);
}
void throwIfCancelled();

// Reports `fraction` (0..1) of the current stage to the control's progress callback, mapped into
// the whole question's range; steps under 1/1000 of the whole are not passed on. Throws
// Cancelled when the control was cancelled, so a loop that reports its progress also stops.
void progress(double fraction);

// A part [from, to) of the current stage: progress() inside it is scaled into that part; on
// leaving normally, the progress of `to` is reported. Stages nest. Throws Cancelled on entry
// when the control was cancelled.
class Stage {
 public:
  Stage(double from, double to);
  ~Stage();
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;

 private:
  double savedLo_, savedHi_, to_;
  int exceptions_;  // in flight when it began: more on leaving means it is being unwound
};

// Makes `control` current on this thread while it lives (a scope of the control already current
// changes nothing). Reports progress 0 on entry.
class ControlScope {
 public:
  explicit ControlScope(QueryControl& control);
  ~ControlScope();
  ControlScope(const ControlScope&) = delete;
  ControlScope& operator=(const ControlScope&) = delete;

 private:
  bool nested_;
  QueryControl* savedControl_;
  double savedLo_, savedHi_, savedLast_;
};

// Runs f() under `control`: Cancelled when it was cancelled (a statement interrupted by the
// progress handler fails with an SQLite error, which becomes Cancelled here), progress 1.0 when
// f() returned.
template <class F>
auto controlled(QueryControl& control, F&& f) -> decltype(f()) {
  ControlScope scope(control);
  try {
    throwIfCancelled();
    auto result = std::forward<F>(f)();
    throwIfCancelled();
    progress(1.0);
    return result;
  } catch (const Cancelled&) {
    throw;
  } catch (const RecordingError&) {
    if (control.cancelled.load(std::memory_order_relaxed)) throw Cancelled();
    throw;
  }
}

// For Recording::open: interrupts a running statement of this connection when the current
// thread's control is cancelled (sqlite3_progress_handler).
int sqliteProgressHandler(void*);

}  // namespace memledger::analyzer::detail
