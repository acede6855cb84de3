// Runs an ExecutionPlan: binds inputs, walks the steps over one arena, copies outputs out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/execution_plan.h"

namespace fusert {

/// Checks `inputs` against the graph inputs of `g`: every input present with its dtype and
/// shape, and no name that is not an input. Errors name the tensor, expected and actual.
Status check_inputs(const Graph& g, const std::map<std::string, Tensor>& inputs);

/// Owns the activation arena of one plan. Not thread-safe: one run at a time.
class Executor {
 public:
  Executor(const Graph& g, const ExecutionPlan& plan);
  /// Runs every step. `inputs` are checked for presence, dtype and shape (errors name the
  /// tensor, expected and actual). Returns the graph outputs by name (fresh tensors).
  Result<std::map<std::string, Tensor>> run(const std::map<std::string, Tensor>& inputs);
  /// Per-step wall time of the last run, in ms (filled when profiling is on).
  const std::vector<double>& step_ms() const { return step_ms_; }
  void set_profiling(bool on) { profiling_ = on; }

 private:
  const Graph& g_;
  const ExecutionPlan& plan_;
  Tensor arena_;
  std::vector<double> step_ms_;
  bool profiling_ = false;
};

}  // namespace fusert
