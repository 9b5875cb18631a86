// The registry of memory kinds and of the calls that make and release them: the one list from
// which the wire format (interpose/wire.h), the recorder, the schema's codes and the analyzer take
// their names and codes. Header-only, no library: the preload library includes it too.
//
// A kind says what a block is; its address space says which live total it counts in (host heap,
// host mmap, a device, pinned host, managed); its shape says how it is counted there:
//   Block      an allocation that adds its size to its space's live total (malloc, cudaMalloc)
//   Range      a mapping freed by address range, in pieces (anonymous mmap)
//   PoolBlock  a block handed out inside memory already counted (a custom pool's block inside a
//              malloc'ed arena, a PyTorch block inside a segment): it counts as "in use" of its
//              pool, never again in its space, so a pool is counted once.
// Codes are what recordings store (site_totals, site_buckets): append only, never reuse one.
// To add a kind, add one line to MEMLEDGER_KINDS: the recorder, the schema's codes, the analyzer's
// names and filters all follow (tests/unit/kinds_test.cpp checks that they do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace memledger::kinds {

// Address spaces. Device has one live total per device number; the others are one each.
enum class Space : uint8_t { HostHeap = 0, HostMmap = 1, Device = 2, Pinned = 3, Managed = 4, Count };
enum class Shape : uint8_t { Block, Range, PoolBlock };

// X(enumerator, code, name, space, shape)
#define MEMLEDGER_KINDS(X)                                              \
  X(Malloc, 0, "malloc", HostHeap, Block)                               \
  X(New, 1, "new", HostHeap, Block)                                     \
  X(Mmap, 2, "mmap", HostMmap, Range)                                   \
  X(Custom, 3, "custom", HostHeap, PoolBlock)    /* memledger_alloc, memledger_pool_alloc */ \
  X(Device, 4, "device", Device, Block)          /* cuMemAlloc, cuMemAllocPitch, arrays */ \
  X(Pinned, 5, "pinned", Pinned, Block)          /* cuMemAllocHost, cuMemHostAlloc/Register */ \
  X(Managed, 6, "managed", Managed, Block)       /* cuMemAllocManaged */ \
  X(Pool, 7, "pool", Device, Block)              /* cuMemAllocAsync, cuMemAllocFromPoolAsync */ \
  X(Vmm, 8, "vmm", Device, Block)                /* cuMemCreate: physical memory per handle */ \
  X(TorchBlock, 9, "torch_block", Device, PoolBlock)  /* a caching-allocator block in a segment */ \
  X(PyObject, 10, "pyobject", HostMmap, PoolBlock)    /* an object in the pool "pymalloc": its arenas are mmap */

// Kinds a build adds without editing the list above (tests/kind_extension builds the recorder and
// the analyzer with one more, to show that nothing else needs an edit).
#ifndef MEMLEDGER_EXTRA_KINDS
#define MEMLEDGER_EXTRA_KINDS(X)
#endif

enum class Kind : uint8_t {
#define MEMLEDGER_KIND_ENUM(e, code, name, space, shape) e = code,
  MEMLEDGER_KINDS(MEMLEDGER_KIND_ENUM) MEMLEDGER_EXTRA_KINDS(MEMLEDGER_KIND_ENUM)
#undef MEMLEDGER_KIND_ENUM
};

struct KindInfo {
  Kind kind;
  uint8_t code;
  const char* name;
  Space space;
  Shape shape;
};

inline constexpr KindInfo kKinds[] = {
#define MEMLEDGER_KIND_INFO(e, code, name, space, shape) {Kind::e, code, name, Space::space, Shape::shape},
    MEMLEDGER_KINDS(MEMLEDGER_KIND_INFO) MEMLEDGER_EXTRA_KINDS(MEMLEDGER_KIND_INFO)
#undef MEMLEDGER_KIND_INFO
};
inline constexpr size_t kKindCount = sizeof(kKinds) / sizeof(kKinds[0]);

// Codes are dense 0..kKindCount-1 in list order: a table indexed by code needs no lookup.
constexpr bool codesAreDense() {
  for (size_t i = 0; i < kKindCount; ++i)
    if (kKinds[i].code != i || static_cast<size_t>(kKinds[i].kind) != i) return false;
  return true;
}
static_assert(codesAreDense(), "kind codes must be 0, 1, 2, ... in MEMLEDGER_KINDS order");

constexpr bool known(uint64_t code) { return code < kKindCount; }
// The kind of a code from a recording or the wire; nullptr-free: unknown codes are not kinds.
constexpr const KindInfo* info(uint64_t code) { return known(code) ? &kKinds[code] : nullptr; }
constexpr const KindInfo& info(Kind k) { return kKinds[static_cast<size_t>(k)]; }
constexpr const char* name(Kind k) { return info(k).name; }
constexpr Space spaceOf(Kind k) { return info(k).space; }
constexpr Shape shapeOf(Kind k) { return info(k).shape; }
// The kind of a name ("malloc"), case-sensitive as stored; nullptr when none has it.
constexpr const KindInfo* byName(std::string_view n) {
  for (const KindInfo& k : kKinds)
    if (n == k.name) return &k;
  return nullptr;
}

// Blocks that live inside memory the recording already counts as blocks of another kind:
// pymalloc's objects inside its arenas, which are mmap blocks of the same process. Leak totals
// count that memory once, as those blocks; the sites of these kinds are listed beside them.
constexpr bool insideCountedMemory(Kind k) { return k == Kind::PyObject; }

// Space names as recordings and reports spell them ("device" is followed by ":N").
constexpr const char* spaceName(Space s) {
  switch (s) {
    case Space::HostHeap: return "heap";
    case Space::HostMmap: return "mmap";
    case Space::Device: return "device";
    case Space::Pinned: return "pinned";
    case Space::Managed: return "managed";
    case Space::Count: break;
  }
  return "?";
}

// The calls that make or release memory (allocations rows' `op`; the wire's Alloc/Free aux).
// X(enumerator, name). Append only: the wire carries the position.
#define MEMLEDGER_OPS(X)                                                                       \
  X(Malloc, "malloc") X(Calloc, "calloc") X(Realloc, "realloc") X(Reallocarray, "reallocarray") \
  X(Free, "free") X(PosixMemalign, "posix_memalign") X(AlignedAlloc, "aligned_alloc")          \
  X(Memalign, "memalign") X(Valloc, "valloc") X(Pvalloc, "pvalloc") X(New, "new")              \
  X(NewArray, "new[]") X(Delete, "delete") X(DeleteArray, "delete[]") X(Mmap, "mmap")          \
  X(Munmap, "munmap") X(Mremap, "mremap") X(CustomAlloc, "custom") X(CustomFree, "custom_free") \
  X(PoolAlloc, "pool_alloc") X(PoolFree, "pool_free")                                          \
  X(CollectorAlloc, "collector_alloc") X(CollectorFree, "collector_free")                      \
  X(CuMemAlloc, "cuMemAlloc") X(CuMemAllocPitch, "cuMemAllocPitch")                            \
  X(CuMemAllocManaged, "cuMemAllocManaged") X(CuMemAllocHost, "cuMemAllocHost")                \
  X(CuMemHostAlloc, "cuMemHostAlloc") X(CuMemHostRegister, "cuMemHostRegister")                \
  X(CuMemAllocAsync, "cuMemAllocAsync") X(CuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")  \
  X(CuArrayCreate, "cuArrayCreate") X(CuMemCreate, "cuMemCreate") X(CuMemMap, "cuMemMap")      \
  X(CuMemFree, "cuMemFree") X(CuMemFreeHost, "cuMemFreeHost")                                  \
  X(CuMemHostUnregister, "cuMemHostUnregister") X(CuMemFreeAsync, "cuMemFreeAsync")            \
  X(CuArrayDestroy, "cuArrayDestroy") X(CuMemRelease, "cuMemRelease") X(CuMemUnmap, "cuMemUnmap") \
  X(PyMemMalloc, "PyMem_Malloc") X(PyMemCalloc, "PyMem_Calloc") X(PyMemRealloc, "PyMem_Realloc")  \
  X(PyMemFree, "PyMem_Free") X(PyObjectMalloc, "PyObject_Malloc")                              \
  X(PyObjectCalloc, "PyObject_Calloc") X(PyObjectRealloc, "PyObject_Realloc")                   \
  X(PyObjectFree, "PyObject_Free")

enum class Op : uint8_t {
#define MEMLEDGER_OP_ENUM(e, name) e,
  MEMLEDGER_OPS(MEMLEDGER_OP_ENUM)
#undef MEMLEDGER_OP_ENUM
  Count
};
inline constexpr const char* kOpNames[] = {
#define MEMLEDGER_OP_NAME(e, name) name,
    MEMLEDGER_OPS(MEMLEDGER_OP_NAME)
#undef MEMLEDGER_OP_NAME
};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<size_t>(Op::Count));
// The recorder keeps an op in 7 bits of a live block.
static_assert(static_cast<size_t>(Op::Count) <= 128, "ops must fit the live block's 7-bit field");
constexpr const char* opName(uint64_t op) {
  return op < static_cast<uint64_t>(Op::Count) ? kOpNames[op] : "unknown";
}

}  // namespace memledger::kinds
