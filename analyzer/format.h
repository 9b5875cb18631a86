// Human formatting shared by the analyzer's messages and every front end (CLI, GUI).
#pragma once

#include <cstdint>
#include <string>

namespace memledger::analyzer {

std::string formatBytes(int64_t bytes);        // "512 B", "1.5 KiB", "300.0 MiB", "2.00 GiB"
std::string formatDuration(int64_t ns);        // "850 ns", "12.5 us", "3.20 ms", "1.25 s"
std::string formatCount(int64_t n);            // "1,234,567"

}  // namespace memledger::analyzer
