// `memledger gui [FILE] [OPTIONS]`: runs memledger-gui (built beside this binary when Qt 6 was
// found) with the same arguments. Exit 127 when it is not there, 126 when it cannot be run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace memledger::cli {

int cmdGui(int argc, char** argv) {
  std::string gui = std::string(selfDir()) + "/memledger-gui";
  std::vector<char*> args{gui.data()};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(gui.c_str(), args.data());
  int err = errno;
  std::fprintf(stderr, "memledger: cannot run '%s': %s%s\n", gui.c_str(), std::strerror(err),
               err == ENOENT ? " (the GUI is built when Qt 6 Widgets are installed: scripts/deps.sh)" : "");
  return err == ENOENT ? 127 : 126;
}

}  // namespace memledger::cli
