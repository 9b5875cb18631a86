#include <climits>
#include <cstring>
#include <string>
#include <unistd.h>

#include "commands.h"

namespace memledger::cli {

const char* selfDir() {
  static std::string dir = [] {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return std::string(".");
    std::string path(buf, static_cast<size_t>(n));
    auto slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
  }();
  return dir.c_str();
}

}  // namespace memledger::cli
