// Reading CPython's frame chain from inside the allocation hooks (python_frames.h says what and
// why). Everything here runs with the hook's guard held: no allocation, no lock of Python's, no
// call into the interpreter but pthread_getspecific. Every pointer is checked before it is read
// (plausible user address, aligned; a code object's type is PyCode_Type), a walk stops at the
// first frame that does not look right, and at kMaxPyFrames.
#include "python_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ring_writer.h"
#include "runtime.h"
#include "unwind_rules.h"

namespace memledger::preload::py {

bool g_on = false;
const uint64_t* g_finalizing = nullptr;
bool g_finalSent = false;

namespace {

// Offsets for one minor version (x86-64, release build), from the interpreter's own headers
// (tests/integration/python_layout_test.cpp compiles them and compares).
struct Layout {
  int minor;
  uint32_t rtTss, rtFinalizing, rtMain;
  uint32_t tsInterp, tsCframe, cfFrame, tsFrame;  // tsCframe 0: the frame is at tsFrame directly
  uint32_t frCode, frInstr, frPrevious, frOwner, frIsEntry;  // frIsEntry 0: none
  uint32_t coCode, coFirstTraceable, coName, coFirstLine, coFilename, coLinetable;
  uint32_t asciiSize, compactUtf8, compactUtf8Len, compactSize;
};
constexpr uint32_t kNone = 0;
// 3.10's frame is a PyFrameObject: frCode f_code, frPrevious f_back, frInstr f_lasti (an int,
// code units); its code objects have no qualname (co_name) and no inline bytecode.
constexpr Layout kLayouts[] = {
    {10, 584, 16, 40, 16, kNone, kNone, 24, 32, 96, 24, kNone, kNone, kNone, kNone, 112, 40, 104, 120, 48, 56, 48, 72},
    {11, 592, 24, 48, 16, 56, 8, kNone, 32, 56, 48, 69, 68, 184, 168, 128, 72, 112, 136, 48, 56, 48, 72},
    {12, 1544, 24, 48, 16, 56, 0, kNone, 0, 56, 8, 70, kNone, 192, 176, 128, 68, 112, 136, 40, 48, 40, 56},
    {13, 2160, 608, 640, 16, kNone, kNone, 72, 0, 56, 8, 70, kNone, 200, 184, 128, 68, 112, 136, 40, 48, 40, 56},
};
constexpr uint8_t kOwnedByGenerator = 1, kOwnedByCStack = 3;

const Layout* g_l = nullptr;
const char* g_rt = nullptr;          // &_PyRuntime
uint64_t g_codeType = 0, g_unicodeType = 0, g_bytesType = 0;
uint64_t g_evalStart = 0, g_evalEnd = 0;  // _PyEval_EvalFrameDefault's code
// Its cold parts (findColdParts): [start, end) each; a return address there is an evaluation
// frame too.
constexpr int kMaxColdParts = 2;
uint64_t g_coldStart[kMaxColdParts] = {}, g_coldEnd[kMaxColdParts] = {};
uint64_t g_version = 0;                   // PY_VERSION_HEX

inline bool plausible(uint64_t p) { return p >= 65536 && p < (1ull << 47) && (p & 7) == 0; }
template <class T>
inline T at(uint64_t p, uint32_t off) {
  T v;
  memcpy(&v, reinterpret_cast<const char*>(p) + off, sizeof v);
  return v;
}

// ---- code objects: serials, shared by every thread (a spin lock; most lookups hit the
// thread's own table first)
struct CodeEntry {
  uint64_t key, fp;
  uint32_t serial, sentGen;
};
constexpr uint32_t kCodeSlots = 1u << 16;
CodeEntry* g_codes = nullptr;
uint32_t g_codeCount = 0;
uint32_t g_nextSerial = 1;
std::atomic<bool> g_codeLock{false};

// What tells a code object from another one later allocated at the same address.
inline uint64_t fingerprint(uint64_t code) {
  return at<uint64_t>(code, g_l->coName) ^ (at<uint64_t>(code, g_l->coLinetable) << 1) ^
         at<uint32_t>(code, g_l->coFirstLine);
}

// The serial of `code` (fingerprint fp); *unsent: the current ring has not been sent it.
uint32_t sharedSerial(uint64_t code, uint64_t fp, bool* unsent) {
  uint32_t gen = g_ringGen.load(std::memory_order_relaxed);
  while (g_codeLock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
  uint32_t i = static_cast<uint32_t>((code >> 4) * 0x9e3779b1u) & (kCodeSlots - 1);
  uint32_t serial = 0;
  for (uint32_t probes = 0; probes < kCodeSlots; ++probes, i = (i + 1) & (kCodeSlots - 1)) {
    CodeEntry& e = g_codes[i];
    if (e.key == code) {
      if (e.fp != fp) {  // another code object at a freed one's address
        e.fp = fp;
        e.serial = g_nextSerial++;
        e.sentGen = 0;
      }
      serial = e.serial;
      *unsent = e.sentGen != gen;
      e.sentGen = gen;
      break;
    }
    if (e.key == 0) {
      if (g_codeCount >= kCodeSlots * 3 / 4) break;  // full: unknown code from here on
      ++g_codeCount;
      e = CodeEntry{code, fp, g_nextSerial++, gen};
      serial = e.serial;
      *unsent = true;
      break;
    }
  }
  g_codeLock.store(false, std::memory_order_release);
  return serial;
}

inline uint32_t serialOf(ThreadCodes* tc, uint64_t code, PyStack& out) {
  uint64_t fp = fingerprint(code);
  uint32_t gen = g_ringGen.load(std::memory_order_relaxed);
  if (__builtin_expect(tc->gen != gen, 0)) {
    memset(tc->key, 0, sizeof tc->key);
    tc->gen = gen;
  }
  uint32_t slot = static_cast<uint32_t>((code >> 4) * 0x9e3779b1u) >> 24;
  if (tc->key[slot] == code && tc->fp[slot] == fp) return tc->serial[slot];
  bool unsent = false;
  uint32_t serial = sharedSerial(code, fp, &unsent);
  if (!serial) return 0;
  if (unsent) {
    if (out.unsent == 8) return 0;  // sent with a later walk
    out.unsentCode[out.unsent] = code;
    out.unsentSerial[out.unsent++] = serial;
  }
  tc->key[slot] = code;
  tc->fp[slot] = fp;
  tc->serial[slot] = serial;
  return serial;
}

// The current thread's PyThreadState, or 0.
inline uint64_t threadState() {
  const char* key = g_rt + g_l->rtTss;  // Py_tss_t {int _is_initialized; pthread_key_t _key;}
  int initialized;
  pthread_key_t k;
  memcpy(&initialized, key, sizeof initialized);
  memcpy(&k, key + 4, sizeof k);
  if (initialized != 1) return 0;
  auto ts = reinterpret_cast<uint64_t>(pthread_getspecific(k));
  if (!plausible(ts)) return 0;
  // Of this runtime's main interpreter (the key is the runtime's own; subinterpreters: native only).
  uint64_t mainInterp;
  memcpy(&mainInterp, g_rt + g_l->rtMain, sizeof mainInterp);
  if (!mainInterp || at<uint64_t>(ts, g_l->tsInterp) != mainInterp) return 0;
  return ts;
}

}  // namespace

namespace {
inline uint64_t foldStep(uint64_t h, uint64_t frame, int group) {
  return wire::hashStep(h, frame ^ (uint64_t{static_cast<uint8_t>(group)} << 53));
}
}  // namespace

void walk(ThreadCodes* tc, PyStack& out, uint64_t seed) {
  out.n = out.groups = out.unsent = 0;
  out.hash = seed;
  if (!g_on || !tc) return;
  uint64_t ts = threadState();
  if (!ts) return;
  uint64_t h = seed;
  const Layout& L = *g_l;
  uint64_t frame;
  if (L.tsCframe) {
    uint64_t cf = at<uint64_t>(ts, L.tsCframe);
    if (!plausible(cf)) return;
    frame = at<uint64_t>(cf, L.cfFrame);
  } else {
    frame = at<uint64_t>(ts, L.tsFrame);
  }
  for (int steps = 0; frame && steps < 4 * kMaxPyFrames && out.groups < 250; ++steps) {
    if (!plausible(frame)) break;
    uint64_t previous = at<uint64_t>(frame, L.frPrevious);
    bool groupEnd = L.minor == 10;
    if (L.minor >= 12) {
      if (at<uint8_t>(frame, L.frOwner) == kOwnedByCStack) {  // an evaluation-loop invocation's shim
        ++out.groups;
        frame = previous;
        continue;
      }
    } else if (L.minor == 11) {
      groupEnd = at<uint8_t>(frame, L.frIsEntry) != 0;
    }
    uint64_t code = at<uint64_t>(frame, L.frCode);
    if (!plausible(code)) break;
    int64_t offset = -1;
    if (at<uint64_t>(code, 8) != g_codeType) {
      // not a code object (3.13: f_executable may be another callable): no frame to show
    } else if (L.minor == 10) {
      offset = at<int32_t>(frame, L.frInstr);
    } else {
      uint64_t instr = at<uint64_t>(frame, L.frInstr);
      uint64_t start = code + L.coCode;
      offset = instr >= start ? static_cast<int64_t>((instr - start) / 2) : -1;
      // Incomplete frames (still in their prologue: python/cpython#96613) are skipped.
      if (at<uint8_t>(frame, L.frOwner) != kOwnedByGenerator && offset < at<int32_t>(code, L.coFirstTraceable))
        offset = -1;
    }
    if (offset >= 0 && offset < (1ll << 31)) {
      uint32_t serial = serialOf(tc, code, out);
      uint64_t encoded = kPyFrameBit | (uint64_t{serial} << 32) | static_cast<uint64_t>(offset);
      out.frames[out.n] = encoded;
      out.group[out.n] = static_cast<uint8_t>(out.groups);
      h = foldStep(h, encoded, out.groups);
      if (++out.n == kMaxPyFrames) break;
    }
    if (groupEnd) ++out.groups;
    frame = previous;
  }
  if (out.n) out.hash = wire::finalHash(wire::hashStep(h, static_cast<uint64_t>(out.groups)));
}

uint64_t foldHash(uint64_t h, const PyStack& ps) {
  if (ps.n == 0) return h;
  for (int i = 0; i < ps.n; ++i) h = foldStep(h, ps.frames[i], ps.group[i]);
  return wire::finalHash(wire::hashStep(h, static_cast<uint64_t>(ps.groups)));
}

int merge(const uint64_t* native, int n, const PyStack& ps, uint64_t* out, int max, EvalMemo* memo,
          int fresh) {
  if (ps.n == 0) {
    if (memo) memo->valid = 0;
    int k = n < max ? n : max;
    memcpy(out, native, static_cast<size_t>(k) * sizeof(uint64_t));
    return k;
  }
  if (n > wire::kMaxFrames) n = wire::kMaxFrames;
  // Where the evaluation frames are, innermost first (the native runs between them are then
  // copied whole): the frames below the shared outer part are read, the memo gives the rest.
  int scan = memo && memo->valid && fresh >= 0 && fresh < n ? fresh : n;
  uint8_t at[wire::kMaxFrames + 1];
  int evals = 0;
  for (int i = 0; i < scan; ++i) {
    uint64_t pc = native[i] - 1;  // a return address: the call is the instruction before it
    bool eval = (pc >= g_evalStart && pc < g_evalEnd) || (pc >= g_coldStart[0] && pc < g_coldEnd[0]) ||
                (pc >= g_coldStart[1] && pc < g_coldEnd[1]);
    at[evals] = static_cast<uint8_t>(i);
    evals += eval ? 1 : 0;
  }
  if (scan < n) {
    for (int j = 0; j < memo->count; ++j) {
      int d = memo->dist[j];  // innermost first: distances fall
      if (d < n - scan) at[evals++] = static_cast<uint8_t>(n - 1 - d);
    }
  }
  if (memo) {
    memo->valid = 1;
    memo->count = evals;
    for (int g = 0; g < evals; ++g) memo->dist[g] = static_cast<uint8_t>(n - 1 - at[g]);
  }
  int k = 0;
  auto copy = [&](const uint64_t* from, int count) {
    if (count > max - k) count = max - k;
    memcpy(out + k, from, static_cast<size_t>(count) * sizeof(uint64_t));
    k += count;
  };
  if (evals == ps.groups && evals > 0) {
    // The g-th evaluation frame (innermost first) stands for the Python frames of invocation g
    // (none: it was still in a frame's prologue; its native frame then goes without one).
    int from = 0, p = 0;
    for (int g = 0; g < evals; ++g) {
      copy(native + from, at[g] - from);
      int first = p;
      while (p < ps.n && ps.group[p] == g) ++p;
      copy(ps.frames + first, p - first);
      from = at[g] + 1;
    }
    copy(native + from, n - from);
    return k;
  }
  // Not paired reliably: the native frames inside the innermost evaluation frame, then the
  // Python frames alone (none of the native frames outside, which could be misplaced).
  if (evals > 0) copy(native, at[0]);
  copy(ps.frames, ps.n);
  return k;
}

namespace {

// The text of a str object as UTF-8 into buf (at most cap bytes); returns its length.
size_t strText(uint64_t s, char* buf, size_t cap) {
  if (!plausible(s) || at<uint64_t>(s, 8) != g_unicodeType) return 0;
  const Layout& L = *g_l;
  uint32_t state = at<uint32_t>(s, 32);
  uint64_t length = at<uint64_t>(s, 16);
  bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  unsigned kind = (state >> 2) & 7;
  if (!compact) return 0;
  if (ascii) {
    size_t n = length < cap ? length : cap;
    memcpy(buf, reinterpret_cast<const char*>(s) + L.asciiSize, n);
    return n;
  }
  uint64_t utf8 = at<uint64_t>(s, L.compactUtf8);
  if (utf8) {
    uint64_t ulen = at<uint64_t>(s, L.compactUtf8Len);
    size_t n = ulen < cap ? ulen : cap;
    memcpy(buf, reinterpret_cast<const char*>(utf8), n);
    return n;
  }
  const auto* data = reinterpret_cast<const unsigned char*>(s) + L.compactSize;
  size_t n = 0;
  for (uint64_t i = 0; i < length && n + 4 <= cap; ++i) {
    uint32_t c = kind == 1 ? data[i] : kind == 2 ? reinterpret_cast<const uint16_t*>(data)[i]
                                                 : reinterpret_cast<const uint32_t*>(data)[i];
    if (c < 0x80) {
      buf[n++] = static_cast<char>(c);
    } else if (c < 0x800) {
      buf[n++] = static_cast<char>(0xc0 | (c >> 6));
      buf[n++] = static_cast<char>(0x80 | (c & 63));
    } else if (c < 0x10000) {
      buf[n++] = static_cast<char>(0xe0 | (c >> 12));
      buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 63));
      buf[n++] = static_cast<char>(0x80 | (c & 63));
    } else {
      buf[n++] = static_cast<char>(0xf0 | (c >> 18));
      buf[n++] = static_cast<char>(0x80 | ((c >> 12) & 63));
      buf[n++] = static_cast<char>(0x80 | ((c >> 6) & 63));
      buf[n++] = static_cast<char>(0x80 | (c & 63));
    }
  }
  return n;
}

constexpr size_t kMaxName = 1024, kMaxFile = 4096, kMaxCodeText = 60000;
// A line table past this (a 16 MiB co_linetable: a generated module of ~10^6 lines) is cut.
constexpr size_t kMaxLineTable = 16u << 20;
char g_text[kMaxCodeText];  // under g_textLock while filled and written
std::atomic<bool> g_textLock{false};

}  // namespace

void sendCodes(const PyStack& ps) {
  wire::RingHeader* h = g_active.load(std::memory_order_acquire);
  if (!h) return;
  for (int i = 0; i < ps.unsent; ++i) {
    uint64_t code = ps.unsentCode[i];
    if (!plausible(code) || at<uint64_t>(code, 8) != g_codeType) continue;
    while (g_textLock.exchange(true, std::memory_order_acquire)) __builtin_ia32_pause();
    size_t name = strText(at<uint64_t>(code, g_l->coName), g_text, kMaxName);
    size_t file = strText(at<uint64_t>(code, g_l->coFilename), g_text + name, kMaxFile);
    size_t table = 0, total = 0;
    const char* bytes = nullptr;
    uint64_t lt = at<uint64_t>(code, g_l->coLinetable);
    if (plausible(lt) && at<uint64_t>(lt, 8) == g_bytesType) {
      uint64_t size = at<uint64_t>(lt, 16);
      total = size < kMaxLineTable ? size : kMaxLineTable;  // longer: lines past it are unknown
      bytes = reinterpret_cast<const char*>(lt) + 32;
      size_t room = kMaxCodeText - name - file;
      table = total < room ? total : room;  // the rest follows in PyCodeTable records
      memcpy(g_text + name + file, bytes, table);
    }
    size_t len = name + file + table;
    Reservation r;
    bool sent = ring::reserve(h, 1 + wire::continuationSlotsForText(static_cast<uint32_t>(len)), &r);
    if (sent) {
      ring::writeContinuations(r, r.index + 1, g_text, len);
      ring::write(r, r.index, wire::RecordType::PyCode, wire::AllocKind::Malloc,
                  static_cast<uint16_t>(len), ps.unsentSerial[i],
                  static_cast<uint64_t>(at<int32_t>(code, g_l->coFirstLine)),
                  g_version | (total > table ? static_cast<uint64_t>(total) << 32 : 0),
                  static_cast<uint32_t>(name | (file << 16)));
    }
    for (size_t off = table; sent && off < total; off += kMaxCodeText) {
      size_t n = total - off < kMaxCodeText ? total - off : kMaxCodeText;
      sent = ring::reserve(h, 1 + wire::continuationSlotsForText(static_cast<uint32_t>(n)), &r);
      if (!sent) break;
      ring::writeContinuations(r, r.index + 1, bytes + off, n);
      ring::write(r, r.index, wire::RecordType::PyCodeTable, wire::AllocKind::Malloc, static_cast<uint16_t>(n),
                  ps.unsentSerial[i], off, 0);
    }
    g_textLock.store(false, std::memory_order_release);
  }
}

void resetAfterFork() {
  g_codeLock.store(false, std::memory_order_relaxed);
  g_textLock.store(false, std::memory_order_relaxed);
}

void noteFinalizing() {
  g_finalSent = true;
  recordSimple(wire::RecordType::PyFinalize, 0, 0, 0, 0);
}

namespace {

int extentOf(dl_phdr_info* info, size_t, void* data) {
  auto* range = static_cast<uint64_t*>(data);  // in: a pc; out: its module's [lo, hi)
  uint64_t lo = ~0ull, hi = 0;
  bool covers = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uint64_t a = info->dlpi_addr + ph.p_vaddr;
    lo = a < lo ? a : lo;
    hi = a + ph.p_memsz > hi ? a + ph.p_memsz : hi;
    covers = covers || (range[0] >= a && range[0] < a + ph.p_memsz);
  }
  if (!covers) return 0;
  range[0] = lo;
  range[1] = hi;
  return 1;
}

// GCC moves the evaluation loop's unlikely blocks (mostly error paths) out of the function into
// a part of their own, `_PyEval_EvalFrameDefault.cold`, which runs in the function's frame. No
// dynamic symbol covers it (Debian's python3.11 has no .symtab either), so a return address
// there, left by a call the cold code made, would not count as an evaluation frame and the
// merge would fall back to the Python frames alone. The cold part is found from the code: the
// function jumps into it (jmp/jcc rel32 to outside itself), and it has an .eh_frame FDE of its
// own. The function's bytes are read as if every offset began such a jump (a stray match inside
// another instruction names a random target); each target outside the function but in its
// module counts for the FDE that covers it, and a pair counts as confirmed when the unwind rule
// at the jump equals the rule at its target, as it must for a real jump (the target runs in the
// same frame; a random pair matches only by chance). An FDE with at least 4 confirmed pairs,
// and 3 of 4 of the first 16 tried (a stray match may land in the cold part too), is a cold
// part: at most two, most jumps first.
// Debian's 3.11: 314 jumps into one FDE; pyenv's 3.11 and 3.12 builds name the same range in
// their .symtab (tests/integration/python_frames_test.cpp compares).
void findColdParts() {
  uint64_t module[2] = {g_evalStart, 0};
  if (!dl_iterate_phdr(&extentOf, module)) return;
  struct Part {
    uint64_t start, end;
    uint32_t jumps, tried, agreed;
  };
  constexpr int kParts = 16;
  Part parts[kParts];
  int count = 0;
  const auto* code = reinterpret_cast<const uint8_t*>(g_evalStart);
  uint64_t size = g_evalEnd - g_evalStart;
  for (uint64_t i = 0; i + 6 <= size; ++i) {
    int32_t rel;
    uint64_t len;
    if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80) {  // jcc rel32
      memcpy(&rel, code + i + 2, 4);
      len = 6;
    } else if (code[i] == 0xe9) {  // jmp rel32
      memcpy(&rel, code + i + 1, 4);
      len = 5;
    } else {
      continue;
    }
    uint64_t site = g_evalStart + i, target = site + len + static_cast<uint64_t>(int64_t{rel});
    if ((target >= g_evalStart && target < g_evalEnd) || target < module[0] || target >= module[1]) continue;
    int k = 0;
    while (k < count && !(target >= parts[k].start && target < parts[k].end)) ++k;
    if (k == count) {
      uint64_t start, end;
      if (count == kParts || !unwind::fdeRange(target, &start, &end)) continue;
      if (start < g_evalEnd && end > g_evalStart) continue;  // the function's own FDE
      parts[count++] = Part{start, end, 0, 0, 0};
    }
    Part& p = parts[k];
    ++p.jumps;
    if (p.tried < 16) {
      ++p.tried;
      uint64_t rule = unwind::ruleAt(site);
      if (rule != unwind::kUnknown && rule == unwind::ruleAt(target)) ++p.agreed;
    }
  }
  for (int found = 0; found < kMaxColdParts; ++found) {
    int best = -1;
    for (int k = 0; k < count; ++k)
      if (parts[k].agreed >= 4 && parts[k].agreed * 4 >= parts[k].tried * 3 &&
          (best < 0 || parts[k].jumps > parts[best].jumps))
        best = k;
    if (best < 0) return;
    g_coldStart[found] = parts[best].start;
    g_coldEnd[found] = parts[best].end;
    parts[best].agreed = 0;
  }
}

void initLayout() {
  // Off: no frames, but leaks still count at finalization (the stacks are native ones).
  const char* env = getenv("MEMLEDGER_PYTHON");
  bool framesOff = env && strcmp(env, "0") == 0;
  void* rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
  if (!rt) return;  // not a Python process
  uint64_t hex = 0;
  if (auto* v = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"))) {
    hex = *v;
  } else if (auto getVersion = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "Py_GetVersion"))) {
    const char* s = getVersion();  // "3.10.13 (main, ...": a static buffer, no allocation
    char* end = nullptr;
    unsigned long major = strtoul(s, &end, 10);
    unsigned long minor = end && *end == '.' ? strtoul(end + 1, &end, 10) : 0;
    hex = (major << 24) | (minor << 16);
  }
  int major = static_cast<int>(hex >> 24), minor = static_cast<int>((hex >> 16) & 0xff);
  for (const Layout& l : kLayouts)
    if (major == 3 && l.minor == minor) g_l = &l;
  void* code = dlsym(RTLD_DEFAULT, "PyCode_Type");
  void* unicode = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
  void* bytes = dlsym(RTLD_DEFAULT, "PyBytes_Type");
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  char line[200];
  if (!g_l) {
    snprintf(line, sizeof line,
             "memledger: Python %d.%d: its frame layout is not known to memledger, stacks show native frames only\n",
             major, minor);
    writeStderr(line);
    return;
  }
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (!code || !unicode || !bytes || !eval ||
      !dladdr1(eval, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) || !sym || !sym->st_size) {
    writeStderr("memledger: Python's symbols (PyCode_Type, _PyEval_EvalFrameDefault) not found, stacks show native frames only\n");
    g_l = nullptr;
    return;
  }
  // 3.13 publishes its own offsets: its cookie and version must be the ones the layout is for.
  if (minor >= 13 && (memcmp(rt, "xdebugpy", 8) != 0 || *reinterpret_cast<const uint64_t*>(static_cast<char*>(rt) + 8) >> 16 != hex >> 16)) {
    writeStderr("memledger: Python 3.13's _Py_DebugOffsets do not match, stacks show native frames only\n");
    g_l = nullptr;
    return;
  }
  void* table = rawMmap(nullptr, sizeof(CodeEntry) * kCodeSlots, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (table == MAP_FAILED) return;
  g_codes = static_cast<CodeEntry*>(table);
  g_rt = static_cast<const char*>(rt);
  g_codeType = reinterpret_cast<uint64_t>(code);
  g_unicodeType = reinterpret_cast<uint64_t>(unicode);
  g_bytesType = reinterpret_cast<uint64_t>(bytes);
  g_evalStart = reinterpret_cast<uint64_t>(eval);
  g_evalEnd = g_evalStart + sym->st_size;
  findColdParts();
  g_version = hex;
  g_finalizing = reinterpret_cast<const uint64_t*>(g_rt + g_l->rtFinalizing);
  g_on = !framesOff;
}
}  // namespace

// A failed dlsym (not Python: no _PyRuntime) leaves a dlerror message: it is ours, not the
// program's, whose next dlerror() must not see it.
void init() {
  initLayout();
  dlerror();
}

}  // namespace memledger::preload::py
