// Runs an ExecutionPlan: binds inputs, walks the steps over one arena, copies outputs out.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/execution_plan.h"

namespace fusert {

/// Checks `inputs` against the graph inputs of `g`: every input present with its dtype and
/// shape, and no name that is not an input. Errors name the tensor, expected and actual.
Status check_inputs(const Graph& g, const std::map<std::string, Tensor>& inputs);

/// Runs a plan on the CPU. Thread-safe: run() may be called concurrently from any number of
/// threads. Each call takes an execution context (its own activation arena of
/// plan.arena_bytes) from a pool, creating one when every context is busy, and returns it when
/// done; the graph's weights and the plan's steps are shared read-only (steps keep no mutable
/// state). Each call runs its kernels with `threads` CPU threads (cpu::ThreadScope on the
/// calling thread; 0 = all cores) and changes no process-wide setting.
class Executor {
 public:
  Executor(const Graph& g, const ExecutionPlan& plan, int threads = 0);
  ~Executor();
  /// Runs every step. `inputs` are checked for presence, dtype and shape (errors name the
  /// tensor, expected and actual). Returns the graph outputs by name (fresh tensors).
  /// `step_ms` (nullable) receives each step's wall time in ms.
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs,
                                            std::vector<double>* step_ms = nullptr) const;
  /// Execution contexts created so far (the most runs that were in flight at once).
  size_t contexts() const;

 private:
  struct Context;
  std::unique_ptr<Context> acquire() const;
  void release(std::unique_ptr<Context> c) const;
  const Graph& g_;
  const ExecutionPlan& plan_;
  int threads_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<Context>> free_;
  mutable size_t created_ = 0;
};

}  // namespace fusert
