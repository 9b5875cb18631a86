// One function per `memledger` command. Each parses its own arguments (CLI11) and returns the
// process exit status. Exit codes, for every command:
//   0  success (for `check`: all limits hold)
//   1  `check`: a limit does not hold
//   2  bad usage, or a file that cannot be read as a recording
//   126/127  `record`/`check --`: the program is not executable / not found
//   otherwise `record` returns the traced program's own status (128+N for death by signal N)
#pragma once

namespace memledger::cli {

int cmdRecord(int argc, char** argv);
int cmdReport(int argc, char** argv);         // report, and the focused views below
int cmdView(const char* view, int argc, char** argv);  // leaks | peak | phases | fragmentation | suggest
int cmdCheck(int argc, char** argv);
int cmdDiff(int argc, char** argv);
int cmdExport(int argc, char** argv);
int cmdMark(int argc, char** argv);
int cmdGui(int argc, char** argv);  // execs memledger-gui (cli/gui_cmd.cpp)

// The directory holding the running executable (resolved /proc/self/exe), for finding the
// preload library at bin/../lib or bin/../lib/memledger.
const char* selfDir();

}  // namespace memledger::cli
