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

  /// Its registry name ("cpu", "cuda"): the device string that selects it.
  virtual std::string name() const = 0;

  /// OK when this machine can run the backend; else kDeviceError saying why (no driver, no
  /// device, not built in). Cheap; called before planning unless only the plan is wanted.
  virtual Status available() const = 0;

  /// Sets the planner's view of this backend in `o` (the session has set o->backend and
  /// o->roofline from the registry entry): for a backend that will lower the plan
  /// (`will_lower`) its capability check and register probe, so groups it cannot run as one
  /// launch are refused, with the reason, before they are formed.
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

/// A backend as the registry knows it (ggml's backend registry, ONNX Runtime's execution
/// provider factories): the device string that selects it, the machine the planner prices on,
/// the session options it owns, and its factory. The built-in backends are one line each in
/// runtime/backend.cc; an application or a test adds its own with register_backend().
struct BackendInfo {
  std::string name;     ///< the device string ("cpu", "cuda")
  std::string summary;  ///< one line for --help and error messages
  Roofline roofline;    ///< the planner's cost constants (FusionOptions::roofline)
  /// Checks the session options this backend reads (precision, CPU kernel set, ...) before
  /// anything is loaded: kInvalidArgument for a bad value, kUnsupported for one this machine
  /// or backend cannot run, each saying why. Null: the backend reads none.
  Status (*check_options)(const SessionOptions& options) = nullptr;
  /// Makes one (called after check_options passed).
  std::unique_ptr<Backend> (*make)(const SessionOptions& options) = nullptr;
};

/// Adds a backend to the registry (before the sessions that use it are loaded). Errors:
/// kInvalidArgument for an empty name, a name taken, or no factory.
Status register_backend(const BackendInfo& info);

/// The registered backend called `name`, or null.
const BackendInfo* find_backend(const std::string& name);

/// The backend for `options.device`, after its check_options. Errors: kInvalidArgument for an
/// unknown device (the known ones listed), kDeviceError for CUDA in a build without it.
Result<std::unique_ptr<Backend>> create_backend(const SessionOptions& options);

/// Devices this build includes, in registration order, e.g. {"cpu", "cuda"}.
std::vector<std::string> backend_names();

/// backend_names() joined: "cpu, cuda".
std::string backend_list();
/// backend_names() as a choice: "cpu or cuda", "cpu, cuda or ref".
std::string backend_choices();
/// True when `name` is a registered backend.
inline bool is_backend(const std::string& name) { return find_backend(name) != nullptr; }

/// The cost constants the planner prices backend `name` with: its registry entry's, or the CUDA
/// backend's in a build without it (runtime/cuda/cuda_roofline.h); false for an unknown name.
bool planner_roofline(const std::string& name, Roofline* r);

/// Sets the planner's name and cost constants (o->backend, o->roofline) to backend `name`'s.
/// Errors: kInvalidArgument for a name not registered.
Status set_planner_backend(const std::string& name, FusionOptions* o);

/// The planner's view of backend `b` for a session: name and roofline from its registry entry,
/// then b.configure_planner(o, true); with options.plan_for set, that backend's name and
/// roofline instead (testing another backend's cost model). Errors: a name not registered.
Status configure_planner(Backend& b, const SessionOptions& options, FusionOptions* o);

/// OK when a CUDA device can be used; otherwise kDeviceError saying why (no CUDA in this
/// build, no driver, no device).
Status check_cuda_device();

}  // namespace fusert
