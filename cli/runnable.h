// Whether a program can be started, decided before anything is created or run: the checks
// `record` and `check -- PROGRAM` make so that a program that cannot be executed gives one line
// and 126/127 (as a shell reports it) and leaves no recording behind.
#pragma once

#include <string>

namespace memledger::cli {

// Looks `name` up with execvp's rules (recorder/launch.h) and looks at the file's first bytes:
// an ELF file or a "#!" script whose interpreter exists is runnable. A readable executable that is
// neither (a text file without "#!") would fail with ENOEXEC: execvp would hand it to /bin/sh,
// posix_spawn refuses it; we refuse it up front. Returns 0 (with the path to exec in *path), or
// prints "memledger: cannot run 'NAME': WHY" and returns 127 (not found, or a "#!" interpreter
// that is not there) or 126 (not executable).
int checkRunnable(const std::string& name, std::string* path);

}  // namespace memledger::cli
