// When is a Python leak a leak: what was live when the program's own code finished, i.e. when its
// interpreter started finalizing (schemas/memledger.sql, python_finalize). CPython frees most of
// what a script kept (module globals, their lists) during finalization, so the blocks still live
// at exit are only what finalization itself failed to free; those are counted apart.
// The recorder writes the live set per site and allocation-time bucket at that instant
// (python_finalize_sites): both answers are exact, a time filter's to the bucket.
#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "analyzer.h"
#include "sql.h"

namespace memledger::analyzer::detail {

namespace {

bool hasFinalizeSites(const Recording& rec) {
  if (rec.info().schema_version < 6) return false;
  Statement t(rec, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='python_finalize_sites'");
  return t.step() && t.i64(0) > 0;
}

// Whether the snapshot keeps its blocks' allocation times (t_ns came within version 6).
bool hasAllocationTimes(const Recording& rec) {
  Statement t(rec, "SELECT count(*) FROM pragma_table_info('python_finalize_sites') WHERE name = 't_ns'");
  return t.step() && t.i64(0) > 0;
}

}  // namespace

std::string pythonLeaks(const Recording& rec, const Filter& filter, Leaks& out) {
  if (!hasFinalizeSites(rec)) return {};
  const bool byTime = filter.t_from_ns || filter.t_to_ns;
  std::string images = imageCondition(rec, filter, "f.image_id");
  Statement finals(rec, ("SELECT f.image_id FROM python_finalize f WHERE 1" + images).c_str());
  std::vector<int64_t> python;
  while (finals.step()) python.push_back(finals.i64(0));
  if (python.empty()) return {};
  if (byTime && !hasAllocationTimes(rec)) {
    // An older file: its snapshot cannot say when its blocks were allocated, so the filtered
    // question gets the usual answer (blocks live at exit, each with its row), and says so.
    out.python_exit_rule_processes = static_cast<int64_t>(python.size());
    return {};
  }
  const int64_t from = filter.t_from_ns.value_or(INT64_MIN), to = filter.t_to_ns.value_or(INT64_MAX);
  const int64_t width = rec.info().bucket_ns > 0 ? rec.info().bucket_ns : 1;
  if (byTime) out.python_bucket_ns = width;
  // A bucket counts when it overlaps the range: t_ns <= to and t_ns + width > from.
  std::string timeCond = byTime ? " AND t_ns <= ? AND t_ns > ?" : "";
  std::string kindCond = filter.kind ? " AND kind = ?" : "";
  std::string skip;
  for (int64_t image : python) {
    skip += (skip.empty() ? "" : ",") + std::to_string(image);
    ++out.python_processes;
    // The sites of which some blocks outlived finalization (few: leaky.py 24 blocks, torch 46k).
    std::set<std::pair<int64_t, std::string>> leftAtExit;
    {
      Statement e(rec, "SELECT stack_id, kind FROM sites WHERE image_id = ? AND leak_count > 0");
      e.bind(1, image);
      while (e.step()) leftAtExit.insert({e.i64(0), e.text(1)});
    }
    Statement q(rec, ("SELECT stack_id, kind, sum(count), sum(bytes) FROM python_finalize_sites WHERE image_id = ?" +
                      timeCond + kindCond + " GROUP BY stack_id, kind").c_str());
    int arg = 1;
    q.bind(arg++, image);
    if (byTime) {
      q.bind(arg++, to);
      q.bind(arg++, from > INT64_MIN + width ? from - width : INT64_MIN);
    }
    if (filter.kind) q.bind(arg++, *filter.kind);
    while (q.step()) {
      SiteAmount s;
      s.stack_id = q.i64(0);
      s.kind = q.text(1);
      s.image_id = image;
      s.pid = rec.pidOf(image);
      s.count = q.i64(2);
      s.bytes = q.i64(3);
      s.python_owned = !leftAtExit.count({s.stack_id, s.kind});
      out.sites.push_back(std::move(s));
    }
    // What finalization left: the blocks live at exit (with a time filter, those allocated in
    // the range: each has its row), per kind: pool blocks inside memory counted elsewhere
    // (pyobject) are not added (sites.cpp).
    Statement l(rec, byTime ? ("SELECT kind, count(*), coalesce(sum(size), 0) FROM allocations WHERE image_id = ? "
                               "AND t_free IS NULL AND t_alloc >= ? AND t_alloc <= ?" + kindCond + " GROUP BY kind").c_str()
                            : ("SELECT kind, coalesce(sum(leak_count), 0), coalesce(sum(leak_bytes), 0) FROM sites "
                               "WHERE image_id = ?" + kindCond + " GROUP BY kind").c_str());
    arg = 1;
    l.bind(arg++, image);
    if (byTime) {
      l.bind(arg++, from);
      l.bind(arg++, to);
    }
    if (filter.kind) l.bind(arg++, *filter.kind);
    while (l.step()) {
      if (insideCountedMemory(l.text(0))) continue;
      out.finalization_left_count += l.i64(1);
      out.finalization_left_bytes += l.i64(2);
    }
  }
  return " AND image_id NOT IN (" + skip + ")";
}

int64_t pythonImageCount(const Recording& rec) {
  return static_cast<int64_t>(rec.pythonSnapshot().images.size());
}

std::unique_ptr<PythonSnapshot> loadPythonSnapshot(const Recording& rec) {
  auto out = std::make_unique<PythonSnapshot>();
  if (!hasFinalizeSites(rec)) return out;
  {
    Statement q(rec, "SELECT image_id FROM python_finalize ORDER BY image_id");
    while (q.step()) out->images.push_back(q.i64(0));
  }
  if (out->images.empty()) return out;
  // torch_mlp's import: 213k rows, 210k sites.
  Statement q(rec, "SELECT image_id, stack_id, kind, count, bytes FROM python_finalize_sites");
  while (q.step()) {
    auto& v = out->sites[{q.i64(0), q.i64(1), q.text(2)}];
    v.first += q.i64(3);
    v.second += q.i64(4);
  }
  return out;
}

void applyPythonLeakRule(const Recording& rec, std::vector<Site>& rows) {
  if (rows.empty()) return;
  const PythonSnapshot& py = rec.pythonSnapshot();
  if (py.images.empty()) return;
  PythonSnapshot::Key key;
  for (Site& s : rows) {
    if (!std::binary_search(py.images.begin(), py.images.end(), s.image_id)) continue;
    key.image = s.image_id;
    key.stack = s.stack_id;
    key.kind = s.kind;
    auto it = py.sites.find(key);
    s.leak_count = it == py.sites.end() ? 0 : it->second.first;
    s.leak_bytes = it == py.sites.end() ? 0 : it->second.second;
  }
}

}  // namespace memledger::analyzer::detail
