// The production SymbolSource: the libdw Symbolizer. Kept apart from symbolize_driver.cpp so that
// code (and its tests) link without the symbolizer.
#include "symbolize_driver.h"

namespace memledger::recorder {
namespace {

class NativeSource final : public SymbolSource {
 public:
  std::vector<SymbolFrame> symbolize(const std::string& path, uint64_t address) override {
    return sym_.symbolize(path, address);
  }
  std::string buildId(const std::string& path) override { return sym_.buildId(path); }
  bool prefetch(const std::string& path, uint64_t address) override {
    return sym_.prefetch(path, address);
  }

 private:
  Symbolizer sym_;  // thread-safe: the warm-up thread prefetches while the end symbolizes
};

}  // namespace

std::unique_ptr<SymbolSource> makeNativeSymbolSource() { return std::make_unique<NativeSource>(); }

}  // namespace memledger::recorder
