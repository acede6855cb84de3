// Runs a CudaPlan on the GPU: one device arena placed by the memory planner (cudaMalloc, no
// managed memory), weights uploaded once, inputs/outputs staged through pinned host memory,
// the steps enqueued on one stream, optionally captured once into a CUDA Graph and replayed.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "graph/base/tensor.h"
#include "runtime/cuda/cuda_lowering.h"

namespace fusert::cuda {

struct ExecutorOptions {
  bool cuda_graph = true;
  bool tf32 = false;
};

class CudaExecutor {
 public:
  /// Creates the context, allocates the arena and scratch, uploads weights, loads the
  /// generated kernels and prepares every step. Errors: no device, out of memory, a library
  /// that cannot handle a node (named).
  static Result<std::unique_ptr<CudaExecutor>> create(const Graph& g, const CudaPlan& plan, const ExecutionPlan& memory,
                                                      const ExecutorOptions& opt);
  ~CudaExecutor();
  /// One inference; inputs checked like the CPU executor (name, dtype, shape).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs);
  /// The last run's plan time in ms (CUDA events around the steps, copies excluded).
  double last_ms() const { return last_ms_; }
  bool graph_used() const { return graph_ok_; }
  std::string device_name() const;

 private:
  CudaExecutor(const Graph& g, const CudaPlan& plan, const ExecutionPlan& memory) : g_(g), plan_(plan), mem_(memory) {}
  Status enqueue_steps(const RunEnv& env, bool capturing);
  const Graph& g_;
  const CudaPlan& plan_;
  const ExecutionPlan& mem_;
  ExecutorOptions opt_;
  std::unique_ptr<Context> ctx_;
  std::vector<LoadedKernel> kernels_;
  uint8_t* arena_ = nullptr;       ///< device
  uint8_t* host_arena_ = nullptr;  ///< pinned host mirror (staging, host-fallback steps)
  uint8_t* weights_ = nullptr;     ///< device
  float* scratch_ = nullptr;
  float* alias_scratch_ = nullptr;
  std::map<ValueId, size_t> weight_offset_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  bool graph_ok_ = false, has_host_steps_ = false;
  int64_t runs_ = 0;
  double last_ms_ = 0;
};

}  // namespace fusert::cuda
