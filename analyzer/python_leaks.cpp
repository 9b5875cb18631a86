// When is a Python leak a leak: what was live when the program's own code finished, i.e. when its
// interpreter started finalizing (schemas/memledger.sql, python_finalize). CPython frees most of
// what a script kept (module globals, their lists) during finalization, so the blocks still live
// at exit are only what finalization itself failed to free; those are counted apart.
// The recorder writes the live set per site at that instant (python_finalize_sites): both
// answers are exact.
#include <string>

#include "analyzer.h"
#include "sql.h"

namespace memledger::analyzer::detail {

std::string pythonLeaks(const Recording& rec, const Filter& filter, Leaks& out) {
  // A time filter asks about allocation times, which the per-site live set at finalization does
  // not keep: such a question gets the usual answer (blocks live at exit, each with its row).
  if (rec.info().schema_version < 6 || filter.t_from_ns || filter.t_to_ns) return {};
  {
    Statement t(rec, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='python_finalize_sites'");
    if (!t.step() || t.i64(0) == 0) return {};
  }
  std::string images = imageCondition(rec, filter, "f.image_id");
  Statement finals(rec, ("SELECT f.image_id FROM python_finalize f WHERE 1" + images).c_str());
  std::string skip;
  std::string kindCond = filter.kind ? " AND kind = ?" : "";
  while (finals.step()) {
    int64_t image = finals.i64(0);
    skip += (skip.empty() ? "" : ",") + std::to_string(image);
    ++out.python_processes;
    Statement q(rec, ("SELECT stack_id, kind, sum(count), sum(bytes) FROM python_finalize_sites WHERE image_id = ?" +
                      kindCond + " GROUP BY stack_id, kind").c_str());
    q.bind(1, image);
    if (filter.kind) q.bind(2, *filter.kind);
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
    // Per kind: pool blocks inside memory counted elsewhere (pyobject) are not added (sites.cpp).
    Statement l(rec, ("SELECT kind, coalesce(sum(leak_count), 0), coalesce(sum(leak_bytes), 0) FROM sites WHERE image_id = ?" +
                      kindCond + " GROUP BY kind").c_str());
    l.bind(1, image);
    if (filter.kind) l.bind(2, *filter.kind);
    while (l.step()) {
      if (insideCountedMemory(l.text(0))) continue;
      out.finalization_left_count += l.i64(1);
      out.finalization_left_bytes += l.i64(2);
    }
  }
  return skip.empty() ? std::string() : " AND image_id NOT IN (" + skip + ")";
}

}  // namespace memledger::analyzer::detail
