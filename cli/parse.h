// Command-line parsing shared by every command: --help prints and exits 0, a bad command line
// is one line on stderr and exit 2 (cli/commands.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

namespace memledger::cli {

// CLI11's formatter with one usage line of our own, for commands whose forms its generated line
// ("Usage: NAME [OPTIONS] [file]") cannot say.
class UsageFormatter : public CLI::Formatter {
 public:
  explicit UsageFormatter(std::string usage) : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App*, std::string) const override { return "Usage: " + usage_ + "\n"; }

 private:
  std::string usage_;
};

// The most stack frames the lists of one report, view or JSON export may hold (see
// Recording::limitStackFrames). Each listed frame costs about 2 KB until the JSON is written: a
// PyTorch run's report at --top 1000 holds 430,000 frames in 0.9 GB; its 210,000 leak sites
// asked for at once ran to 24 GB and were killed. Past the limit: a one-line error, exit 2.
constexpr size_t kMaxListedFrames = 2'000'000;

// -1: parsed, go on; otherwise the exit status to return.
inline int parseCommandLine(CLI::App& app, int argc, char** argv, const char* name) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
    std::fprintf(stderr, "memledger: %s: %s (see 'memledger %s --help')\n", name, e.what(), name);
    return 2;
  }
}

}  // namespace memledger::cli
