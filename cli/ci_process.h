// Child processes for `check`: running `memledger record` (this same executable) on a program,
// and capturing a program's stdout (gtest's --gtest_list_tests).
#pragma once

#include <string>
#include <vector>

namespace memledger::cli {

struct ChildResult {
  int status = -1;        // exit code, or 128+N for death by signal N; 127 when exec failed
  std::string out;        // captured stdout (captureOutput only)
};

// Runs argv with stdin/stdout/stderr inherited, waits for it.
ChildResult runChild(const std::vector<std::string>& argv);
// Runs argv with stdout captured (stderr inherited).
ChildResult runChildCapture(const std::vector<std::string>& argv);

// `<selfDir>/memledger record -o dbPath -- program...`; returns record's status (the program's
// own status passed through, 126/127 when it could not be started). compress=false adds
// --no-compress: a recording read once and deleted is not worth compressing.
// scan: the exit scan for leak kinds (`record --scan on|off`).
int recordProgram(const std::string& dbPath, const std::vector<std::string>& program, bool compress,
                  bool scan = true);

// A fresh private directory under $TMPDIR (or /tmp); empty string on failure.
std::string makeTempDir();
void removeTree(const std::string& path);

}  // namespace memledger::cli
