// The CUDA device under the executor core (runtime/executor.h): weights uploaded once,
// generated kernels loaded and steps prepared once; per execution context one device arena
// placed by the memory planner (cudaMalloc, no managed memory), pinned host staging, scratch,
// and the CUDA Graph captured from the steps and replayed.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_lowering.h"
#include "runtime/executor.h"

namespace fusert::cuda {

struct ExecutorOptions {
  bool cuda_graph = true;
  bool tf32 = false;
};

class CudaDevice final : public ExecDevice {
 public:
  /// Creates the CUDA context, uploads weights, loads the generated kernels and prepares every
  /// step. Errors: no device, out of memory, a library that cannot handle a node (named).
  static Result<std::unique_ptr<CudaDevice>> create(const Graph& g, const CudaPlan& plan, const ExecutionPlan& memory,
                                                    const ExecutorOptions& opt);
  ~CudaDevice() override;
  /// One stream per session: concurrent runs take turns on one execution context.
  size_t max_contexts() const override { return 1; }
  /// Device arena (zeroed once), pinned staging mirror, scratch, timing events.
  Result<std::unique_ptr<ExecContext>> create_context() const override;
  /// Stages inputs, enqueues the steps (eager on the first run, then a captured CUDA Graph
  /// when no step falls back to the host), stages outputs back. info->device_ms is the CUDA-
  /// event time of the steps, copies excluded; step_ms is not filled (steps run asynchronously).
  Status run(ExecContext& ctx, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
             std::vector<double>* step_ms, RunInfo* info) const override;
  std::string device_name() const;

 private:
  struct RunState;
  CudaDevice(const Graph& g, const CudaPlan& plan, const ExecutionPlan& memory) : g_(g), plan_(plan), mem_(memory) {}
  Status enqueue_steps(RunState& rs, const RunEnv& env, bool capturing) const;
  Status capture(RunState& rs, const RunEnv& env) const;
  const Graph& g_;
  const CudaPlan& plan_;
  const ExecutionPlan& mem_;
  ExecutorOptions opt_;
  std::unique_ptr<Context> ctx_;
  std::vector<LoadedKernel> kernels_;
  uint8_t* weights_ = nullptr;  ///< device
  ArenaBuffers::WeightMap weight_ptr_;
  size_t scratch_bytes_ = 0;
  bool has_host_steps_ = false;
};

}  // namespace fusert::cuda
