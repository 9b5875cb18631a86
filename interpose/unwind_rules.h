// The unwind rules the own walker follows (unwinder.cpp): one 64-bit word per pc, computed from
// the module's .eh_frame as mapped (eh_frame.cpp) and kept in a lock-free table that readers
// probe without a lock. Internal to the preload library.
#pragma once

#include <atomic>
#include <cstdint>

namespace memledger::preload::unwind {

extern bool g_own;  // the own walker is on (MEMLEDGER_UNWIND; off after too many dlclose retirements)

// ---- rules: one 64-bit word per pc (the pc of frame 0, the return address - 1 for the others)
enum : uint64_t {
  kValid = 1ull << 56,
  kRbpBase = 1ull << 57,   // CFA = rbp + off (otherwise rsp + off)
  kRbpSaved = 1ull << 58,  // the caller's rbp is at CFA + rbpOff (otherwise unchanged)
  kEnd = 1ull << 59,       // the return address is undefined: the outermost frame
  kUnknown = 1ull << 60,   // no rule this walker can follow: use unw_backtrace
};
inline int32_t cfaOff(uint64_t r) { return static_cast<int32_t>(r & 0xffffffffu); }
inline int16_t rbpOff(uint64_t r) { return static_cast<int16_t>((r >> 32) & 0xffff); }
inline int8_t raOff(uint64_t r) { return static_cast<int8_t>((r >> 48) & 0xff); }
inline uint64_t makeRule(uint64_t flags, int32_t cfa, int16_t rbp, int8_t ra) {
  return kValid | flags | static_cast<uint32_t>(cfa) | (uint64_t{static_cast<uint16_t>(rbp)} << 32) |
         (uint64_t{static_cast<uint8_t>(ra)} << 48);
}

struct Slot {
  std::atomic<uint64_t> key;  // written last (release): a reader that sees it sees the rule
  std::atomic<uint64_t> rule;
};
constexpr uint32_t kTableBits = 18;
constexpr uint32_t kTableSlots = 1u << kTableBits;  // 4 MiB mapped, touched as used
constexpr uint32_t kTableMaxUsed = kTableSlots / 2;
struct Table {
  Slot slots[kTableSlots];
};
extern std::atomic<Table*> g_table;     // null: none yet, or retired after a dlclose
extern std::atomic<uint32_t> g_codeGen;  // bumped when code is unloaded: traces from before go

inline uint32_t slotOf(uint64_t key) {
  return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> (64 - kTableBits));
}

inline uint64_t lookup(const Table* t, uint64_t key) {
  for (uint32_t i = slotOf(key);; i = (i + 1) & (kTableSlots - 1)) {
    uint64_t k = t->slots[i].key.load(std::memory_order_acquire);
    if (k == key) return t->slots[i].rule.load(std::memory_order_relaxed);
    if (k == 0) return 0;
  }
}

// The rule for `key`, computed now if needed. 0: not available (no table, table full): fall back.
uint64_t slowRule(uint64_t key);
// The rule of the instruction at `pc` (not a return address), computed now and not kept;
// kUnknown: none. And the code range [*begin, *end) of the .eh_frame FDE covering `pc` (false:
// none). For the Python frames' bootstrap (python_frames.cpp: the evaluation loop's cold part).
uint64_t ruleAt(uint64_t pc);
bool fdeRange(uint64_t pc, uint64_t* begin, uint64_t* end);
// After dlclose: retires the table and the modules seen (code may be mapped anew there).
void retireRules();
void rulesResetAfterFork();  // a fork child: the lock's holder may not exist there

}  // namespace memledger::preload::unwind
