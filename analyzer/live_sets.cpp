// The readers of the two stored live sets (analyzer/live_sets.h): version 8's packed lists
// (schemas/packed_sites.h) and the row tables of versions 5/6 to 7, giving the same entries.
#include "analyzer/live_sets.h"

#include <algorithm>
#include <limits>

#include "analyzer/sql.h"
#include "schemas/kinds.h"
#include "schemas/packed_sites.h"

namespace memledger::analyzer::detail {

namespace {

constexpr int kPackedVersion = 8;
constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

[[noreturn]] void throwDamaged(const Recording& rec, const char* table, int64_t rowid, const std::string& what) {
  const std::string& path = rec.info().path;
  throw RecordingError(ErrorKind::Corrupt, path,
                       "memledger: '" + path + "' is corrupt: " + table + " row " + std::to_string(rowid) + ": " + what);
}

bool hasTable(const Recording& rec, const char* name) {
  Statement t(rec, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?");
  t.bind(1, std::string(name));
  return t.step() && t.i64(0) > 0;
}

}  // namespace

std::vector<PeakSite> peakSites(const Recording& rec, const std::string& space) {
  std::vector<PeakSite> out;
  const int version = rec.info().schema_version;
  if (version < 5) return out;
  if (version < kPackedVersion) {
    Statement q(rec, "SELECT image_id, stack_id, kind, count, bytes FROM peak_sites WHERE space = ?");
    q.bind(1, space);
    while (q.step())
      out.push_back({q.i64(0), q.i64(1), static_cast<uint64_t>(q.i64(2)), q.i64(3), q.i64(4)});
  } else {
    Statement q(rec, "SELECT id, image_id, sites FROM peak_site_lists WHERE space = ? ORDER BY id");
    q.bind(1, space);
    while (q.step()) {
      const int64_t image = q.i64(1);
      std::string range;
      std::string error = packed::decodePeakSites(q.blob(2), static_cast<size_t>(q.bytes(2)), [&](const packed::PeakSiteEntry& e) {
        if (e.stack > kMax || e.count > kMax || e.bytes > kMax) range = "a value is out of range";
        out.push_back({image, static_cast<int64_t>(e.stack), e.kind, static_cast<int64_t>(e.count),
                       static_cast<int64_t>(e.bytes)});
      });
      if (error.empty()) error = range;
      if (!error.empty()) throwDamaged(rec, "peak_site_lists", q.i64(0), error);
    }
  }
  // One order for both forms (the packed lists are sorted per row, the rows were in site order).
  auto order = [](const PeakSite& a, const PeakSite& b) {
    if (a.image_id != b.image_id) return a.image_id < b.image_id;
    return a.stack_id != b.stack_id ? a.stack_id < b.stack_id : a.kind < b.kind;
  };
  if (!std::is_sorted(out.begin(), out.end(), order)) std::sort(out.begin(), out.end(), order);
  return out;
}

bool hasFinalizeSites(const Recording& rec) {
  const int version = rec.info().schema_version;
  if (version < 6) return false;
  return hasTable(rec, version < kPackedVersion ? "python_finalize_sites" : "python_finalize_lists");
}

bool finalizeSitesHaveTimes(const Recording& rec) {
  if (rec.info().schema_version >= kPackedVersion) return true;
  Statement t(rec, "SELECT count(*) FROM pragma_table_info('python_finalize_sites') WHERE name = 't_ns'");
  return t.step() && t.i64(0) > 0;
}

void forEachFinalizeSite(const Recording& rec, std::optional<int64_t> image,
                         const std::function<void(const FinalizeSite&)>& f) {
  if (!hasFinalizeSites(rec)) return;
  FinalizeSite s;
  const std::string where = image ? " WHERE image_id = ?" : "";
  if (rec.info().schema_version < kPackedVersion) {
    const bool timed = finalizeSitesHaveTimes(rec);
    Statement q(rec, ("SELECT image_id, stack_id, kind, count, bytes" + std::string(timed ? ", t_ns" : "") +
                      " FROM python_finalize_sites" + where).c_str());
    if (image) q.bind(1, *image);
    while (q.step()) {
      s.image_id = q.i64(0);
      s.stack_id = q.i64(1);
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(q.raw(), 2));
      s.kind_name = text ? std::string_view(text, static_cast<size_t>(q.bytes(2))) : std::string_view();
      const kinds::KindInfo* k = kinds::byName(s.kind_name);
      s.kind = k ? k->code : 255;
      s.count = q.i64(3);
      s.bytes = q.i64(4);
      s.t_ns = timed ? q.optI64(5) : std::nullopt;
      f(s);
    }
    return;
  }
  Statement q(rec, ("SELECT id, image_id, bucket_ns, sites FROM python_finalize_lists" + where + " ORDER BY id").c_str());
  if (image) q.bind(1, *image);
  while (q.step()) {
    s.image_id = q.i64(1);
    const int64_t width = q.i64(2);
    if (width <= 0) throwDamaged(rec, "python_finalize_lists", q.i64(0), "bucket_ns is not positive");
    std::string range;
    std::string error = packed::decodeFinalizeSites(q.blob(3), static_cast<size_t>(q.bytes(3)), [&](const packed::FinalizeSiteEntry& e) {
      if (!range.empty()) return;
      if (e.stack > kMax || e.count > kMax || e.bytes > kMax || e.bucket > kMax / static_cast<uint64_t>(width)) {
        range = "a value is out of range";
        return;
      }
      s.stack_id = static_cast<int64_t>(e.stack);
      s.kind = kinds::known(e.kind) ? e.kind : 255;
      s.kind_name = siteKindName(e.kind);
      s.count = static_cast<int64_t>(e.count);
      s.bytes = static_cast<int64_t>(e.bytes);
      s.t_ns = static_cast<int64_t>(e.bucket) * width;
      f(s);
    });
    if (error.empty()) error = range;
    if (!error.empty()) throwDamaged(rec, "python_finalize_lists", q.i64(0), error);
  }
}

}  // namespace memledger::analyzer::detail
