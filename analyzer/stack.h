// A stack frame and a stack: the innermost frame first, as every analyzer question returns them.
// Split from analyzer.h, which includes it; nothing here needs SQLite.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memledger::analyzer {

struct Frame {
  std::optional<std::string> function;  // demangled; nullopt when unknown ("??" in text)
  std::optional<std::string> file;
  std::optional<int64_t> line;
  std::optional<std::string> module;    // path of the ELF module, nullopt when none covered it
  std::optional<int64_t> offset;        // the code's offset in `module` (a frame without a symbol shows it)
};

// A stack's frames, innermost first, read like a const std::vector<Frame>. Frames read from a
// recording are not copied: the stack points at the recording's frames of each ip (and keeps
// them alive, also past the recording's close); frames given by value (a test, a stack made by
// hand) are owned by the stack, shared by its copies. A PyTorch run's lists (1000 sites of ~55
// frames each, several lists) held 170 MB of copied frames and their strings.
class Stack {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = Frame;
    using difference_type = std::ptrdiff_t;
    using pointer = const Frame*;
    using reference = const Frame&;
    const_iterator() = default;
    explicit const_iterator(const Frame* const* p) : p_(p) {}
    reference operator*() const { return **p_; }
    pointer operator->() const { return *p_; }
    reference operator[](difference_type n) const { return *p_[n]; }
    const_iterator& operator++() { ++p_; return *this; }
    const_iterator operator++(int) { auto t = *this; ++p_; return t; }
    const_iterator& operator--() { --p_; return *this; }
    const_iterator operator--(int) { auto t = *this; --p_; return t; }
    const_iterator& operator+=(difference_type n) { p_ += n; return *this; }
    const_iterator& operator-=(difference_type n) { p_ -= n; return *this; }
    friend const_iterator operator+(const_iterator i, difference_type n) { return i += n; }
    friend const_iterator operator+(difference_type n, const_iterator i) { return i += n; }
    friend const_iterator operator-(const_iterator i, difference_type n) { return i -= n; }
    friend difference_type operator-(const_iterator a, const_iterator b) { return a.p_ - b.p_; }
    friend bool operator==(const_iterator a, const_iterator b) { return a.p_ == b.p_; }
    friend auto operator<=>(const_iterator a, const_iterator b) { return a.p_ <=> b.p_; }

   private:
    const Frame* const* p_ = nullptr;
  };
  using iterator = const_iterator;
  using reverse_iterator = std::reverse_iterator<const_iterator>;
  using const_reverse_iterator = reverse_iterator;
  using value_type = Frame;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = const Frame&;
  using const_reference = const Frame&;

  Stack() = default;
  Stack(std::initializer_list<Frame> frames) {
    for (const Frame& f : frames) push_back(f);
  }
  // Frames that `keeper` keeps alive (a recording's), not copied.
  Stack(std::vector<const Frame*> frames, std::shared_ptr<const void> keeper)
      : frames_(std::move(frames)), keeper_(std::move(keeper)) {}
  void push_back(Frame frame);  // copied into the stack's own frames
  void reserve(size_t n) { frames_.reserve(n); }

  size_t size() const { return frames_.size(); }
  bool empty() const { return frames_.empty(); }
  const Frame& operator[](size_t i) const { return *frames_[i]; }
  const Frame& at(size_t i) const { return *frames_.at(i); }
  const Frame& front() const { return *frames_.front(); }
  const Frame& back() const { return *frames_.back(); }
  const_iterator begin() const { return const_iterator(frames_.data()); }
  const_iterator end() const { return const_iterator(frames_.data() + frames_.size()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

 private:
  std::vector<const Frame*> frames_;
  std::shared_ptr<const void> keeper_;  // a recording's frames these point into
  std::shared_ptr<std::deque<Frame>> own_;  // frames given by value (a deque: they never move)
};

}  // namespace memledger::analyzer
