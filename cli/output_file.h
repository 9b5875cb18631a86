// The rule every command that writes a file named by -o follows (record, export): an existing
// file is never replaced unless --force says so, and a folder is never a file. Both are refused
// with one line before anything runs, exit 2.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <string>

namespace memledger::cli {

// false (after printing "memledger: CMD: ..." on stderr) when `path` cannot be used as the output.
inline bool outputAllowed(const std::string& path, bool force, const char* cmd) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "memledger: %s: cannot write '%s': it is a directory (give a file name)\n", cmd,
                 path.c_str());
    return false;
  }
  // lstat: a dangling symlink exists too, and is not followed (record opens with O_NOFOLLOW).
  if (!force && ::lstat(path.c_str(), &st) == 0) {
    std::fprintf(stderr, "memledger: %s: '%s' already exists (--force replaces it)\n", cmd, path.c_str());
    return false;
  }
  return true;
}

}  // namespace memledger::cli
