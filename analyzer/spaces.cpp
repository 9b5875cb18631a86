// The accounts of a recording (schemas/memledger.sql, `spaces`, version 5): every process's address
// spaces and pools with their exact peaks, and the simultaneous peak of each space over the
// processes alive at once. Older files have only each process's heap and mmap peaks.
#include <set>

#include "analyzer/analyzer.h"
#include "analyzer/sql.h"

namespace memledger::analyzer {

std::vector<SpacePeak> spacePeaks(const Recording& rec) {
  std::vector<SpacePeak> out;
  std::set<int64_t> withRows;  // images whose accounts are in `spaces`
  if (rec.info().schema_version >= 5) {
    detail::Statement q(rec,
                        "SELECT image_id, account, name, space, is_pool, kind, reserved_bytes, created_ns, "
                        "destroyed_ns, peak_bytes, peak_ns, end_bytes FROM spaces ORDER BY image_id, account");
    while (q.step()) {
      SpacePeak s;
      s.image_id = q.i64(0);
      s.pid = s.image_id ? rec.pidOf(s.image_id) : 0;
      s.account = q.i64(1);
      s.name = q.text(2);
      s.space = q.text(3);
      s.pool = q.i64(4) != 0;
      s.kind = q.text(5);
      s.reserved_bytes = q.i64(6);
      s.created_ns = q.optI64(7);
      s.destroyed_ns = q.optI64(8);
      s.bytes = q.i64(9);
      s.time_ns = q.i64(10);
      s.end_bytes = q.i64(11);
      withRows.insert(s.image_id);
      out.push_back(std::move(s));
    }
  }
  // Older files, and images a killed recorder never closed (their spaces rows are written when
  // they end): the heap and mmap peaks of the process table.
  detail::Statement q(rec, "SELECT id, pid, peak_heap_bytes, peak_heap_ns, peak_mmap_bytes, peak_mmap_ns FROM processes ORDER BY id");
  while (q.step()) {
    if (withRows.count(q.i64(0))) continue;
    for (int account = 0; account < 2; ++account) {
      SpacePeak s;
      s.image_id = q.i64(0);
      s.pid = q.i64(1);
      s.account = account;
      s.name = s.space = account == 0 ? "heap" : "mmap";
      s.kind = account == 0 ? "" : "mmap";
      s.bytes = q.i64(2 + 2 * account);
      s.time_ns = q.i64(3 + 2 * account);
      out.push_back(std::move(s));
    }
  }
  return out;
}

namespace detail {
std::optional<SpacePeak> simultaneousPeak(const Recording& rec, const std::string& name) {
  if (rec.info().schema_version < 5) return std::nullopt;
  Statement q(rec, "SELECT peak_bytes, peak_ns, end_bytes FROM spaces WHERE image_id = 0 AND name = ?");
  q.bind(1, name);
  if (!q.step()) return std::nullopt;
  SpacePeak s;
  s.name = s.space = name;
  s.bytes = q.i64(0);
  s.time_ns = q.i64(1);
  s.end_bytes = q.i64(2);
  return s;
}
}  // namespace detail

nlohmann::json toJson(const SpacePeak& s) {
  nlohmann::json j = {{"name", s.name}, {"space", s.space}, {"pool", s.pool}, {"kind", s.kind},
                      {"bytes", s.bytes}, {"time_ns", s.time_ns}, {"end_bytes", s.end_bytes}};
  if (s.pid) j["pid"] = s.pid;
  else j["pid"] = nullptr;  // the whole recording: every process alive at once
  if (s.pool) {
    j["reserved_bytes"] = s.reserved_bytes;
    j["created_ns"] = s.created_ns ? nlohmann::json(*s.created_ns) : nlohmann::json();
    j["destroyed_ns"] = s.destroyed_ns ? nlohmann::json(*s.destroyed_ns) : nlohmann::json();
  }
  return j;
}

}  // namespace memledger::analyzer
