// An allocator for the collector's own bookkeeping that goes around memledger's malloc hooks
// (glibc's __libc_malloc is not interposed): memledger's own memory stays out of the recording of
// the program, as the recorder's does.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <new>
#include <unordered_map>
#include <vector>

extern "C" void* __libc_malloc(size_t);
extern "C" void __libc_free(void*);

namespace memledger::cupti {

template <class T>
struct RawAllocator {
  using value_type = T;
  RawAllocator() = default;
  template <class U>
  RawAllocator(const RawAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = __libc_malloc(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { __libc_free(p); }
  template <class U>
  bool operator==(const RawAllocator<U>&) const { return true; }
};

template <class K, class V>
using RawHashMap = std::unordered_map<K, V, std::hash<K>, std::equal_to<K>, RawAllocator<std::pair<const K, V>>>;
template <class K, class V>
using RawMap = std::map<K, V, std::less<K>, RawAllocator<std::pair<const K, V>>>;
template <class T>
using RawVector = std::vector<T, RawAllocator<T>>;

}  // namespace memledger::cupti
