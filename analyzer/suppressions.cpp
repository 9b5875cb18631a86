#include "analyzer/suppressions.h"

#include <fstream>
#include <sstream>

namespace memledger::analyzer {

namespace {

// Why each entry is here: every one is an allocation glibc, the loader or libstdc++ make once and
// keep until the process dies by design (only valgrind's __libc_freeres hook releases them).
// None of them is a frame every stack has (no `main`, no `__libc_start_main`).
constexpr const char* kDefaults =
    "# stdio: the first read/write of a FILE allocates its buffer; glibc never frees it.\n"
    "leak:_IO_file_doallocate\n"
    "# Allocations made while the dynamic loader runs: library constructors before main\n"
    "# (libstdc++'s exception emergency pool, ~72 KiB) and dlopen's bookkeeping. Note: this also\n"
    "# hides leaks in shared libraries' own constructors; --no-default-suppressions shows them.\n"
    "leak:/ld-linux-*.so.\n"
    "leak:^_dl_\n"
    "# glibc's dynamic TLS blocks (sourceware bug 12650); LeakSanitizer's default list has it too.\n"
    "leak:*tls_get_addr*\n"
    "# glibc caches the stacks (mmap) and TLS of finished threads for reuse and never unmaps them.\n"
    "leak:^pthread_create\n"
    "leak:*pthread_exit*\n";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Glob match with `*` only, anchored at both ends; iterative with one backtrack point (the
// classic wildcard algorithm), so a pattern can never blow up on long C++ names.
bool globMatch(std::string_view p, std::string_view s) {
  size_t pi = 0, si = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = si;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace

bool templateMatch(std::string_view pattern, std::string_view text) {
  if (text.empty() || pattern.empty()) return false;
  // An unanchored side is an implicit `*`: LSan's patterns match inside the name.
  std::string glob;
  if (pattern.front() == '^')
    pattern.remove_prefix(1);
  else
    glob += '*';
  bool anchoredEnd = !pattern.empty() && pattern.back() == '$';
  if (anchoredEnd) pattern.remove_suffix(1);
  glob += pattern;
  if (!anchoredEnd) glob += '*';
  return globMatch(glob, text);
}

void SuppressionList::addText(std::string_view text, const std::string& origin) {
  size_t lineNo = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++lineNo;
    if (line.empty() || line.front() == '#') continue;
    std::string where = origin + ":" + std::to_string(lineNo);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      throw SuppressionError("memledger: " + where + ": expected 'leak:PATTERN', got '" + std::string(line) + "'");
    std::string_view type = trim(line.substr(0, colon));
    std::string_view pattern = trim(line.substr(colon + 1));
    if (type != "leak")
      throw SuppressionError("memledger: " + where + ": unknown suppression type '" + std::string(type) +
                             "' (only leak: is supported)");
    if (pattern.empty() || pattern == "^" || pattern == "$")
      throw SuppressionError("memledger: " + where + ": empty suppression pattern");
    entries_.push_back(Suppression{std::string(pattern), where, 0, 0, 0});
  }
}

void SuppressionList::addFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SuppressionError("memledger: cannot read suppressions file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  addText(text.str(), path);
}

void SuppressionList::addDefaults() {
  // Origins read "built-in:LINE": the line of defaultSuppressionsText() with the entry's reason.
  addText(kDefaults, "built-in");
}

Suppression* SuppressionList::match(const Stack& stack) {
  for (auto& s : entries_) {
    for (const Frame& f : stack) {
      if ((f.function && templateMatch(s.pattern, *f.function)) ||
          (f.file && templateMatch(s.pattern, *f.file)) ||
          (f.module && templateMatch(s.pattern, *f.module)))
        return &s;
    }
  }
  return nullptr;
}

const char* defaultSuppressionsText() { return kDefaults; }

}  // namespace memledger::analyzer
