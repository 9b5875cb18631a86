#include "analyzer/suppressions.h"

#include "analyzer/python_sites.h"

#include <fstream>
#include <sstream>

namespace memledger::analyzer {

namespace {

// Why each entry is here: every one is an allocation glibc, the loader, libstdc++ or a language
// runtime's own allocator makes and keeps until the process dies by design (only valgrind's
// __libc_freeres hook releases glibc's). None of them is a frame every stack has (no `main`, no
// `__libc_start_main`). A comment "# runtime: WHY" or "# allocator-internal: WHY" opens a group:
// `report` labels a leak matching one of the group's entries with that origin and WHY instead of
// telling the user to fix it (runtimeClass()). Entries are only ever appended to a group or the
// list, so "built-in:LINE" origins stay stable.
constexpr const char* kDefaults =
    "# runtime: stdio allocates a FILE's buffer on its first read/write; glibc never frees it.\n"
    "leak:_IO_file_doallocate\n"
    "# runtime: allocated while the dynamic loader ran (library constructors before main, dlopen).\n"
    "# Library constructors before main (libstdc++'s exception emergency pool, ~72 KiB) and dlopen's\n"
    "# bookkeeping. Note: this also hides leaks in shared libraries' own constructors;\n"
    "# --no-default-suppressions shows them.\n"
    "leak:/ld-linux-*.so.\n"
    "leak:^_dl_\n"
    "# runtime: glibc's dynamic TLS blocks, kept for the thread's life (sourceware bug 12650).\n"
    "leak:*tls_get_addr*\n"
    "# runtime: glibc caches finished threads' stacks (mmap) and TLS for reuse, never unmapped.\n"
    "leak:^pthread_create\n"
    "leak:*pthread_exit*\n"
    "# allocator-internal: Python's object allocator (obmalloc) keeps its arenas until exit.\n"
    "leak:^_PyObject_ArenaMmap$\n"
    "leak:^_PyObject_ArenaMalloc$\n"
    "leak:^_PyMem_ArenaAlloc$\n"
    "leak:^new_arena$\n"
    "leak:^arena_map_get$\n"
    "# allocator-internal: Perl's SV and body arenas are carved out of big blocks kept until exit.\n"
    "leak:^Perl_more_bodies$\n"
    "leak:^Perl_more_sv$\n"
    "leak:^S_more_sv$\n"
    "# allocator-internal: GCC's garbage-collected heap pages and obstack chunks live until exit.\n"
    "leak:^ggc_internal_alloc\n"
    "leak:^ggc_internal_cleared_alloc\n"
    "leak:^_obstack_newchunk$\n"
    "leak:^_obstack_begin$\n"
    "# runtime: glibc's locale data, loaded by setlocale, stays loaded until exit.\n"
    "leak:^_nl_intern_locale_data$\n"
    "leak:^_nl_load_locale_from_archive$\n"
    "leak:^_nl_find_locale$\n"
    "# Also built in, as rules rather than patterns (Debian's python3.X has no symbols for its static\n"
    "# functions): a Python process's mmap made by the interpreter itself (allocator-internal: obmalloc's\n"
    "# arenas, frame stack chunks), and blocks made during its start-up, while a module was imported\n"
    "# (module state), or by its C code with no Python code running (runtime).\n"
    "# --no-default-suppressions drops them too.\n";

// The built-in rules' entries, after the list (check reports what each matched).
constexpr const char* kPythonAllocatorRule = "(rule) CPython's own mmap: obmalloc arenas, frame stack chunks";
constexpr const char* kPythonRuntimeRule =
    "(rule) CPython's own start-up, imports' module state, or its C code with no Python running";

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

// templateMatch()'s glob of a (non-empty) pattern: an unanchored side is an implicit `*` (LSan's
// patterns match inside the name).
static std::string globOf(std::string_view pattern) {
  std::string glob;
  if (pattern.front() == '^')
    pattern.remove_prefix(1);
  else
    glob += '*';
  bool anchoredEnd = !pattern.empty() && pattern.back() == '$';
  if (anchoredEnd) pattern.remove_suffix(1);
  glob += pattern;
  if (!anchoredEnd) glob += '*';
  return glob;
}

bool templateMatch(std::string_view pattern, std::string_view text) {
  if (text.empty() || pattern.empty()) return false;
  return globMatch(globOf(pattern), text);
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
  for (const char* rule : {kPythonAllocatorRule, kPythonRuntimeRule}) {
    Suppression s{rule, "built-in: Python", 0, 0, 0};
    s.rule = true;
    entries_.push_back(std::move(s));
  }
}

Suppression* SuppressionList::match(const Stack& stack, std::string_view kind) {
  for (auto& s : entries_) {
    if (s.rule) continue;
    for (const Frame& f : stack) {
      if ((f.function && templateMatch(s.pattern, *f.function)) ||
          (f.file && templateMatch(s.pattern, *f.file)) ||
          (f.module && templateMatch(s.pattern, *f.module)))
        return &s;
    }
  }
  if (auto py = pythonRuntimeClass(stack, kind)) {
    const char* rule = py->origin == kOriginAllocator ? kPythonAllocatorRule : kPythonRuntimeRule;
    for (auto& s : entries_)
      if (s.rule && s.pattern == rule) return &s;
  }
  return nullptr;
}

const char* defaultSuppressionsText() { return kDefaults; }

namespace {

struct ClassifiedEntry {
  std::string glob;  // the pattern as templateMatch() matches it: unanchored sides made `*`
  RuntimeClass cls;
  bool matches(const std::optional<std::string>& text) const { return text && !text->empty() && globMatch(glob, *text); }
};


// The built-in list with each entry's group (the "# runtime:" / "# allocator-internal:" comment
// above it), parsed once.
const std::vector<ClassifiedEntry>& classifiedDefaults() {
  static const std::vector<ClassifiedEntry> entries = [] {
    std::vector<ClassifiedEntry> out;
    RuntimeClass group{kOriginRuntime, {}, {}};
    std::string_view text = kDefaults;
    while (!text.empty()) {
      size_t nl = text.find('\n');
      std::string_view line = trim(text.substr(0, nl));
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      for (const char* origin : {kOriginRuntime, kOriginAllocator}) {
        std::string tag = std::string("# ") + origin + ": ";
        if (line.starts_with(tag)) group = RuntimeClass{origin, std::string(line.substr(tag.size())), {}};
      }
      if (line.starts_with("leak:")) {
        RuntimeClass c = group;
        c.pattern = std::string(trim(line.substr(5)));
        out.push_back({globOf(c.pattern), c});
      }
    }
    return out;
  }();
  return entries;
}

}  // namespace

FrameOrigin frameOrigin(const Frame& f) {
  FrameOrigin out;
  const std::vector<ClassifiedEntry>& entries = classifiedDefaults();
  for (size_t i = 0; i < entries.size(); ++i)
    if (entries[i].matches(f.function) || entries[i].matches(f.file) || entries[i].matches(f.module)) {
      out.entry = static_cast<int16_t>(i);
      break;
    }
  out.python = pythonFrameFacts(f);
  return out;
}

std::optional<RuntimeClass> runtimeClassOf(std::span<const FrameOrigin> frames, std::string_view kind) {
  // The first entry in list order that matches any frame: the least of the frames' first entries.
  int entry = -1;
  for (const FrameOrigin& f : frames)
    if (f.entry >= 0 && (entry < 0 || f.entry < entry)) entry = f.entry;
  if (entry >= 0) return classifiedDefaults()[static_cast<size_t>(entry)].cls;
  std::vector<uint8_t> python;
  python.reserve(frames.size());
  for (const FrameOrigin& f : frames) python.push_back(f.python);
  return pythonRuntimeClassOf(python, kind);
}

std::optional<RuntimeClass> runtimeClass(const Stack& stack, std::string_view kind) {
  std::vector<FrameOrigin> frames;
  frames.reserve(stack.size());
  for (const Frame& f : stack) frames.push_back(frameOrigin(f));
  return runtimeClassOf(frames, kind);
}

}  // namespace memledger::analyzer
