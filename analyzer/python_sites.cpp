#include "analyzer/python_sites.h"

#include <cctype>

#include "analyzer/format.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

namespace {

// Where the interpreter starts: what runs under these is its own set-up (site's imports too).
// Not Py_FinalizeEx: the program's atexit handlers and its threads' shutdown run under it.
bool isStartupEntry(const std::string& f) {
  static const char* const entries[] = {"Py_InitializeFromConfig", "Py_InitializeEx", "Py_Initialize",
                                        "_Py_InitializeMain", "Py_PreInitialize", "Py_PreInitializeFromArgs",
                                        "Py_PreInitializeFromBytesArgs", "_Py_PreInitializeFromPyArgv",
                                        "_Py_PreInitializeFromConfig", "Py_NewInterpreter",
                                        "Py_NewInterpreterFromConfig"};
  for (const char* e : entries)
    if (f == e) return true;
  return false;
}

// The evaluation loop and its entry points: Python code was running (with --no-python, or where
// the walk found no frame, its native frames are all a stack has of it).
bool isEvalFrame(const std::string& f) { return f.find("PyEval_Eval") != std::string::npos; }

// The C runtime and the loader: below every stack, and called by every program.
bool isCRuntimeModule(const std::string& module) {
  std::string_view base = pathBaseName(module);
  for (std::string_view lib : {"libc.so", "libc-", "ld-linux", "libm.so", "libpthread.so", "libdl.so"})
    if (base.starts_with(lib)) return true;
  return false;
}

// site's own code (`<frozen site>` from 3.11, site.py before) runs once, at start-up, under
// Py_InitializeFromConfig; a deep import from a .pth file can cut that frame from a stack (128
// frames at most), not site's.
bool isSiteFrame(const Frame& f) {
  return f.file && (*f.file == "<frozen site>" || pathBaseName(*f.file) == "site.py");
}

// The import system at work: importlib's _find_and_load (frozen in every version memledger knows)
// or the C entry every `import` statement goes through.
bool isImportFrame(const Frame& f) {
  if (!f.function) return false;
  if (f.file && *f.file == "<frozen importlib._bootstrap>") return *f.function == "_find_and_load";
  return *f.function == "PyImport_ImportModuleLevelObject" || *f.function == "PyImport_Import";
}

}  // namespace

bool isPythonFrame(const Frame& f) { return !f.module && f.file && f.function; }

bool isInterpreterModule(const std::string& module) {
  std::string_view base = pathBaseName(module);
  if (base.starts_with("libpython")) return true;
  // python3, python3.11, python3.13t: not python-helper.so
  return base.starts_with("python") && base.size() > 6 && std::isdigit(static_cast<unsigned char>(base[6]));
}

const Frame* pythonSiteFrame(const Stack& stack) {
  for (const Frame& f : stack) {
    if (isPythonFrame(f)) return &f;
    if (!f.module || !isInterpreterModule(*f.module)) return nullptr;
  }
  return nullptr;
}

const Frame* siteFrame(const Stack& stack) {
  if (const Frame* f = pythonSiteFrame(stack)) return f;
  const Frame* named = detail::namedFrame(stack);
  // A stripped extension's code allocated (numpy's buffers): its own frames have no names, so the
  // first named one is the interpreter's call machinery (PyObject_Vectorcall), which says nothing
  // of whose data it is; the Python line that called into the extension does.
  if (!named || (named->module && isInterpreterModule(*named->module)))
    for (const Frame& f : stack)
      if (isPythonFrame(f)) return &f;
  return named;
}

uint8_t pythonFrameFacts(const Frame& f) {
  uint8_t facts = 0;
  const bool interpreterModule = f.module && isInterpreterModule(*f.module);
  if (interpreterModule) facts |= kPyInterpreterModule;
  if (isImportFrame(f)) facts |= kPyImport;
  if ((f.function && isStartupEntry(*f.function)) || (isPythonFrame(f) && isSiteFrame(f))) facts |= kPyStartup;
  if (isPythonFrame(f) || (f.function && isEvalFrame(*f.function)) || !f.module) facts |= kPyNotInterpreterOnly;
  else if (interpreterModule) facts |= kPyInterpreter;
  else if (!isCRuntimeModule(*f.module)) facts |= kPyNotInterpreterOnly;
  return facts;
}

std::optional<RuntimeClass> pythonRuntimeClassOf(std::span<const uint8_t> frames, std::string_view kind) {
  if (frames.empty()) return std::nullopt;
  if (kind == "mmap" && (frames.front() & kPyInterpreterModule))
    return RuntimeClass{kOriginAllocator,
                        "CPython maps memory for its own allocator (obmalloc's arenas, the frame stacks' "
                        "chunks) and keeps it while anything in it lives.",
                        {}};
  uint8_t any = 0;
  for (uint8_t f : frames) any |= f;
  if (any & kPyStartup)
    return RuntimeClass{kOriginRuntime,
                        "The Python interpreter's own start-up (built-in types, codecs, the modules site "
                        "imports), kept until it finalizes.",
                        {}};
  if (any & kPyImport)
    return RuntimeClass{kOriginRuntime,
                        "Made while a module was imported (its globals, functions, classes, code): modules "
                        "stay loaded until the interpreter finalizes.",
                        {}};
  if ((any & kPyInterpreter) && !(any & kPyNotInterpreterOnly))
    return RuntimeClass{kOriginRuntime,
                        "The Python interpreter's own C code, with no Python code running (its start-up, "
                        "its threads' bootstrap, its finalization).",
                        {}};
  return std::nullopt;
}

std::optional<RuntimeClass> pythonRuntimeClass(const Stack& stack, std::string_view kind) {
  std::vector<uint8_t> facts;
  facts.reserve(stack.size());
  for (const Frame& f : stack) facts.push_back(pythonFrameFacts(f));
  return pythonRuntimeClassOf(facts, kind);
}

}  // namespace memledger::analyzer
