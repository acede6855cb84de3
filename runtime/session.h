// The public C++ API: load a YAML model and its weights, plan it, run it on named tensors.
//
//   fusert::SessionOptions opt;            // device "cpu", all cores, fusion "all"
//   auto s = fusert::Session::load("models/resnet18.yaml", opt);
//   if (!s.ok()) { std::cerr << s.status().to_string(); return 1; }
//   auto out = (*s)->run({{"input", image_nchw}});   // [1,3,224,224] f32 -> {"logits": [1,1000]}
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/fusion/group.h"
#include "graph/loader/model_loader.h"
#include "runtime/backend.h"
#include "runtime/execution_plan.h"
#include "runtime/options.h"
#include "runtime/shape_cache.h"

namespace fusert {

class Session {
 public:
  /// Loads `model_path`, binds weights (options.weights, else the model's file, else seeded if
  /// the model declares none), lowers and plans memory. Errors: model file (file:line:col),
  /// weights (tensor names), device ("no CUDA device"), options.
  static Result<std::unique_ptr<Session>> load(const std::string& model_path, const SessionOptions& options);

  /// Runs one inference. Inputs by graph input name with their dtype and shape: exactly the
  /// declared shape, or for a model with symbolic dims any value of each dim within its range
  /// (one value per dim across inputs). The first run at a new shape builds its execution plan
  /// (stats().shape_cache_misses, shape_build_ms_*); later runs reuse it while it stays among
  /// options().shape_cache_size most recently used shapes. Errors: kInvalidArgument for a missing
  /// or unknown input or a wrong dtype; kShapeMismatch naming the input, its dimension, the dim
  /// and the declared range; errors of a data-dependent check (e.g. a Gather index).
  ///
  /// Thread safety: run() may be called concurrently from any number of threads on one
  /// session. On the CPU each call gets its own execution context (an activation arena from a
  /// pool; the pool grows to the most calls in flight at once), the weights and the plan are
  /// shared read-only, and outputs are bit-identical to a single-threaded run. Each call uses
  /// options().threads CPU threads for its kernels, set on the calling thread only: sessions
  /// with different thread counts in one process never interfere, and no process-wide
  /// setting (omp_set_num_threads for other threads, Eigen::setNbThreads) is changed. On CUDA,
  /// concurrent calls take turns on the session's stream. Loading, seeded_inputs() and the
  /// const accessors are safe to call concurrently with run(); stats().last_run_device_ms is
  /// written by every run (read it when no run is in flight).
  Result<TensorMap> run(const TensorMap& inputs);

  /// CUDA: creates the device context and executor for a session loaded with plan_only
  /// (load() does this itself otherwise). Errors: no device, driver, library, memory.
  Status init_device();

  /// CUDA: the backend's view of the plan, one line per step: library calls, generated
  /// kernels with nvJitLink register and spill counts, host fallbacks with the reason.
  /// Empty for the CPU.
  std::string backend_report() const;

  /// Where the time of one inference goes: `runs` runs of `inputs` (after one untimed run),
  /// each plan step's wall time in ms (median over the runs), in plan order, with its kernel and
  /// what the backend made of it (e.g. the oneDNN primitive and post-op chain). CPU only: a
  /// backend that does not report step times (CUDA: the plan runs as one CUDA Graph; use Nsight
  /// Systems) gives kUnsupported after one run. Errors: those of run(); runs < 1 is
  /// kInvalidArgument.
  struct StepTime {
    std::string name, kernel, detail;
    int nodes = 0;  ///< graph nodes the step computes
    double ms = 0;  ///< median wall time of the step
  };
  Result<std::vector<StepTime>> profile(const TensorMap& inputs, int runs) const;

  /// Seeded values for every graph input: f32 inputs with init kind `input`; integer inputs
  /// (token ids, masks) all ones. For benchmarks, --verify and goldens. `dims` (a model with
  /// symbolic dims): at these values instead of the opt point; a dim not given keeps its opt.
  TensorMap seeded_inputs(uint64_t seed = 0, const DimValues& dims = {}) const;

  /// A graph input or output as an application sees it: the shape with each symbolic dim
  /// by name (Dim::symbol non-empty) and its range, at opt for outputs' concrete example.
  struct Dim {
    int64_t value = 0;   ///< the fixed size, or the dim's value at the opt point
    std::string symbol;  ///< the symbolic dim's name; empty for a fixed dimension
    int64_t min = 0, max = 0;
  };
  struct TensorInfo {
    std::string name;
    DType dtype = DType::kF32;
    std::vector<Dim> dims;
  };
  /// The graph inputs in declaration order, with their symbolic dims.
  std::vector<TensorInfo> inputs() const;
  /// The graph outputs: a dimension that follows one symbolic dim (found by loading the model
  /// with each dim moved within its range) carries its name and range; one that changes with a
  /// dim in another way (e.g. batch * seq) has symbol "?" and min = max = 0; sizes at opt.
  std::vector<TensorInfo> outputs() const;

  const ModelSpec& model() const { return model_; }
  const Graph& graph() const { return model_.graph; }
  const ExecutionPlan& plan() const { return plan_; }
  const FusionPlan& fusion_plan() const { return fusion_; }
  const SessionStats& stats() const { return stats_; }
  const SessionOptions& options() const { return options_; }
  /// Execution contexts (arenas) the backend created so far: the most runs in flight at once.
  size_t execution_contexts() const;

 private:
  Session() = default;
  static Result<std::unique_ptr<Session>> load_impl(const std::string& model_path, const SessionOptions& options);
  Result<std::map<std::string, double>> profile_unfused() const;
  Result<std::shared_ptr<ShapeInstance>> build_instance(const DimValues& dims) const;
  static Result<std::vector<TensorInfo>> describe_outputs(const ModelSpec& m);
  Result<TensorMap> run_instance(const TensorMap& inputs, RunInfo* info);
  ModelSpec model_;
  ModelSpec loaded_;              // as loaded, before weights and canonicalisation (symbolic dims only)
  FusionOptions fusion_options_;  // as parsed, before a backend configured it
  std::unique_ptr<ShapeCache> shapes_;
  std::vector<TensorInfo> output_info_;
  SessionOptions options_;
  ExecutionPlan plan_;
  FusionPlan fusion_;
  SessionStats stats_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<std::mutex> run_mu_ = std::make_unique<std::mutex>();
};

}  // namespace fusert
