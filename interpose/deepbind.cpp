// Libraries loaded with RTLD_DEEPBIND look symbols up in their own dependencies first, so their
// calls to malloc, free, operator new, mmap... bind straight to libc and libstdc++, past the
// hooks. The library is loaded exactly as asked; afterwards the GOT entries of the allocator
// symbols in it and in the dependencies that dlopen loaded with it, where they hold (or would
// resolve to) the function the hook stands in front of, are pointed at the hook (memray does
// this for every library). Entries bound to anything else (a library's own allocator) stay.
//
// The dlopen hook must otherwise stay a tail call (hooks_process.cpp): glibc searches the
// calling object's RPATH/RUNPATH and namespace. Here the call is made from this library, so a
// bare name is first looked up the way the caller's dlopen would have looked it up (dlinfo's
// RTLD_DI_SERINFO for the caller: its RPATH, LD_LIBRARY_PATH, its RUNPATH, the default
// directories) and opened by path where this library's own search would find another file, in
// the caller's namespace. Not handled: a library's constructors run before the patch (their
// allocations are not seen), names with "$ORIGIN".
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "arena.h"
#include "runtime.h"

namespace memledger::preload {

namespace {

// The symbols the hooks define that allocate or release (the process hooks are left alone).
constexpr const char* kSymbols[] = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "malloc_usable_size", "mmap", "mmap64", "munmap", "mremap",
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t", "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t", "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};
constexpr int kSymbolCount = sizeof(kSymbols) / sizeof(kSymbols[0]);

struct Targets {
  void* hook[kSymbolCount];  // this library's definition
  void* real[kSymbolCount];  // the next one (libc's, libstdc++'s): what deep binding finds
};

constexpr int kMaxObjects = 4096;
struct Snapshot {
  int n;
  uint64_t bias[kMaxObjects];
};

int collect(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Snapshot*>(data);
  if (s->n < kMaxObjects) s->bias[s->n++] = info->dlpi_addr;
  return 0;
}

bool had(const Snapshot& s, uint64_t bias) {
  for (int i = 0; i < s.n; ++i)
    if (s.bias[i] == bias) return true;
  return false;
}

int symbolIndex(const char* name) {
  if (name[0] != 'm' && name[0] != 'c' && name[0] != 'r' && name[0] != 'f' && name[0] != 'p' &&
      name[0] != 'a' && name[0] != 'v' && name[0] != '_')
    return -1;
  for (int i = 0; i < kSymbolCount; ++i)
    if (strcmp(name, kSymbols[i]) == 0) return i;
  return -1;
}

struct Patch {
  const Snapshot* before;
  const Targets* targets;
  void* handle;
};

// Writes `value` into the GOT slot, making its page writable for the write when RELRO made it
// read-only.
void writeSlot(const dl_phdr_info* info, uint64_t slot, uint64_t value) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type != PT_GNU_RELRO || slot < start || slot >= start + ph.p_memsz) continue;
    uint64_t page = slot & ~uint64_t{4095};
    if (syscall(SYS_mprotect, page, 4096, PROT_READ | PROT_WRITE) != 0) return;
    __atomic_store_n(reinterpret_cast<uint64_t*>(slot), value, __ATOMIC_RELAXED);
    syscall(SYS_mprotect, page, 4096, PROT_READ);
    return;
  }
  __atomic_store_n(reinterpret_cast<uint64_t*>(slot), value, __ATOMIC_RELAXED);
}

void patchRelocations(const dl_phdr_info* info, const Patch& p, const ElfW(Rela)* rel, size_t bytes,
                      const ElfW(Sym)* symtab, const char* strtab, uint64_t lo, uint64_t hi) {
  for (size_t k = 0; k < bytes / sizeof(ElfW(Rela)); ++k) {
    uint32_t type = ELF64_R_TYPE(rel[k].r_info);
    if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
    const ElfW(Sym)& sym = symtab[ELF64_R_SYM(rel[k].r_info)];
    if (sym.st_shndx != SHN_UNDEF) continue;  // defined here: the library's own
    int i = symbolIndex(strtab + sym.st_name);
    if (i < 0 || !p.targets->hook[i]) continue;
    uint64_t slot = info->dlpi_addr + rel[k].r_offset;
    uint64_t now = *reinterpret_cast<const uint64_t*>(slot);
    bool bound = now == reinterpret_cast<uint64_t>(p.targets->real[i]);
    // Lazy binding not done yet: the slot still points into this object's PLT. What it would
    // resolve to is what the handle's own lookup scope finds first.
    bool lazy = now >= lo && now < hi && dlsym(p.handle, kSymbols[i]) == p.targets->real[i];
    if (bound || lazy) writeSlot(info, slot, reinterpret_cast<uint64_t>(p.targets->hook[i]));
  }
}

int patchObject(dl_phdr_info* info, size_t, void* data) {
  const auto& p = *static_cast<const Patch*>(data);
  if (had(*p.before, info->dlpi_addr)) return 0;
  const ElfW(Dyn)* dyn = nullptr;
  uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(a);
    if (ph.p_type == PT_LOAD) {
      if (a < lo) lo = a;
      if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
    }
  }
  if (!dyn) return 0;
  // The loader relocated these entries in place (d_ptr += load bias) for objects it mapped.
  auto addr = [&](uint64_t v) { return v < info->dlpi_addr ? v + info->dlpi_addr : v; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)*jmprel = nullptr, *rela = nullptr;
  size_t jmpBytes = 0, relaBytes = 0;
  bool pltIsRela = true;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(addr(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr)); break;
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmpBytes = d->d_un.d_val; break;
      case DT_PLTREL: pltIsRela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_RELASZ: relaBytes = d->d_un.d_val; break;
      default: break;
    }
  }
  if (!symtab || !strtab) return 0;
  if (jmprel && pltIsRela) patchRelocations(info, p, jmprel, jmpBytes, symtab, strtab, lo, hi);
  if (rela) patchRelocations(info, p, rela, relaBytes, symtab, strtab, lo, hi);
  return 0;
}

// The first directory of `map`'s search list (RPATH, LD_LIBRARY_PATH, RUNPATH, the defaults)
// holding `file`, as "dir/file" in buf; false when none does.
bool firstInSearchList(const char* file, void* map, char* buf, size_t cap) {
  Dl_serinfo size;
  if (!map || dlinfo(map, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size == 0) return false;
  auto* info = static_cast<Dl_serinfo*>(arena::alloc(size.dls_size, 16));
  if (!info) return false;
  info->dls_size = size.dls_size;
  info->dls_cnt = size.dls_cnt;
  bool found = false;
  if (dlinfo(map, RTLD_DI_SERINFO, info) == 0) {
    size_t nameLen = strlen(file);
    for (unsigned i = 0; i < info->dls_cnt && !found; ++i) {
      const char* dir = info->dls_serpath[i].dls_name;
      size_t dirLen = strlen(dir);
      if (dirLen + 1 + nameLen + 1 > cap) continue;
      memcpy(buf, dir, dirLen);
      buf[dirLen] = '/';
      memcpy(buf + dirLen + 1, file, nameLen + 1);
      found = syscall(SYS_access, buf, F_OK) == 0;
    }
  }
  arena::release(info);
  return found;
}

void* selfMap() {
  Dl_info info;
  void* map = nullptr;
  return dladdr1(reinterpret_cast<void*>(&selfMap), &info, &map, RTLD_DL_LINKMAP) ? map : nullptr;
}

// The name to hand to dlopen from this library so that it loads what the caller's dlopen would:
// the bare name where this library's own search finds the same file first (or neither finds it:
// both then use the cache and the default directories), the path the caller's search finds
// otherwise (the loader then keeps that path as the name it was asked for).
const char* resolvePath(const char* file, void* callerMap, char* buf, size_t cap) {
  if (strchr(file, '/') || strchr(file, '$') || !callerMap) return file;
  if (!firstInSearchList(file, callerMap, buf, cap)) return file;
  char* mine = static_cast<char*>(arena::alloc(cap, 16));
  bool same = mine && firstInSearchList(file, selfMap(), mine, cap) && strcmp(mine, buf) == 0;
  if (mine) arena::release(mine);
  return same ? file : buf;
}

}  // namespace

void* deepbindOpen(const char* file, int mode, const void* caller) {
  using DlmopenFn = void* (*)(Lmid_t, const char*, int);
  static DlmopenFn realDlmopen = nullptr;
  uint32_t saved = t_state.busy;
  t_state.busy = 1;  // what this needs (dladdr1, dlinfo, the snapshot) is the library's own
  Dl_info info;
  void* callerMap = nullptr;
  if (!dladdr1(caller, &info, &callerMap, RTLD_DL_LINKMAP)) callerMap = nullptr;
  Lmid_t lmid = LM_ID_BASE;
  if (callerMap) dlinfo(callerMap, RTLD_DI_LMID, &lmid);
  char* path = static_cast<char*>(arena::alloc(4096, 16));
  const char* name = path ? resolvePath(file, callerMap, path, 4096) : file;
  auto* before = static_cast<Snapshot*>(arena::alloc(sizeof(Snapshot), 16));
  if (before) {
    before->n = 0;
    dl_iterate_phdr(&collect, before);
  }
  if (lmid != LM_ID_BASE && !realDlmopen)
    realDlmopen = reinterpret_cast<DlmopenFn>(dlsym(RTLD_NEXT, "dlmopen"));
  t_state.busy = saved;  // the library's constructors run unguarded, like any dlopen's

  void* handle = lmid != LM_ID_BASE && realDlmopen ? realDlmopen(lmid, name, mode) : R.dlopen(name, mode);

  t_state.busy = 1;
  if (handle && before && before->n < kMaxObjects) {
    static Targets targets;  // the same for the whole process: filled once
    static bool filled = false;
    if (!filled) {
      for (int i = 0; i < kSymbolCount; ++i) {
        // The global scope's definition, where it is this library's (a program that brings its
        // own malloc keeps it: nothing of it is patched).
        void* global = dlsym(RTLD_DEFAULT, kSymbols[i]);
        targets.hook[i] = inSelf(reinterpret_cast<uint64_t>(global)) ? global : nullptr;
        targets.real[i] = dlsym(RTLD_NEXT, kSymbols[i]);
      }
      filled = true;
    }
    Patch p{before, &targets, handle};
    dl_iterate_phdr(&patchObject, &p);
  }
  if (path) arena::release(path);
  if (before) arena::release(before);
  // The dlopen succeeded, so dlerror() has nothing to say (each dl call clears the last error):
  // nor may it about the lookups made here. A failed dlopen keeps its message.
  if (handle) dlerror();
  t_state.busy = saved;
  return handle;
}

}  // namespace memledger::preload
