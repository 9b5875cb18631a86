// A small hand-built recording for the check/diff/export tests, with every number known:
//
//   image 1, pid 1000, "./prog <arg>", exit 0, heap peak 10000 bytes at t=500ns, mmap peak 65536
//   stack 1  leak_here (src/prog.c:10) <- main (src/prog.c:20)            malloc
//            5 allocs / 10000 B, 2 leaked / 4096 B, 1 block / 4000 B live at the peak
//   stack 2  _IO_file_doallocate [libc.so.6] <- printf <- main             malloc
//            1 alloc / 1024 B, leaked (stdio buffer: a built-in suppression)
//   stack 3  build_table (src/table.cpp:33) <- main (src/prog.c:25)        new
//            100 allocs / 50000 B, all freed, 6000 B live at the peak, 40 temporaries / 800 B
//   stack 4  map_arena (src/arena.c:7) <- main                             mmap, 65536 B, freed
#pragma once

#include "analyzer_fixture.h"

namespace memledger::testing {

struct CiRecordingOptions {
  int64_t leakBytes = 4096;      // of stack 1
  int64_t leakCount = 2;
  int64_t tableAllocBytes = 50000;
  int leakLine = 10;             // another build: same function, another line
  int64_t exitCode = 0;
  const char* endedBy = "exit";
  const char* command = "./prog <arg> & \"quoted\"";
  bool extraLeakSite = false;    // stack 5: new_leak (src/extra.c:3) <- main, 1 block 512 B
};

inline std::string buildCiRecording(const std::string& name, const CiRecordingOptions& o = {}) {
  RecordingBuilder b(name);
  b.meta("command", o.command);
  b.meta("peak_image", "1");
  ProcessSpec p;
  p.command = o.command;
  p.ended_by = o.endedBy;
  p.exit_code = o.exitCode;
  p.peak_heap_bytes = 10000;
  p.peak_heap_ns = 500;
  p.peak_mmap_bytes = 65536;
  p.peak_mmap_ns = 700;
  p.peak_rss = 300000;
  b.process(p);
  int64_t s1 = b.stack(1, {{"leak_here", "/src/prog.c", o.leakLine}, {"main", "/src/prog.c", 20}});
  int64_t s2 = b.stack(1, {{"_IO_file_doallocate", nullptr, 0}, {"printf", nullptr, 0}, {"main", "/src/prog.c", 21}},
                       "/lib/x86_64-linux-gnu/libc.so.6");
  int64_t s3 = b.stack(1, {{"build_table", "/src/table.cpp", 33}, {"main", "/src/prog.c", 25}});
  int64_t s4 = b.stack(1, {{"map_arena", "/src/arena.c", 7}, {"main", "/src/prog.c", 26}});
  SiteSpec a;
  a.stack = s1;
  a.alloc_count = 5;
  a.alloc_bytes = 10000;
  a.free_count = 5 - o.leakCount;
  a.freed_bytes = 10000 - o.leakBytes;
  a.leak_count = o.leakCount;
  a.leak_bytes = o.leakBytes;
  a.peak_count = 1;
  a.peak_bytes = 4000;
  b.site(a);
  SiteSpec c;
  c.stack = s2;
  c.alloc_count = 1;
  c.alloc_bytes = 1024;
  c.leak_count = 1;
  c.leak_bytes = 1024;
  b.site(c);
  SiteSpec t;
  t.stack = s3;
  t.kind = "new";
  t.alloc_count = 100;
  t.alloc_bytes = o.tableAllocBytes;
  t.free_count = 100;
  t.freed_bytes = o.tableAllocBytes;
  t.peak_count = 12;
  t.peak_bytes = 6000;
  t.temp_count = 40;
  t.temp_bytes = 800;
  b.site(t);
  SiteSpec m;
  m.stack = s4;
  m.kind = "mmap";
  m.alloc_count = 1;
  m.alloc_bytes = 65536;
  m.free_count = 1;
  m.freed_bytes = 65536;
  m.max_live_count = 1;
  m.max_live_bytes = 65536;
  b.site(m);
  if (o.extraLeakSite) {
    SiteSpec e;
    e.stack = b.stack(1, {{"new_leak", "/src/extra.c", 3}, {"main", "/src/prog.c", 27}});
    e.alloc_count = 1;
    e.alloc_bytes = 512;
    e.leak_count = 1;
    e.leak_bytes = 512;
    b.site(e);
  }
  b.timeline({1, 0, 2000, -1, -1, 0, 100000, -1, 3, 0, 2000});
  b.timeline({1, 1000, 10000, -1, -1, 65536, 300000, -1, 10, 2, 8000});
  b.marker(1, 400, "load");
  return b.finish();
}

}  // namespace memledger::testing
