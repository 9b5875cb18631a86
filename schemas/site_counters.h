// The per-site counters of a recording, in their stored order: one list for the recorder's rows,
// the packed site_totals encoding, the analyzer's `sites` relation and its Site struct.
// schemas/memledger.sql documents each (tests/unit/kinds_test.cpp checks the schema lists them
// in this order). Append only: site_totals entries carry them in this order.
#pragma once

#define MEMLEDGER_SITE_COUNTERS(X) \
  X(alloc_count)                   \
  X(alloc_bytes)                   \
  X(free_count)                    \
  X(freed_bytes)                   \
  X(leak_count)                    \
  X(leak_bytes)                    \
  X(peak_count)                    \
  X(peak_bytes)                    \
  X(temp_count)                    \
  X(temp_bytes)                    \
  X(realloc_count)                 \
  X(max_live_count)                \
  X(max_live_bytes)                \
  X(min_size)                      \
  X(max_size)                      \
  X(same_size_count)               \
  X(lifetime_ns_sum)               \
  X(max_realloc_chain)

namespace memledger::schema {
#define MEMLEDGER_COUNT_ONE(name) +1
inline constexpr int kSiteCounters = 0 MEMLEDGER_SITE_COUNTERS(MEMLEDGER_COUNT_ONE);
#undef MEMLEDGER_COUNT_ONE
// PRAGMA user_version of schemas/memledger.sql: the recorder writes it, the analyzer reads up to
// it (tests/unit/kinds_test.cpp checks the schema file says the same).
inline constexpr int kSchemaVersion = 8;  // 6: Python frames (python_code, python_finalize), leak kinds (leak_scans, leak_kinds); 7: frees per site per bucket; 8: peak_sites and python_finalize_sites packed (peak_site_lists, python_finalize_lists)
}  // namespace memledger::schema
