// The session's internals behind the public fusert::Session (fusert/fusert.h): model + weights
// -> canonical graph -> fusion plan -> lowered plan -> backend executor, and the per-shape plan
// cache. Not installed; the public class forwards to it.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "fusert/fusert.h"
#include "graph/fusion/group.h"
#include "graph/fusion/planner.h"
#include "graph/loader/model_loader.h"
#include "runtime/backend.h"
#include "runtime/execution_plan.h"
#include "runtime/options.h"
#include "runtime/shape_cache.h"
#include "runtime/staged.h"

namespace fusert {

/// See fusert::Session for the contract of each call.
class SessionImpl {
 public:
  using TensorInfo = fusert::TensorInfo;
  using Dim = fusert::Dim;
  using StepTime = fusert::StepTime;

  static Result<std::unique_ptr<SessionImpl>> load(const std::string& model_path, const SessionOptions& options);
  /// A loaded model (weights not bound) planned, lowered and, unless plan_only, prepared. `stage`:
  /// a stage of a staged model (runtime/staged.h): runs at dims it is given (run_at).
  static Result<std::unique_ptr<SessionImpl>> from_spec(ModelSpec spec, const SessionOptions& options,
                                                        FusionOptions fopt, double import_ms, bool stage);
  /// A loaded model as load() continues with it (staged where it has stage boundaries).
  static Result<std::unique_ptr<SessionImpl>> open_spec(ModelSpec spec, const SessionOptions& options);
  ~SessionImpl();
  /// A run at `dims` given rather than bound from the inputs (a stage of a staged model).
  Result<TensorMap> run_at(const DimValues& dims, const TensorMap& inputs);
  /// The graph outputs' shapes at `dims` (no plan is built).
  Result<std::vector<Shape>> output_shapes_at(const DimValues& dims) const;
  /// profile() at `dims` given (null: bound from the inputs).
  Result<std::vector<StepTime>> profile_at(const DimValues* dims, const TensorMap& inputs, int runs) const;
  /// --explain: the fusion plan with every decision; a staged model's per stage.
  std::string explain() const;
  Result<TensorMap> run(const TensorMap& inputs);
  Status init_device();
  std::string backend_report() const;
  Result<std::vector<StepTime>> profile(const TensorMap& inputs, int runs) const;
  TensorMap seeded_inputs(uint64_t seed = 0, const DimValues& dims = {}) const;
  std::vector<TensorInfo> inputs() const;
  /// Found by loading the model with each dim moved within its range (describe_outputs).
  std::vector<TensorInfo> outputs() const;

  const ModelSpec& model() const { return model_; }
  /// The canonical graph; a staged model's whole graph as imported.
  const Graph& graph() const;
  /// The plan and fusion plan that run; a staged model's first stage's.
  const ExecutionPlan& plan() const;
  const FusionPlan& fusion_plan() const;
  const SessionStats& stats() const { return stats_; }
  const SessionOptions& options() const { return options_; }
  /// Execution contexts (arenas) the backend created so far: the most runs in flight at once.
  size_t execution_contexts() const;

 private:
  SessionImpl() = default;
  static Result<std::unique_ptr<SessionImpl>> load_impl(const std::string& model_path, const SessionOptions& options);
  Result<std::map<std::string, double>> profile_unfused() const;
  static Result<std::unique_ptr<SessionImpl>> load_staged(ModelSpec spec, const SessionOptions& options,
                                                          double import_ms);
  Status plan_model(FusionOptions fopt);
  Result<std::shared_ptr<ShapeInstance>> build_instance(const DimValues& dims) const;
  Result<Graph> graph_at(const DimValues& dims) const;
  Result<TensorMap> empty_outputs(const TensorMap& inputs) const;
  static Result<std::vector<TensorInfo>> describe_outputs(const ModelSpec& m);
  Result<TensorMap> run_instance(const DimValues& dims, const TensorMap& inputs, RunInfo* info);
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
  std::unique_ptr<StagedModel> staged_;  ///< a model with data-dependent shapes: its stages
};

}  // namespace fusert
