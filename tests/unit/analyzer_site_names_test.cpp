// Which frame names a site (siteText, siteFrame): past the C runtime's entry and the C++
// standard library's frames, the program's own. Frames as a recording of a C++ program holds
// them (the memledger GUI's own recording: a vector's growth under Recording::stackFrames).
#include <gtest/gtest.h>

#include "analyzer/analyzer.h"
#include "analyzer/python_sites.h"

namespace an = memledger::analyzer;

namespace {
an::Frame frame(const char* function, const char* file, int line, const char* module = "/usr/bin/prog") {
  an::Frame f;
  if (function) f.function = function;
  if (file) f.file = file;
  if (line) f.line = line;
  if (module) f.module = module;
  return f;
}
}  // namespace

TEST(SiteNames, StandardLibraryFramesDoNotNameASite) {
  const an::Stack growth = {
      frame("std::__new_allocator<Frame const*>::allocate(unsigned long, void const*)", "/usr/include/c++/12/bits/new_allocator.h", 137),
      frame("void std::vector<Frame const*>::_M_realloc_insert<Frame const*>(...)", "/usr/include/c++/12/bits/vector.tcc", 453),
      frame("std::vector<Frame const*>::push_back(Frame const*&&)", "/usr/include/c++/12/bits/stl_vector.h", 1294),
      frame("Recording::stackFrames(long) const", "/src/analyzer/recording.cpp", 464),
      frame("main", "/src/main.cpp", 9),
      frame("__libc_start_call_main", nullptr, 0, "/lib/x86_64-linux-gnu/libc.so.6"),
  };
  EXPECT_TRUE(an::isStandardLibraryFrame(growth[0]));
  EXPECT_TRUE(an::isStandardLibraryFrame(growth[1]));  // "void std::..." : by its header, not its name
  EXPECT_FALSE(an::isStandardLibraryFrame(growth[3]));
  EXPECT_EQ(an::siteText(growth), "Recording::stackFrames(long) const (recording.cpp:464)");
  EXPECT_EQ(an::siteFrame(growth), &growth[3]);
  // libstdc++ itself without debug information (a string's _M_create), by module or name.
  const an::Stack string = {
      frame("std::__cxx11::basic_string<char>::_M_create(unsigned long&, unsigned long)", nullptr, 0,
            "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
      frame(nullptr, nullptr, 0, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
      frame("load_names", "/src/names.cpp", 30),
  };
  EXPECT_TRUE(an::isStandardLibraryFrame(string[1]));
  EXPECT_EQ(an::siteText(string), "load_names (names.cpp:30)");
  // Only the library's frames have a name: the innermost of them still names the site.
  const an::Stack stripped = {growth[0], frame(nullptr, nullptr, 0, "/usr/bin/prog")};
  EXPECT_EQ(an::siteText(stripped), an::frameText(growth[0]));
  // A program's own template in its own header is the program's.
  EXPECT_FALSE(an::isStandardLibraryFrame(frame("std_like::pool<int>::grow()", "/src/include/pool.h", 12)));
}
