// Leak suppressions in LeakSanitizer's syntax, so one file can serve LSan and memledger:
//
//   # a comment
//   leak:PATTERN
//
// PATTERN is matched against the function, the source file and the module of every frame of a
// leak's stack; one match suppresses the leak. As in LSan, `*` matches any run of characters, a
// leading `^` anchors the pattern at the start and a trailing `$` at the end; otherwise the
// pattern may match anywhere inside the name ("leak:parse" matches "json::parse_value").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

struct Suppression {
  std::string pattern;  // without the "leak:" prefix; for a built-in rule (below), what it covers
  std::string origin;   // "FILE:LINE", or "built-in: <why>" for the default list
  // A built-in rule that is no pattern: the Python interpreter's own blocks (python_sites.h,
  // pythonRuntimeClass), which Debian's symbol-less python3.X leaves no name to match.
  bool rule = false;
  int64_t matched_sites = 0;
  int64_t matched_leaks = 0;  // leaked blocks
  int64_t matched_bytes = 0;
};

// A bad suppression file (unknown type, empty pattern, unreadable). what() is one line.
class SuppressionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SuppressionList {
 public:
  // Parses LSan suppression text; `origin` names it in errors ("file.supp").
  // Throws SuppressionError on a line that is not blank, a comment or "leak:PATTERN".
  void addText(std::string_view text, const std::string& origin);
  void addFile(const std::string& path);  // throws SuppressionError when unreadable
  // The built-in list for one-time allocations of the C runtime, the dynamic loader and
  // libstdc++ that stay live until exit by design (see suppressions.cpp for why each is there).
  void addDefaults();

  // The first suppression (in the order added) matching any frame of `stack`, or nullptr; with
  // the built-in list, then the built-in rules for a site of that kind (an allocation kind:
  // "malloc", "mmap", ...).
  Suppression* match(const Stack& stack, std::string_view kind = {});
  const std::vector<Suppression>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Suppression> entries_;
};

// LSan's template match: `*` wildcards, optional ^/$ anchors, unanchored = substring.
bool templateMatch(std::string_view pattern, std::string_view text);

// Whose a block is when a built-in entry matches its stack: origin kOriginRuntime or
// kOriginAllocator (analyzer.h), the reason its group gives, and the entry's pattern.
struct RuntimeClass {
  std::string origin;
  std::string reason;
  std::string pattern;
};
// The built-in entry (in list order) matching any frame of `stack`, classified, else the built-in
// rules for a site of `kind` (pythonRuntimeClass); nullopt: the program's own code. `report` and
// `check` read the same list (defaultSuppressionsText()) and rules.
std::optional<RuntimeClass> runtimeClass(const Stack& stack, std::string_view kind = {});
// The same in two steps, for passes over many stacks that share frames (a list's sites): what a
// frame tells, computed once a frame (the first built-in entry matching it, -1 for none; its
// pythonFrameFacts()), then a stack's class from its frames' facts, innermost first.
struct FrameOrigin {
  int16_t entry = -1;
  uint8_t python = 0;
};
FrameOrigin frameOrigin(const Frame& f);
std::optional<RuntimeClass> runtimeClassOf(std::span<const FrameOrigin> frames, std::string_view kind);

// The text of the built-in list, in suppression-file syntax (printed by `check --help`).
const char* defaultSuppressionsText();

}  // namespace memledger::analyzer
