// CUDA_INJECTION64_PATH for `memledger record` (cuda_injection.h).
#include "cuda_injection.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace memledger::cli {

std::string setupCudaInjection(const std::string& preload, bool disabled) {
  std::string dir = preload.substr(0, preload.rfind('/') + 1);
  std::string collector = dir + MEMLEDGER_CUPTI_NAME;
  char real[PATH_MAX];
  bool present = ::access(collector.c_str(), R_OK) == 0 && ::realpath(collector.c_str(), real);
  const char* theirs = std::getenv("CUDA_INJECTION64_PATH");
  if (disabled || !present) return {};
  if (theirs && *theirs) {
    char theirsReal[PATH_MAX];
    if (::realpath(theirs, theirsReal) && std::string(theirsReal) == real) return real;  // ours already
    std::fprintf(stderr,
                 "memledger: warning: CUDA_INJECTION64_PATH is set (%s): keeping it, CUDA memory is not recorded\n",
                 theirs);
    return {};
  }
  ::setenv("CUDA_INJECTION64_PATH", real, 1);
  return real;
}

}  // namespace memledger::cli
