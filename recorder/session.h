// One `memledger record` run: the private directory and control socket, the program started
// under the preload library, the event loop (registrations, ring draining, deaths, signals, /proc
// samples) and the finished file (symbols, indexes, complete=1, then compressed: compress.h).
//
// Event loop, single-threaded: poll() on the control socket, a signalfd (SIGCHLD and the signals
// forwarded to the program) and one pidfd per registered image, with a 1 ms timeout. Every round
// drains each ring by at most kDrainPerRound records (no ring starves another), refreshes the
// heartbeats and, every 10 ms per image, samples RSS. A round with a full drain polls without
// waiting.
//
// When it ends: after the started program exited, the recorder keeps recording the processes it
// left running (daemons: every registered image, and, following children, any descendant, which
// as subreaper we are the parent of) and says so once on stderr after 0.5 s; it finishes when they
// are all gone, or at SIGINT/SIGTERM/SIGHUP, which then stop the recording instead of being
// forwarded (images still running end with ended_by 'unknown').
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image_recorder.h"

namespace memledger::recorder {

struct SessionOptions {
  std::vector<std::string> argv;  // the program and its arguments
  std::string programPath;        // resolved (resolveProgram), checked runnable
  std::string output;             // the SQLite file, already created empty by the caller
  std::string preload;            // absolute path of libmemledger_preload.so
  bool followChildren = true;
  bool symbolize = true;
  bool compress = true;           // compress the finished file (compress.h); false keeps plain SQLite
  bool warnIfNothingRegisters = true;
  bool leakScan = true;           // the exit scan for leak kinds (docs/leak-kinds.md); `--scan off`  // false when the caller already warned (static binary)
  // The caller's process ends with the recording (the CLI): once the file is complete, runSession
  // ends the process itself (_exit, stdio flushed) instead of tearing down the recorder's tables,
  // which the kernel frees anyway. torch_mlp: the hash tables, stack tree, sites and the
  // symbolizer's caches took 55-108 ms to free one by one before the process could exit.
  bool exitWhenDone = false;
  RecordingOptions recording;     // origin_ns is set by runSession
  std::string version;            // memledger's version, for meta
};

// Runs the program to its end and writes the recording. Returns what `memledger record` exits
// with: the program's status (128+N for a death by signal N), 126/127 when it could not start,
// 2 when the recording itself could not be set up.
int runSession(const SessionOptions& opt);

}  // namespace memledger::recorder
