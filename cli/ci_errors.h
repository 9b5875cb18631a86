// The one-line error every CI-facing command prints for a recording it cannot read (exit 2).
#pragma once

#include <cstdio>
#include <string>

#include "analyzer/analyzer.h"

namespace memledger::cli {

inline int recordingErrorExit(const std::exception& e) {
  std::string msg = e.what();
  std::fprintf(stderr, "%s%s\n", msg.starts_with("memledger:") ? "" : "memledger: ", msg.c_str());
  return 2;
}

}  // namespace memledger::cli
