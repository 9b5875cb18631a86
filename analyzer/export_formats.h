// `memledger export`: a recording in the formats other tools read.
//   folded        collapsed stacks, outermost frame first: "main;parse;grow 4096" (flamegraph.pl,
//                 speedscope, inferno). One line per distinct stack, values summed. A Python
//                 frame reads as in the report, "py_leaker (leaky.py:7)"; a native frame without
//                 a symbol "[python3.11+0x4fb51c]".
//   chrome-trace  Trace Event JSON: counter tracks ("C") heap, mmap and RSS per process, markers
//                 and the heap peak as instants ("i"), phases as complete events ("X"). The peak
//                 image's heap peak names the sites live at the report's peak, each phase its top
//                 sites, as the report names them. Perfetto and chrome://tracing load it.
//   pprof         profile.proto, gzipped: sample types alloc_objects/count, alloc_space/bytes,
//                 inuse_objects/count, inuse_space/bytes, where "inuse" is the leaks (what was
//                 still live when the process ended; in a Python process, when its interpreter
//                 started finalizing). Locations carry the recorded addresses, inline frames as
//                 extra lines, and the module mappings; a Python frame is a Function named by
//                 its qualified name in its .py file, with its line; a native frame without a
//                 symbol a Function "module+0xoffset" in the module's file.
//   json          the full report (analyzer toJson(report)).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "analyzer/analyzer.h"

namespace memledger::analyzer {

// Which value of a site a folded stack carries.
//   leaked     leak_bytes (live when the process ended)
//   peak       peak_bytes of the peak image's sites (the live set at the largest heap peak)
//   allocated  alloc_bytes
//   count      alloc_count
enum class Metric { Leaked, Peak, Allocated, Count };
std::optional<Metric> parseMetric(std::string_view text);

std::string exportFolded(const Recording& rec, Metric metric);
nlohmann::json exportChromeTrace(const Recording& rec);
std::string exportPprof(const Recording& rec);  // gzipped serialized perftools.profiles.Profile
// The same with progress and cancellation (analyzer.h QueryControl).
std::string exportFolded(const Recording& rec, Metric metric, QueryControl& control);
nlohmann::json exportChromeTrace(const Recording& rec, QueryControl& control);
std::string exportPprof(const Recording& rec, QueryControl& control);

// gzip framing (RFC 1952) via zlib; gunzip throws std::runtime_error on bad input.
std::string gzipBytes(const std::string& data);
std::string gunzipBytes(const std::string& data);

}  // namespace memledger::analyzer
