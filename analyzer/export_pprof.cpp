#include <sqlite3.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

#include "analyzer/control.h"
#include "analyzer/export_formats.h"
#include "analyzer/sql.h"
#include "profile.pb.h"

namespace memledger::analyzer {

namespace {

namespace pp = perftools::profiles;

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(db);
      sqlite3_finalize(stmt_);
      throw RecordingError(ErrorKind::Corrupt, "", "memledger: cannot read recording: " + msg);
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* reset(int64_t id) {
    sqlite3_reset(stmt_);
    sqlite3_bind_int64(stmt_, 1, id);
    return stmt_;
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

std::string columnText(sqlite3_stmt* s, int col) {
  const unsigned char* t = sqlite3_column_text(s, col);
  return t ? reinterpret_cast<const char*>(t) : std::string();
}

// Builds the profile's tables, interning strings, functions, mappings and locations once each.
class ProfileBuilder {
 public:
  ProfileBuilder(sqlite3* db, const RecordingInfo& info)
      : stackIps_(db, info),
        ip_(db, "SELECT i.address, i.module_id, m.path, i.address - m.bias FROM ips i "
                "LEFT JOIN modules m ON m.id = i.module_id WHERE i.id = ?1"),
        frames_(db, "SELECT function, file, line FROM frames WHERE ip_id = ?1 ORDER BY depth"),
        module_(db, "SELECT path, build_id, start, end FROM modules WHERE id = ?1") {
    str("");  // string_table[0] must be ""
  }

  int64_t str(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, static_cast<int64_t>(strings_.size()));
    if (inserted) profile.add_string_table(s);
    return it->second;
  }

  // Location ids of a stack, innermost first (pprof's order too). Not cached: each stack is one
  // sample (once per kind), and 600k stacks of 50 frames would be another 240 MB.
  std::vector<uint64_t> locations(int64_t stackId) {
    std::vector<uint64_t> out;
    for (uint32_t ipId : stackIps_.of(stackId)) out.push_back(location(ipId));
    return out;
  }

  pp::Profile profile;

 private:
  uint64_t location(int64_t ipId) {
    auto cached = locations_.find(ipId);
    if (cached != locations_.end()) return cached->second;
    pp::Location* loc = profile.add_location();
    uint64_t id = static_cast<uint64_t>(profile.location_size());
    loc->set_id(id);
    locations_[ipId] = id;
    // A frame without a symbol is named by its module and offset ("python3.11+0x4fb51c"), as
    // the report names it: the mappings say their functions are known, so pprof would not try.
    Frame bare;
    sqlite3_stmt* s = ip_.reset(ipId);
    if (sqlite3_step(s) == SQLITE_ROW) {
      loc->set_address(static_cast<uint64_t>(sqlite3_column_int64(s, 0)));
      if (sqlite3_column_type(s, 1) != SQLITE_NULL) loc->set_mapping_id(mapping(sqlite3_column_int64(s, 1)));
      if (sqlite3_column_type(s, 2) != SQLITE_NULL) {
        bare.module = columnText(s, 2);
        bare.offset = sqlite3_column_int64(s, 3);
      }
    }
    s = frames_.reset(ipId);
    while (sqlite3_step(s) == SQLITE_ROW) {
      bool named = sqlite3_column_type(s, 0) != SQLITE_NULL;
      std::string fn = named ? columnText(s, 0) : unknownFrameName(bare);
      std::string file = !named && sqlite3_column_type(s, 1) == SQLITE_NULL && bare.module ? *bare.module
                                                                                           : columnText(s, 1);
      pp::Line* line = loc->add_line();
      line->set_function_id(function(fn, file));
      if (sqlite3_column_type(s, 2) != SQLITE_NULL) line->set_line(sqlite3_column_int64(s, 2));
    }
    // Not symbolized at all (record --no-symbols): still one line, by module and offset.
    if (loc->line_size() == 0 && bare.module) loc->add_line()->set_function_id(function(unknownFrameName(bare), *bare.module));
    return id;
  }

  uint64_t function(const std::string& name, const std::string& file) {
    auto key = std::make_pair(name, file);
    auto cached = functions_.find(key);
    if (cached != functions_.end()) return cached->second;
    pp::Function* f = profile.add_function();
    uint64_t id = static_cast<uint64_t>(profile.function_size());
    f->set_id(id);
    f->set_name(str(name));
    f->set_system_name(str(name));
    f->set_filename(str(file));
    functions_[key] = id;
    return id;
  }

  uint64_t mapping(int64_t moduleId) {
    auto cached = mappings_.find(moduleId);
    if (cached != mappings_.end()) return cached->second;
    uint64_t id = 0;
    sqlite3_stmt* s = module_.reset(moduleId);
    if (sqlite3_step(s) == SQLITE_ROW) {
      pp::Mapping* m = profile.add_mapping();
      id = static_cast<uint64_t>(profile.mapping_size());
      m->set_id(id);
      m->set_filename(str(columnText(s, 0)));
      m->set_build_id(str(columnText(s, 1)));
      m->set_memory_start(static_cast<uint64_t>(sqlite3_column_int64(s, 2)));
      m->set_memory_limit(static_cast<uint64_t>(sqlite3_column_int64(s, 3)));
      // Frames are symbolized already: pprof must not try to symbolize them again.
      m->set_has_functions(true);
      m->set_has_filenames(true);
      m->set_has_line_numbers(true);
      m->set_has_inline_frames(true);
    }
    mappings_[moduleId] = id;
    return id;
  }

  detail::StackIps stackIps_;
  Stmt ip_, frames_, module_;
  std::unordered_map<std::string, int64_t> strings_;
  std::unordered_map<int64_t, uint64_t> locations_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  std::unordered_map<int64_t, uint64_t> mappings_;
};

}  // namespace

std::string exportPprof(const Recording& rec) {
  ProfileBuilder b(rec.db(), rec.info());
  pp::Profile& p = b.profile;
  for (auto [type, unit] : {std::pair{"alloc_objects", "count"}, {"alloc_space", "bytes"},
                            {"inuse_objects", "count"}, {"inuse_space", "bytes"}}) {
    pp::ValueType* vt = p.add_sample_type();
    vt->set_type(b.str(type));
    vt->set_unit(b.str(unit));
  }
  std::vector<Site> rows;
  {
    detail::Stage reading(0, 0.2);
    rows = detail::siteRows(rec, {});  // no stacks copied in: locations come per ip
  }
  // CUDA device memory (docs/cuda.md), when the recording has any: two more sample types, the
  // device kinds' share of alloc_space and inuse_space (which stay over every kind).
  auto onDevice = [](const Site& s) {
    const kinds::KindInfo* k = kinds::byName(s.kind);
    return k && k->space == kinds::Space::Device;
  };
  bool device = std::any_of(rows.begin(), rows.end(), onDevice);
  if (device)
    for (const char* type : {"device_alloc_space", "device_inuse_space"}) {
      pp::ValueType* vt = p.add_sample_type();
      vt->set_type(b.str(type));
      vt->set_unit(b.str("bytes"));
    }
  p.mutable_period_type()->set_type(b.str("space"));
  p.mutable_period_type()->set_unit(b.str("bytes"));
  p.set_period(1);  // exact: every allocation is counted, nothing is sampled
  p.set_default_sample_type(b.str("inuse_space"));
  p.set_duration_nanos(rec.info().duration_ns);
  p.add_comment(b.str("memledger " + rec.info().version + ": " + rec.info().command));
  int64_t kindKey = b.str("kind"), pidKey = b.str("pid");
  detail::Stage building(0.2, 0.9);
  for (size_t i = 0; i < rows.size(); ++i) {
    const Site& s = rows[i];
    detail::progress(double(i) / double(rows.size()));
    if (s.alloc_count == 0 && s.alloc_bytes == 0 && s.leak_count == 0 && s.leak_bytes == 0) continue;
    pp::Sample* sample = p.add_sample();
    for (uint64_t loc : b.locations(s.stack_id)) sample->add_location_id(loc);
    for (int64_t v : {s.alloc_count, s.alloc_bytes, s.leak_count, s.leak_bytes}) sample->add_value(v);
    if (device) {
      bool d = onDevice(s);
      sample->add_value(d ? s.alloc_bytes : 0);
      sample->add_value(d ? s.leak_bytes : 0);
    }
    pp::Label* kind = sample->add_label();
    kind->set_key(kindKey);
    kind->set_str(b.str(s.kind));
    pp::Label* pid = sample->add_label();
    pid->set_key(pidKey);
    pid->set_num(s.pid);
  }
  std::string raw;
  if (!p.SerializeToString(&raw)) throw std::runtime_error("memledger: cannot serialize the pprof profile");
  return gzipBytes(raw);
}

std::string gzipBytes(const std::string& data) {
  z_stream z{};
  // windowBits 15 + 16: gzip framing rather than raw zlib, as pprof expects.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("memledger: zlib deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("memledger: zlib deflate failed");
  out.resize(z.total_out);
  return out;
}

std::string gunzipBytes(const std::string& data) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) throw std::runtime_error("memledger: zlib inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[65536];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // truncated input
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("memledger: not valid gzip data");
  return out;
}

}  // namespace memledger::analyzer
