// The backend interface: what a session asks of the CPU, CUDA (and any later) backend. A
// backend configures the planner (cost model, capability, measured registers), lowers the
// fusion plan into steps, prepares an executor for the memory plan, and runs it. The session
// holds one backend and never branches on the device (ONNX Runtime's execution providers,
// ggml's backend interface).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/fusion/group.h"
#include "graph/ir.h"
#include "runtime/execution_plan.h"
#include "runtime/executor.h"
#include "runtime/options.h"

namespace fusert {

class Backend {
 public:
  virtual ~Backend() = default;

  /// "cpu" or "cuda": the device string that selects it and the planner's cost-model name.
  virtual std::string name() const = 0;

  /// OK when this machine can run the backend; else kDeviceError saying why (no driver, no
  /// device, not built in). Cheap; called before planning unless only the plan is wanted.
  virtual Status available() const = 0;

  /// Sets the planner's view of this backend in `o`: o->backend (cost model), and for a backend
  /// that will lower the plan (`will_lower`) its capability check and register probe, so
  /// groups it cannot run as one launch are refused, with the reason, before they are formed.
  virtual void configure_planner(FusionOptions* o, bool will_lower) = 0;

  /// Lowers every kernel group of `plan` into one step each (buffers for the memory planner).
  /// Errors: kInternal for a group it accepted but cannot lower, compile errors.
  virtual Result<std::vector<Step>> lower(const Graph& g, const FusionPlan& plan) = 0;

  /// What lowering measured per group (CUDA: registers per thread and spill bytes of the
  /// group's generated kernels, from nvJitLink), keyed by FusionGroup::id; empty when the
  /// backend measures nothing. The session records it on its plan for --explain.
  struct GroupMeasurement {
    int registers = -1;
    int spill_bytes = -1;
  };
  virtual std::map<int, GroupMeasurement> measurements() const { return {}; }

  /// After memory planning: creates the executor (device context, arenas, library
  /// primitives). Errors: device, memory. Idempotent.
  virtual Status prepare(const Graph& g, const ExecutionPlan& plan) = 0;
  /// True once prepare() succeeded.
  virtual bool ready() const = 0;

  /// Runs one inference; `info` (nullable) receives what the run measured. Thread-safe: may
  /// be called concurrently from any number of threads (a backend with one stream serializes).
  virtual Result<TensorMap> run(const TensorMap& inputs, RunInfo* info) const = 0;

  /// Fills the backend's part of the statistics (generated kernels, library calls, host
  /// fallbacks, compile time, device name, CUDA Graph use).
  virtual void fill_stats(SessionStats* stats) const { (void)stats; }
  /// One line per step of the backend's view of the plan; empty when it has nothing to add.
  virtual std::string report(const Graph& g) const {
    (void)g;
    return std::string();
  }
  /// Execution contexts (arenas) created so far: the most runs that were in flight at once.
  virtual size_t execution_contexts() const { return 0; }
};

/// The backend for `options.device` ("cpu", "cuda"). Errors: kInvalidArgument for an unknown
/// device (the known ones listed), kDeviceError for a backend this build does not include.
Result<std::unique_ptr<Backend>> create_backend(const SessionOptions& options);

/// Devices this build includes, e.g. {"cpu", "cuda"}.
std::vector<std::string> backend_names();

/// OK when a CUDA device can be used; otherwise kDeviceError saying why (no CUDA in this
/// build, no driver, no device).
Status check_cuda_device();

}  // namespace fusert
