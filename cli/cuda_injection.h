// `memledger record` loads the CUDA collector (libmemledger_cupti.so, docs/cuda.md) into the
// program through CUDA_INJECTION64_PATH, which the CUDA driver reads at cuInit.
#pragma once
#include <string>

namespace memledger::cli {

// Sets CUDA_INJECTION64_PATH in our environment (the program inherits it) to the collector
// beside the preload library `preload`, unless `disabled` (--no-cuda), the collector is not
// installed (a build without CUPTI), or the user set one already: then one warning line, and
// theirs is kept. Returns the collector's path, or "" when none is set.
std::string setupCudaInjection(const std::string& preload, bool disabled);

}  // namespace memledger::cli
