// The session's CUDA backend: lowering, kernel dump, statistics, device attachment and runs.
// Only compiled when the CUDA toolkit is present (FUSERT_HAVE_CUDA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_executor.h"
#include "runtime/session.h"

namespace fusert::cuda {

struct Backend {
  CudaPlan plan;
  std::unique_ptr<CudaExecutor> executor;  ///< null until attach_device (plan only)
};

/// Lowers `fusion` for CUDA (compiling every generated kernel), annotates the groups with the
/// measured registers, writes the generated sources to options.dump_kernels if set, and
/// returns the steps (for memory planning) through `steps`.
Result<std::shared_ptr<Backend>> lower_backend(const Graph& g, FusionPlan& fusion, const SessionOptions& options,
                                               std::vector<Step>* steps);
void fill_stats(const Backend& b, SessionStats* stats);
Status attach_device(Backend& b, const Graph& g, const ExecutionPlan& memory, const SessionOptions& options);
bool has_device(const Backend& b);
std::string device_name(const Backend& b);
Result<TensorMap> run(Backend& b, const TensorMap& inputs, SessionStats* stats);
/// One line per step: kind of launch, generated kernels with registers/spills, fallbacks.
std::string report(const Backend& b, const Graph& g);

}  // namespace fusert::cuda
