// Compiles generated CUDA C++ to an sm_90 cubin with NVRTC (to LTO-IR) and nvJitLink, and
// reads the register and spill counts nvJitLink's verbose log reports. Needs no GPU and no
// driver: the same path runs on CI machines without a device. Results are cached in memory
// and on disk by a hash of (source, options, toolkit version) under kernel_cache_dir().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/base/status.h"

namespace fusert::cuda {

struct CompiledKernel {
  std::string entry;          ///< entry function name
  std::string hash;           ///< 16 hex digits: cache key
  std::vector<char> cubin;    ///< linked sm_90 cubin
  int registers = 0;          ///< registers per thread (ptxas "Used N registers")
  int spill_store_bytes = 0;  ///< ptxas "N bytes spill stores"
  int spill_load_bytes = 0;   ///< ptxas "N bytes spill loads"
  int stack_bytes = 0;        ///< ptxas "N bytes stack frame"
  bool from_cache = false;    ///< read from the disk cache (no compile)
  double compile_ms = 0;      ///< NVRTC + nvJitLink wall time (0 when cached)
  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

/// The GPU architecture generated kernels target ("sm_90": H100/H200).
constexpr const char* kTargetArch = "sm_90";

/// Compiles `source` (entry `entry`) for kTargetArch. Errors (kDeviceError) carry the NVRTC or
/// nvJitLink log and name `what` (e.g. the fusion group). Thread-safe.
Result<CompiledKernel> compile_kernel(const std::string& source, const std::string& entry, const std::string& what);

/// $FUSERT_CACHE_DIR, else $XDG_CACHE_HOME/fusert/kernels, else $HOME/.cache/fusert/kernels.
/// An unwritable cache directory is not an error: compiles then just are not cached.
std::string kernel_cache_dir();

/// Counts for tests and --explain: kernels compiled, and served from the memory/disk caches.
struct CompileCounters {
  int compiled = 0, memory_hits = 0, disk_hits = 0;
  double compile_ms = 0;  ///< NVRTC + nvJitLink wall time of all compiles in this process
};
CompileCounters compile_counters();

}  // namespace fusert::cuda
