// An append-only array in fixed pages: what the recorder keeps one of per site or per stack-tree
// node (hundreds of thousands on a PyTorch run). A std::vector doubling there copies everything
// it holds each time and takes a page fault for every 4 KiB of the new buffer; here an element
// never moves (references stay valid across push_back), and once an array has outgrown its first
// page each further page is mapped and populated in one call. The first page is only reserved:
// a small process (one of a build's thousand) touches a few 4 KiB pages of it.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

namespace memledger::recorder {

template <class T>
class PagedArray {
  static_assert(std::is_trivially_destructible_v<T>, "pages are unmapped without destructors");
  // A power of two per page, so indexing is a shift and a mask: sites are indexed several times
  // per event, and a division by 11915 (2 MiB of 176-byte sites) costs ~10 instructions each.
  static constexpr size_t perPage() {
    size_t n = 1;
    while (2 * n * sizeof(T) <= (size_t{2} << 20)) n *= 2;
    return n;
  }
  static constexpr size_t kPerPage = perPage();
  static constexpr size_t kPageBytes = kPerPage * sizeof(T);
  static_assert(sizeof(T) <= (size_t{2} << 20) && (kPerPage & (kPerPage - 1)) == 0);

 public:
  PagedArray() = default;
  ~PagedArray() { clear(); }
  PagedArray(const PagedArray&) = delete;
  PagedArray& operator=(const PagedArray&) = delete;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return pages_[i / kPerPage][i % kPerPage]; }
  const T& operator[](size_t i) const { return pages_[i / kPerPage][i % kPerPage]; }

  void push_back(const T& v) {
    if (size_ == pages_.size() * kPerPage) addPage();
    new (&pages_[size_ / kPerPage][size_ % kPerPage]) T(v);
    ++size_;
  }

  void clear() {
    for (T* p : pages_) munmap(p, kPageBytes);
    pages_.clear();
    size_ = 0;
  }

 private:
  void addPage() {
    int populate = pages_.empty() ? 0 : MAP_POPULATE;
    void* p = mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | populate, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    pages_.push_back(static_cast<T*>(p));
  }

  std::vector<T*> pages_;
  size_t size_ = 0;
};

}  // namespace memledger::recorder
