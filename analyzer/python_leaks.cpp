// When is a Python leak a leak: what was live when the program's own code finished, i.e. when its
// interpreter started finalizing (schemas/memledger.sql, python_finalize). CPython frees most of
// what a script kept (module globals, their lists) during finalization, so the blocks still live
// at exit are only what finalization itself failed to free; those are counted apart.
// The recorder keeps an `allocations` row for every block live at that instant, freed later or
// never, so both answers are exact.
#include <string>

#include "analyzer.h"
#include "sql.h"

namespace memledger::analyzer::detail {

std::string pythonLeaks(const Recording& rec, const Filter& filter, Leaks& out) {
  if (rec.info().schema_version < 6) return {};
  std::string images = imageCondition(rec, filter, "f.image_id");
  Statement finals(rec, ("SELECT f.image_id, f.t_ns FROM python_finalize f WHERE 1" + images).c_str());
  std::string skip;
  while (finals.step()) {
    int64_t image = finals.i64(0), t = finals.i64(1);
    skip += (skip.empty() ? "" : ",") + std::to_string(image);
    ++out.python_processes;
    std::string sql =
        "SELECT stack_id, kind, count(*), sum(size) FROM allocations WHERE image_id = ? AND t_alloc < ? "
        "AND (t_free IS NULL OR t_free >= ?) AND t_alloc >= ? AND t_alloc <= ?" +
        std::string(filter.kind ? " AND kind = ?" : "") + " GROUP BY stack_id, kind";
    Statement q(rec, sql.c_str());
    q.bind(1, image).bind(2, t).bind(3, t);
    q.bind(4, filter.t_from_ns.value_or(INT64_MIN)).bind(5, filter.t_to_ns.value_or(INT64_MAX));
    if (filter.kind) q.bind(6, *filter.kind);
    while (q.step()) {
      SiteAmount s;
      s.stack_id = q.i64(0);
      s.kind = q.text(1);
      s.image_id = image;
      s.pid = rec.pidOf(image);
      s.count = q.i64(2);
      s.bytes = q.i64(3);
      out.sites.push_back(std::move(s));
    }
    std::string left = "SELECT count(*), coalesce(sum(size), 0) FROM allocations WHERE image_id = ? AND t_free IS NULL "
                       "AND t_alloc >= ? AND t_alloc <= ?" + std::string(filter.kind ? " AND kind = ?" : "");
    Statement l(rec, left.c_str());
    l.bind(1, image).bind(2, filter.t_from_ns.value_or(INT64_MIN)).bind(3, filter.t_to_ns.value_or(INT64_MAX));
    if (filter.kind) l.bind(4, *filter.kind);
    if (l.step()) {
      out.finalization_left_count += l.i64(0);
      out.finalization_left_bytes += l.i64(1);
    }
  }
  return skip.empty() ? std::string() : " AND image_id NOT IN (" + skip + ")";
}

}  // namespace memledger::analyzer::detail
