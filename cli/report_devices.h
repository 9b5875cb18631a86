// `memledger report`'s CUDA part (report_devices.cpp).
#pragma once
#include <string>
#include <vector>

#include "analyzer/devices.h"

namespace memledger::cli {
std::string textDevices(const std::vector<analyzer::DeviceSpace>& devices);
nlohmann::json jsonDevices(const std::vector<analyzer::DeviceSpace>& devices);
}  // namespace memledger::cli
