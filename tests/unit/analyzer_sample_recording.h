// Real recordings for the analyzer's unit tests: a sample program (samples/) recorded by the real
// CLI of a build. The unit tests do not depend on the CLI and the samples being built, so a test
// that needs one skips with the reason when they are not there. MEMLEDGER_RECORD_BUILD names the
// build whose CLI and samples to use (scripts/tsan.sh points its sanitizer build's tests at the
// plain build); the default is this test binary's own build.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "analyzer_fixture.h"

namespace memledger::testing {

inline std::string recordBuild() {
  const char* env = std::getenv("MEMLEDGER_RECORD_BUILD");
  return env && *env ? env : MEMLEDGER_BINARY_DIR;
}

// Records build/samples/<sample> once per test process (plain SQLite, or zstd-compressed as
// `record` leaves it by default); returns its path, or "" with `why` set when the CLI or the
// sample is missing or recording failed.
// `args` are the program's arguments (plain words: they are not quoted).
inline std::string sampleRecording(const std::string& sample, std::string* why, bool compressed = false,
                                   const std::string& args = "") {
  static std::map<std::string, std::string> done;
  std::string key = sample + (args.empty() ? "" : "-" + args) + (compressed ? ".zst" : "");
  for (char& c : key)
    if (c == ' ') c = '_';
  auto found = done.find(key);
  if (found != done.end()) {
    if (found->second.empty()) *why = "recording " + sample + " failed before";
    return found->second;
  }
  std::string build = recordBuild();
  std::string cli = build + "/bin/memledger", program = build + "/samples/" + sample;
  std::string& path = done[key];
  if (!std::filesystem::exists(cli) || !std::filesystem::exists(program)) {
    *why = "needs " + cli + " and " + program + " (build the memledger and memledger_samples targets)";
    return path;
  }
  std::string out = tempPath("sample-" + key + ".db");
  std::string cmd = "'" + cli + "' record " + (compressed ? "" : "--no-compress ") + "-o '" + out + "' -- '" +
                    program + "' " + args + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0 || !std::filesystem::exists(out)) {
    *why = "`" + cmd + "` failed";
    return path;
  }
  path = out;
  return path;
}

// sampleRecording() as a test wants it: the plain SQLite path, a failure (with the reason) when
// it could not be made.
inline std::string recordingOf(const std::string& sample, const std::string& args = "") {
  std::string why;
  std::string path = sampleRecording(sample, &why, false, args);
  if (path.empty()) ADD_FAILURE() << why;
  return path;
}

// Records samples/python/<script> under Debian's CPython (/usr/bin/python3, plain SQLite); its
// path, or "" with `why` set when the CLI or that Python is missing or recording failed.
inline std::string pythonRecording(const std::string& script, const std::string& args, std::string* why) {
  const std::string cli = recordBuild() + "/bin/memledger";
  if (!std::filesystem::exists(cli) || !std::filesystem::exists("/usr/bin/python3")) {
    *why = "needs " + cli + " and /usr/bin/python3";
    return "";
  }
  std::string key = script + "-" + args;
  for (char& c : key)
    if (c == ' ' || c == '/') c = '_';
  const std::string out = tempPath("python-" + key + ".db");
  const std::string cmd = "'" + cli + "' record --no-compress --force -o '" + out + "' -- /usr/bin/python3 '" +
                          MEMLEDGER_SOURCE_DIR + "/samples/python/" + script + "' " + args + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *why = "`" + cmd + "` failed";
    return "";
  }
  return out;
}

}  // namespace memledger::testing
