// Starting the traced program: PATH lookup with execvp's rules (checked before anything starts, so
// "not found" and "not executable" are reported as 127/126 like a shell), a look at the ELF file
// (a static or setuid binary cannot be recorded through LD_PRELOAD), the environment that makes
// the preload library register with us, and posix_spawn with the caller's signal mask undone.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace memledger::recorder {

struct ResolvedProgram {
  std::string path;   // what will be exec'd
  int error = 0;      // errno when it cannot be run (ENOENT: 127, anything else: 126)
};
// execvp semantics: a name with a slash is used as is, otherwise $PATH (default /bin:/usr/bin)
// is searched; a match that is not executable is remembered (EACCES) in case nothing else fits.
ResolvedProgram resolveProgram(const std::string& name);

struct BinaryInfo {
  bool elf = false;
  bool isStatic = false;    // ELF without PT_INTERP: the dynamic loader never runs, no LD_PRELOAD
  bool secure = false;      // setuid/setgid to someone else: the loader ignores LD_PRELOAD
};
BinaryInfo inspectBinary(const std::string& path);

// The environment for the program: ours, with `preload` put first in LD_PRELOAD and the
// recorder's directory in MEMLEDGER_DIR (MEMLEDGER_NO_FOLLOW=1 when children are not followed).
std::vector<std::string> programEnvironment(const std::string& preload, const std::string& dir,
                                            bool followChildren);

// Starts the program with `env`, signal dispositions and mask reset to defaults. Returns the pid,
// or -1 with errno set.
pid_t spawnProgram(const std::string& path, const std::vector<std::string>& argv,
                   const std::vector<std::string>& env);

}  // namespace memledger::recorder
