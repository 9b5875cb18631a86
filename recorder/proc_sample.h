// /proc readings about a traced process: whether it still runs (the fallback when pidfd_open is
// unavailable), its resident set, and its resident anonymous memory (for fragmentation: heap that
// is resident but not live).
#pragma once

#include <cstdint>

namespace memledger::recorder {

// False once the process is gone or a zombie.
bool processAlive(uint32_t pid);
// The wait status of a zombie (field 52 of /proc/PID/stat), readable until its parent reaps it:
// how the recorder learns the status of a process whose parent is not us and did not report it.
bool readZombieStatus(uint32_t pid, int* status);
// Resident bytes from /proc/PID/statm.
bool readRss(uint32_t pid, uint64_t* bytes);
// Resident anonymous bytes ("RssAnon:" of /proc/PID/status: the kernel's counter, cheap at any size).
bool readAnon(uint32_t pid, uint64_t* bytes);

}  // namespace memledger::recorder
