// Python frames in a site's stack (docs/python.md): which frame names a site, and which sites are
// the interpreter's own rather than the program's. Every output names a site through these, so
// the report, the exports, check and the suggestions agree on it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "analyzer/analyzer.h"
#include "analyzer/suppressions.h"

namespace memledger::analyzer {

// A Python frame: resolved from a code object, so it has a file (a .py path, "<frozen os>",
// "<string>") and no ELF module. A native frame with a file always has its module.
bool isPythonFrame(const Frame& f);

// The interpreter's own native code: libpython3.X.so or a python3[.X] executable (Debian links
// libpython into it).
bool isInterpreterModule(const std::string& module);

// The Python frame that made a site's allocations: the first Python frame when only the
// interpreter's native frames come before it (a bytearray, a list, a dict the script built).
// Null when an extension's or the program's own native code comes first (numpy's buffer, a C
// leak under Python): that code is what allocated.
const Frame* pythonSiteFrame(const Stack& stack);

// The frame a site is named by: its Python frame (pythonSiteFrame), else the innermost frame
// with a symbol that is not the C runtime's entry, unless that is the interpreter's (a stripped
// extension allocated: numpy's buffers), then the first Python frame; nullptr when none.
const Frame* siteFrame(const Stack& stack);

// Blocks of a CPython process that are the interpreter's own, which no suppression pattern can
// name where the interpreter has no symbols for its static functions (Debian's python3.X):
//   allocator-internal  an mmap made by the interpreter itself: obmalloc's arenas and, from 3.11,
//                       the frame stacks' chunks (the mmap module is an extension of its own);
//   runtime             made under Py_Initialize* or site's code (start-up: the built-in types,
//                       the codec registry, site's imports, .pth files), while a module was
//                       imported (module state: modules stay loaded until finalization), or by the interpreter's C code with no Python
//                       code running (no Python frame, no evaluation loop: finalization, a
//                       thread's bootstrap).
// nullopt for the rest: a stack with a program's Python frame, an extension's native frame, or
// the evaluation loop (a recording made with --no-python runs the program's code there).
std::optional<RuntimeClass> pythonRuntimeClass(const Stack& stack, std::string_view kind);

// The same in two steps, for passes over many stacks that share frames: what each frame tells
// (computed once a frame), then a stack's class from its frames' facts, innermost first.
enum PythonFrameFact : uint8_t {
  kPyStartup = 1,              // Py_Initialize* or site's code
  kPyImport = 2,               // the import system
  kPyInterpreter = 4,          // the interpreter's own native code (not the evaluation loop)
  kPyNotInterpreterOnly = 8,   // Python code, the evaluation loop, or a module not the interpreter's or libc's
  kPyInterpreterModule = 16,   // a frame of the interpreter's module (any)
};
uint8_t pythonFrameFacts(const Frame& f);
std::optional<RuntimeClass> pythonRuntimeClassOf(std::span<const uint8_t> frames, std::string_view kind);

}  // namespace memledger::analyzer
