// Process life: exit codes, reaped children, fork, and loaded modules. None of these hooks holds
// the guard across the real call: exit runs atexit handlers and destructors, dlclose runs a
// library's destructors, and their frees must be recorded.
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime.h"
#include "unwinder.h"

using namespace memledger::preload;
using memledger::wire::RecordType;

namespace {

void ensureReals() {
  if (ML_UNLIKELY(!bootstrapped())) bootstrap();
}

// aux says which call ended the process: 0 exit, 1 _exit, 2 _Exit. a = the status as the parent
// will see it (status & 0xff).
void recordExit(int status, uint16_t which) {
  if (!sameProcess() || !enter()) return;  // a vfork child's exit is not the parent's
  recordSimple(RecordType::Exit, static_cast<uint64_t>(status & 0xff), 0, 0, which);
  leave();
}

void recordReaped(pid_t pid, int status) {
  if (pid <= 0 || !(WIFEXITED(status) || WIFSIGNALED(status))) return;  // stopped/continued
  if (!enter()) return;
  recordSimple(RecordType::ChildStatus, static_cast<uint64_t>(pid),
               static_cast<uint64_t>(static_cast<uint32_t>(status)), 0, 0);
  leave();
}

}  // namespace

// Must stay a plain tail call: glibc finds the calling object from dlopen's return address and
// searches that object's RUNPATH ($ORIGIN...). Any code after the call would make this library
// the caller. New modules are reported before the first stack that runs in them (modules.cpp).
// RTLD_DEEPBIND is the exception: deepbind.cpp looks the name up as the caller would, then
// points the new libraries' allocator relocations at the hooks.
ML_EXPORT void* dlopen(const char* file, int mode) {
  ensureReals();
  g_dlopenCount.fetch_add(1, std::memory_order_relaxed);
  if (ML_UNLIKELY((mode & RTLD_DEEPBIND) && file)) return deepbindOpen(file, mode, __builtin_return_address(0));
  return R.dlopen(file, mode);
}

ML_EXPORT int dlclose(void* handle) {
  ensureReals();
  int rc = R.dlclose(handle);
  // The unwinder's rules for unloaded code go, under the guard (nothing of the program's runs there).
  bool outer = !t_state.busy;
  t_state.busy = 1;
  unwind::codeUnloaded();
  if (outer) t_state.busy = 0;
  if (enter()) {
    modulesRescan();  // ModuleGone for every module that went away
    leave();
  }
  return rc;
}

ML_EXPORT void exit(int status) {
  ensureReals();
  recordExit(status, 0);
  R.exit(status);
}

ML_EXPORT void _exit(int status) {
  ensureReals();
  recordExit(status, 1);
  R._exit(status);
}

ML_EXPORT void _Exit(int status) {
  ensureReals();
  recordExit(status, 2);
  R._Exit(status);
}

ML_EXPORT pid_t wait(int* status) {
  ensureReals();
  int local = 0;
  int* s = status ? status : &local;
  pid_t pid = R.wait(s);
  recordReaped(pid, *s);
  return pid;
}

ML_EXPORT pid_t waitpid(pid_t which, int* status, int options) {
  ensureReals();
  int local = 0;
  int* s = status ? status : &local;
  pid_t pid = R.waitpid(which, s, options);
  recordReaped(pid, *s);
  return pid;
}

ML_EXPORT pid_t wait4(pid_t which, int* status, int options, struct rusage* usage) {
  ensureReals();
  int local = 0;
  int* s = status ? status : &local;
  pid_t pid = R.wait4(which, s, options, usage);
  recordReaped(pid, *s);
  return pid;
}

// dash and other shells reap with wait3: wait4 on any child.
ML_EXPORT pid_t wait3(int* status, int options, struct rusage* usage) {
  return wait4(-1, status, options, usage);
}

ML_EXPORT int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
  ensureReals();
  int rc = R.waitid(type, id, info, options);
  if (rc != 0 || !info || (options & WNOWAIT) || info->si_pid == 0) return rc;
  // Rebuild the waitpid-style status the record carries.
  int status;
  switch (info->si_code) {
    case CLD_EXITED: status = (info->si_status & 0xff) << 8; break;
    case CLD_KILLED: status = info->si_status & 0x7f; break;
    case CLD_DUMPED: status = (info->si_status & 0x7f) | 0x80; break;
    default: return rc;
  }
  recordReaped(info->si_pid, status);
  return rc;
}

// The child must not write one record into the parent's ring: inFork makes every hook that runs
// during fork (other libraries' atfork handlers included) check the pid first.
ML_EXPORT pid_t fork() {
  ensureReals();
  t_state.inFork = 1;
  pid_t pid = R.fork();
  if (pid == 0) childAfterFork();
  t_state.inFork = 0;
  return pid;
}

ML_EXPORT pid_t _Fork() {
  ensureReals();
  t_state.inFork = 1;
  pid_t pid = R._Fork();
  if (pid == 0) childAfterFork();
  t_state.inFork = 0;
  return pid;
}
