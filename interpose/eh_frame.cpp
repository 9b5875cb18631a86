// .eh_frame read in place (eh_frame.h): the FDE covering a pc found through .eh_frame_hdr's
// binary search table (or a scan of .eh_frame where the table is missing or encoded otherwise),
// its CIE's and its own CFA instructions run up to the pc, and the resulting row turned into the
// walker's rule word. The CFI format is the LSB's (.eh_frame) and DWARF 4's section 6.4; the
// conversion to a rule follows what unwind_rules.h can express. Every read stays inside the
// module's PT_LOAD extent: malformed data gives kUnknown, never a fault.
#include "eh_frame.h"

#include <cstring>

#include "unwind_rules.h"

namespace memledger::preload::unwind {

namespace {

// DW_EH_PE_* pointer encodings.
enum : uint8_t {
  kPeAbsptr = 0x00, kPeUleb = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04,
  kPeSleb = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c,
  kPePcrel = 0x10, kPeDatarel = 0x30, kPeIndirect = 0x80, kPeOmit = 0xff,
};

struct Reader {
  const uint8_t* p;
  const uint8_t* lo;
  const uint8_t* end;
  bool ok = true;

  bool has(uint64_t n) {
    if (ok && p >= lo && static_cast<uint64_t>(end - p) >= n) return true;
    ok = false;
    return false;
  }
  template <typename T>
  T fixed() {
    T v{};
    if (has(sizeof(T))) {
      std::memcpy(&v, p, sizeof(T));
      p += sizeof(T);
    }
    return v;
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (int shift = 0; has(1); shift += 7) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return v;
    }
    return 0;
  }
  int64_t sleb() {
    uint64_t v = 0;
    int shift = 0;
    for (; has(1);) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if (!(b & 0x80)) {
        if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
        return static_cast<int64_t>(v);
      }
    }
    return 0;
  }
  // A pointer in encoding `enc`; `dataBase` is what DW_EH_PE_datarel is relative to.
  uint64_t encoded(uint8_t enc, uint64_t dataBase) {
    if (enc == kPeOmit) return 0;
    uint64_t field = reinterpret_cast<uint64_t>(p);
    uint64_t v;
    switch (enc & 0x0f) {
      case kPeAbsptr: v = fixed<uint64_t>(); break;
      case kPeUleb: v = uleb(); break;
      case kPeUdata2: v = fixed<uint16_t>(); break;
      case kPeUdata4: v = fixed<uint32_t>(); break;
      case kPeUdata8: v = fixed<uint64_t>(); break;
      case kPeSleb: v = static_cast<uint64_t>(sleb()); break;
      case kPeSdata2: v = static_cast<uint64_t>(int64_t{fixed<int16_t>()}); break;
      case kPeSdata4: v = static_cast<uint64_t>(int64_t{fixed<int32_t>()}); break;
      case kPeSdata8: v = fixed<uint64_t>(); break;
      default: ok = false; return 0;
    }
    switch (enc & 0x70) {
      case 0: break;
      case kPePcrel: v += field; break;
      case kPeDatarel: v += dataBase; break;
      default: ok = false; return 0;  // textrel, funcrel, aligned: not used on x86-64 Linux
    }
    if (enc & kPeIndirect) {
      Reader ind{reinterpret_cast<const uint8_t*>(v), lo, end};
      v = ind.fixed<uint64_t>();
      ok = ok && ind.ok;
    }
    return v;
  }
};

// One register's rule in a CFI row (only rbp and the return address column are followed).
enum class Rule : uint8_t { Unspecified, Undefined, SameValue, Offset, Other };
struct RegRule {
  Rule kind = Rule::Unspecified;
  int64_t off = 0;
};
struct Row {
  uint64_t cfaReg = 0;
  int64_t cfaOff = 0;
  bool cfaExpr = false;
  RegRule rbp, ra;
};

constexpr uint64_t kDwarfRbp = 6, kDwarfRsp = 7;

struct Cie {
  uint64_t codeAlign = 1;
  int64_t dataAlign = 1;
  uint64_t raReg = 16;
  uint8_t fdeEnc = kPeAbsptr;
  bool augZ = false;
  bool signal = false;
  const uint8_t* insns = nullptr;
  const uint8_t* insnsEnd = nullptr;
};

// The entry (CIE or FDE) at `at`: its body's bounds and, for an FDE, where its CIE is.
bool entryBounds(Reader& r, const uint8_t* at, const uint8_t** bodyEnd, const uint8_t** idField,
                 uint64_t* id) {
  r.p = at;
  uint64_t len = r.fixed<uint32_t>();
  if (len == 0xffffffffu) len = r.fixed<uint64_t>();
  if (!r.ok || len == 0 || !r.has(len)) return false;
  *bodyEnd = r.p + len;
  *idField = r.p;
  *id = r.fixed<uint32_t>();
  return r.ok;
}

bool parseCie(Reader base, const uint8_t* at, Cie* c) {
  Reader r = base;
  const uint8_t *end, *idField;
  uint64_t id;
  if (!entryBounds(r, at, &end, &idField, &id) || id != 0) return false;
  r.end = end;
  uint8_t version = r.fixed<uint8_t>();
  if (version != 1 && version != 3 && version != 4) return false;
  const char* aug = reinterpret_cast<const char*>(r.p);
  while (r.has(1) && *r.p) ++r.p;
  r.fixed<uint8_t>();
  if (!r.ok) return false;
  if (aug[0] == 'e' && aug[1] == 'h') return false;  // the old GCC "eh" pointer: not handled
  if (version == 4) {
    r.fixed<uint8_t>();  // address size
    r.fixed<uint8_t>();  // segment selector size
  }
  c->codeAlign = r.uleb();
  c->dataAlign = r.sleb();
  c->raReg = version == 1 ? r.fixed<uint8_t>() : r.uleb();
  const uint8_t* augEnd = nullptr;
  for (const char* a = aug; *a && r.ok; ++a) {
    switch (*a) {
      case 'z': {
        c->augZ = true;
        uint64_t n = r.uleb();
        if (!r.has(n)) return false;
        augEnd = r.p + n;
        break;
      }
      case 'L': r.fixed<uint8_t>(); break;  // the LSDA's encoding (the FDE carries the pointer)
      case 'P': r.encoded(r.fixed<uint8_t>(), 0); break;  // the personality routine
      case 'R': c->fdeEnc = r.fixed<uint8_t>(); break;
      case 'S': c->signal = true; break;
      default:
        if (!augEnd) return false;  // unknown and no length to skip it by
        r.p = augEnd;
        a = " ";  // the rest of the string is described by the skipped data
        break;
    }
  }
  if (augEnd) r.p = augEnd;
  c->insns = r.p;
  c->insnsEnd = end;
  return r.ok;
}

void setReg(Row* row, uint64_t reg, const Cie& c, Rule kind, int64_t off) {
  RegRule rr{kind, off};
  if (reg == kDwarfRbp) row->rbp = rr;
  if (reg == c.raReg) row->ra = rr;
}

// Runs CFA instructions from r.p to r.end on `row`, for a pc of `target`, starting at location
// `loc`. `initial` is the row after the CIE's instructions (DW_CFA_restore). False: an instruction
// this reader does not know, or malformed data.
bool execute(Reader r, const Cie& c, uint64_t loc, uint64_t target, Row* row, const Row& initial) {
  constexpr int kStack = 16;
  Row saved[kStack];
  int depth = 0;
  while (r.p < r.end && r.ok) {
    uint8_t op = r.fixed<uint8_t>();
    uint64_t delta = 0;
    bool advance = false;
    switch (op >> 6) {
      case 1: delta = op & 0x3f; advance = true; break;
      case 2: setReg(row, op & 0x3f, c, Rule::Offset, static_cast<int64_t>(r.uleb()) * c.dataAlign); continue;
      case 3: {
        uint64_t reg = op & 0x3f;
        if (reg == kDwarfRbp) row->rbp = initial.rbp;
        if (reg == c.raReg) row->ra = initial.ra;
        continue;
      }
      default: break;
    }
    if (!advance) {
      switch (op) {
        case 0x00: break;  // nop
        case 0x01: {       // set_loc
          uint64_t to = r.encoded(c.fdeEnc, 0);
          if (to > target) return r.ok;
          loc = to;
          break;
        }
        case 0x02: delta = r.fixed<uint8_t>(); advance = true; break;
        case 0x03: delta = r.fixed<uint16_t>(); advance = true; break;
        case 0x04: delta = r.fixed<uint32_t>(); advance = true; break;
        case 0x05: {  // offset_extended
          uint64_t reg = r.uleb();
          setReg(row, reg, c, Rule::Offset, static_cast<int64_t>(r.uleb()) * c.dataAlign);
          break;
        }
        case 0x06: {  // restore_extended
          uint64_t reg = r.uleb();
          if (reg == kDwarfRbp) row->rbp = initial.rbp;
          if (reg == c.raReg) row->ra = initial.ra;
          break;
        }
        case 0x07: setReg(row, r.uleb(), c, Rule::Undefined, 0); break;
        case 0x08: setReg(row, r.uleb(), c, Rule::SameValue, 0); break;
        case 0x09: {  // register
          uint64_t reg = r.uleb();
          r.uleb();
          setReg(row, reg, c, Rule::Other, 0);
          break;
        }
        case 0x0a:  // remember_state
          if (depth == kStack) return false;
          saved[depth++] = *row;
          break;
        case 0x0b:  // restore_state: the whole row, CFA included (what GCC's epilogues expect)
          if (depth == 0) return false;
          *row = saved[--depth];
          break;
        case 0x0c:  // def_cfa
          row->cfaReg = r.uleb();
          row->cfaOff = static_cast<int64_t>(r.uleb());
          row->cfaExpr = false;
          break;
        case 0x0d: row->cfaReg = r.uleb(); row->cfaExpr = false; break;  // def_cfa_register
        case 0x0e: row->cfaOff = static_cast<int64_t>(r.uleb()); break;  // def_cfa_offset
        case 0x0f: {  // def_cfa_expression
          uint64_t n = r.uleb();
          if (r.has(n)) r.p += n;
          row->cfaExpr = true;
          break;
        }
        case 0x10:    // expression
        case 0x16: {  // val_expression
          uint64_t reg = r.uleb();
          uint64_t n = r.uleb();
          if (r.has(n)) r.p += n;
          setReg(row, reg, c, Rule::Other, 0);
          break;
        }
        case 0x11: {  // offset_extended_sf
          uint64_t reg = r.uleb();
          setReg(row, reg, c, Rule::Offset, r.sleb() * c.dataAlign);
          break;
        }
        case 0x12:  // def_cfa_sf
          row->cfaReg = r.uleb();
          row->cfaOff = r.sleb() * c.dataAlign;
          row->cfaExpr = false;
          break;
        case 0x13: row->cfaOff = r.sleb() * c.dataAlign; break;  // def_cfa_offset_sf
        case 0x14:    // val_offset
        case 0x15: {  // val_offset_sf
          uint64_t reg = r.uleb();
          if (op == 0x14) r.uleb();
          else r.sleb();
          setReg(row, reg, c, Rule::Other, 0);
          break;
        }
        case 0x2e: r.uleb(); break;  // GNU_args_size
        case 0x2f: {                 // GNU_negative_offset_extended
          uint64_t reg = r.uleb();
          setReg(row, reg, c, Rule::Offset, -static_cast<int64_t>(r.uleb()) * c.dataAlign);
          break;
        }
        default: return false;
      }
    }
    if (advance) {
      uint64_t to = loc + delta * c.codeAlign;
      if (to > target) return r.ok;  // the row in effect at target is complete
      loc = to;
    }
  }
  return r.ok;
}

uint64_t toRule(const Cie& c, const Row& row) {
  if (c.signal || c.raReg != 16 || row.cfaExpr) return kUnknown;
  if (row.cfaReg != kDwarfRsp && row.cfaReg != kDwarfRbp) return kUnknown;
  if (row.cfaOff < INT32_MIN || row.cfaOff > INT32_MAX) return kUnknown;
  uint64_t flags = row.cfaReg == kDwarfRbp ? uint64_t{kRbpBase} : uint64_t{0};
  if (row.ra.kind == Rule::Undefined) return makeRule(kEnd, 0, 0, 0);  // the outermost frame
  if (row.ra.kind != Rule::Offset || row.ra.off < INT8_MIN || row.ra.off > INT8_MAX) return kUnknown;
  int64_t rbp = 0;
  switch (row.rbp.kind) {
    case Rule::Unspecified:
    case Rule::SameValue: break;  // callee-saved and untouched (the x86-64 ABI's default)
    case Rule::Offset:
      if (row.rbp.off < INT16_MIN || row.rbp.off > INT16_MAX) return kUnknown;
      rbp = row.rbp.off;
      flags |= kRbpSaved;
      break;
    default: return kUnknown;  // undefined: a later rbp-based CFA could not be found
  }
  return makeRule(flags, static_cast<int32_t>(row.cfaOff), static_cast<int16_t>(rbp),
                  static_cast<int8_t>(row.ra.off));
}

// The code range [begin, begin + range) of the FDE at `fde`, and its CIE. False: not an FDE, or
// malformed; then *r is past nothing useful.
bool fdeBounds(Reader base, const uint8_t* fde, Reader* r, Cie* c, uint64_t* begin, uint64_t* range) {
  *r = base;
  const uint8_t *end, *idField;
  uint64_t id;
  if (!entryBounds(*r, fde, &end, &idField, &id) || id == 0) return false;
  if (!parseCie(base, idField - id, c)) return false;
  r->end = end;
  *begin = r->encoded(c->fdeEnc, 0);
  *range = r->encoded(c->fdeEnc & 0x0f, 0);
  return r->ok;
}

// The rule from the FDE at `fde` if it covers pc; 0 if it does not cover it.
uint64_t ruleFromFde(Reader base, const uint8_t* fde, uint64_t pc) {
  Reader r = base;
  Cie c;
  uint64_t begin, range;
  if (!fdeBounds(base, fde, &r, &c, &begin, &range)) return kUnknown;
  if (pc < begin || pc - begin >= range) return 0;
  if (c.augZ) {
    uint64_t n = r.uleb();
    if (!r.has(n)) return kUnknown;
    r.p += n;
  }
  Row row;
  Reader ci = base;
  ci.p = c.insns;
  ci.end = c.insnsEnd;
  if (!execute(ci, c, begin, ~0ull, &row, row)) return kUnknown;
  Row initial = row;
  if (!execute(r, c, begin, pc, &row, initial)) return kUnknown;
  return toRule(c, row);
}

// The FDE covering pc among every FDE in .eh_frame from `start` until its terminator; null: none.
const uint8_t* scan(Reader base, const uint8_t* start, uint64_t pc) {
  Reader r = base;
  for (const uint8_t* at = start;;) {
    const uint8_t *end, *idField;
    uint64_t id;
    if (!entryBounds(r, at, &end, &idField, &id)) return nullptr;  // terminator, or malformed
    if (id != 0) {
      Reader fr;
      Cie c;
      uint64_t begin, range;
      if (fdeBounds(base, at, &fr, &c, &begin, &range) && pc >= begin && pc - begin < range) return at;
    }
    at = end;
  }
}

// The FDE covering pc in m, found through .eh_frame_hdr's table (or a scan); null: none.
// *base is set to the reader over the module that the FDE is read with.
const uint8_t* fdeFor(const EhModule& m, uint64_t pc, Reader* base) {
  if (!m.hdr) return nullptr;
  Reader r{m.hdr, reinterpret_cast<const uint8_t*>(m.lo), reinterpret_cast<const uint8_t*>(m.hi)};
  auto hdrBase = reinterpret_cast<uint64_t>(m.hdr);
  uint8_t version = r.fixed<uint8_t>();
  uint8_t ptrEnc = r.fixed<uint8_t>();
  uint8_t countEnc = r.fixed<uint8_t>();
  uint8_t tableEnc = r.fixed<uint8_t>();
  if (!r.ok || version != 1) return nullptr;
  auto* ehFrame = reinterpret_cast<const uint8_t*>(r.encoded(ptrEnc, hdrBase));
  uint64_t count = countEnc == kPeOmit ? 0 : r.encoded(countEnc, hdrBase);
  if (!r.ok) return nullptr;
  *base = Reader{nullptr, r.lo, r.end};
  if (tableEnc != (kPeDatarel | kPeSdata4) || count == 0) return scan(*base, ehFrame, pc);
  // Sorted (initial location, FDE) pairs, both relative to the header: the last one at or below pc.
  if (!r.has(count * 8)) return nullptr;
  const uint8_t* table = r.p;
  auto at = [&](uint64_t i, int which) {
    int32_t v;
    std::memcpy(&v, table + i * 8 + which * 4, 4);
    return hdrBase + static_cast<uint64_t>(int64_t{v});
  };
  uint64_t lo = 0, hi = count;
  while (lo < hi) {
    uint64_t mid = (lo + hi) / 2;
    if (at(mid, 0) <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return nullptr;
  return reinterpret_cast<const uint8_t*>(at(lo - 1, 1));
}

}  // namespace

uint64_t ehFrameRule(const EhModule& m, uint64_t pc) {
  Reader base{nullptr, nullptr, nullptr};
  const uint8_t* fde = fdeFor(m, pc, &base);
  if (!fde) return kUnknown;
  uint64_t rule = ruleFromFde(base, fde, pc);
  return rule ? rule : kUnknown;
}

bool ehFrameRange(const EhModule& m, uint64_t pc, uint64_t* begin, uint64_t* end) {
  Reader base{nullptr, nullptr, nullptr};
  const uint8_t* fde = fdeFor(m, pc, &base);
  Reader r = base;
  Cie c;
  uint64_t b, range;
  if (!fde || !fdeBounds(base, fde, &r, &c, &b, &range) || pc < b || pc - b >= range) return false;
  *begin = b;
  *end = b + range;
  return true;
}

}  // namespace memledger::preload::unwind
