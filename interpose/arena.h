// The preload library's own heap: every allocation made while a hook holds the guard (dlsym's
// calloc during bootstrap, pthread_setspecific's and pthread_atfork's tables, the loader's and
// libunwind's memory when libunwind is loaded on the first capture the own walker cannot take,
// __tls_get_addr's blocks for it) is served here, from one range mapped with the raw syscall,
// never from the program's allocator: a program reading mallinfo2() sees only its own blocks.
//
// Blocks are powers of two (16 B .. 16 MiB), each aligned to its size up to the 64 KiB span it
// is carved from; a span serves one size. Freed blocks go on a free list per size. The range is
// reserved once (MAP_NORESERVE, touched as used); when it is full, callers fall back to the real
// allocator. Pointers into it are recognised by address: free(), realloc() and
// malloc_usable_size() called on one by anybody (glibc frees a thread's TSD table and dynamic TLS
// blocks at thread exit, outside any hook) are handled here and never reach libc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memledger::preload::arena {

extern uintptr_t g_base;  // 0 until the first allocation maps the range
inline constexpr uintptr_t kBytes = uintptr_t{64} << 20;  // reserved, touched as used

inline bool contains(const void* p) { return reinterpret_cast<uintptr_t>(p) - g_base < kBytes; }

void* alloc(size_t n, size_t align);  // null: too big, or the range is full
void* zalloc(size_t n);               // zeroed (calloc); null on overflow too
void* resize(void* p, size_t n);      // p in the arena (or null); the old block is freed
void release(void* p);                // p in the arena
size_t usable(const void* p);         // p in the arena: its block's size

// A fork child: the lock's holder may not exist there. The lock is not held across fork (a thread
// allocating here may hold a lock fork takes, the loader's or the atfork list's); a free list a
// thread was half-way through in the parent (a few stores) can be wrong in the child.
void resetAfterFork();

}  // namespace memledger::preload::arena
