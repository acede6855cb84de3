// The CUDA backend: cuDNN/cuBLASLt anchors and NVRTC-generated fused kernels (runtime/cuda
// lowering), run by the executor core on the CUDA device (one stream), captured as a CUDA Graph. Only compiled
// when the CUDA toolkit is present; the registry (runtime/backend.cc) offers it as "cuda".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/nvrtc_compiler.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_executor.h"

namespace fusert::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const SessionOptions& options) : options_(options) {}

  std::string name() const override { return "cuda"; }
  Status available() const override;
  /// Cost model "cuda"; when it will lower: nvJitLink's measured registers per candidate
  /// (options.register_budget, default 32 = full occupancy on sm_90).
  void configure_planner(FusionOptions* o, bool will_lower) override;
  /// Lowers every group (compiling each generated kernel), writes sources to
  /// options.dump_kernels if set.
  Result<std::vector<Step>> lower(const Graph& g, const FusionPlan& plan) override;
  /// Registers per thread and spill bytes of each group's generated kernels (nvJitLink).
  std::map<int, GroupMeasurement> measurements() const override;
  Status prepare(const Graph& g, const ExecutionPlan& plan) override;
  bool ready() const override { return executor_ != nullptr; }
  /// Runs take turns on the session's one stream.
  Result<TensorMap> run(const TensorMap& inputs, RunInfo* info) const override;
  void fill_stats(SessionStats* stats) const override;
  /// One line per step: kind of launch, generated kernels with registers/spills, fallbacks.
  std::string report(const Graph& g) const override;

 private:
  SessionOptions options_;
  CompileCounters compiled_before_;
  CudaPlan plan_;
  std::unique_ptr<ExecutorCore> executor_;  ///< null until prepare (plan only)
  const CudaDevice* device_ = nullptr;      ///< owned by executor_
};

}  // namespace fusert::cuda
