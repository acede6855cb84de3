// Execution stages of a model with data-dependent output shapes (graph/data_dependent.h): a
// detector's NonMaxSuppression, a NonZero, a TopK whose K is computed; of an If decided at run
// time, whose branch taken runs between stages as a session of its own (one per branch and
// input shape, built on first use); and of a Loop whose trip count or condition is known at run
// time only, whose body runs between stages, once per iteration, as a session of its own. The
// model's graph is cut into stages at those ops; each stage is a session of its own (fusion
// planned once at the count the import shaped it at, an execution plan per shape through its
// shape cache), and the ops between stages run on the host. A run binds the input dims, runs
// stage 1, runs the ops after it and binds their counts, then runs stage 2 at those counts, and
// so on.
//
// A count of 0 (no detections) is served without computing zero-size tensors
// (runtime/staged_zero.cc): a stage's outputs that follow a zero count are returned empty (their
// shapes taken from the stage at count 0, or 1 and 2), the others are computed at count 1 on
// stand-ins for the empty values; a non-empty value computed from an empty one is an error
// naming the count.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fusert/fusert.h"
#include "graph/data_dependent.h"
#include "graph/loader/model_loader.h"

namespace fusert {

class SessionImpl;

/// True when `spec` runs in stages: a data-dependent count (SymbolicDim::data_dependent) or an
/// If decided at run time (the op If).
bool has_stages(const ModelSpec& spec);

class StagedModel {
 public:
  /// The stages of `full` (imported, weights not bound), each planned and prepared under
  /// `options`. Errors: those of loading each stage, prefixed with the stage.
  static Result<std::unique_ptr<StagedModel>> build(const ModelSpec& full, const SessionOptions& options);
  ~StagedModel();

  /// One run: `inputs` are the model's, `dims` their bound values (bind_dims).
  Result<TensorMap> run(const DimValues& dims, const TensorMap& inputs) const;
  /// Per-step times of every stage at these inputs (SessionImpl::profile), step names prefixed
  /// "stage K: " from the second stage on; the data-dependent ops as steps "host".
  Result<std::vector<StepTime>> profile(const DimValues& dims, const TensorMap& inputs, int runs) const;

  int stage_count() const { return static_cast<int>(stages_.size()); }
  const SessionImpl& stage(int s) const;
  /// False for a stage without nodes (e.g. a NonZero of a graph input: stage 1 is empty).
  bool has_session(int s) const;
  /// --explain: each stage's plan, and what runs between stages.
  std::string explain() const;
  /// The backend reports of the stages.
  std::string report() const;
  /// The stages' load and plan figures summed, and their shape caches' counters.
  void add_stats(SessionStats* into, bool load_figures) const;
  size_t execution_contexts() const;
  Status init_device();

 private:
  struct Stage;
  struct DDOp;
  struct ZeroPlan;
  StagedModel() = default;
  Result<TensorMap> run_stage(const Stage& st, const DimValues& dims, const TensorMap& env) const;
  Result<std::vector<Tensor>> run_dd(const DDOp& op, const TensorMap& env, DimValues* dims) const;
  Result<std::shared_ptr<SessionImpl>> subgraph(const DDOp& op, const std::string& model, const TensorMap& in) const;
  Result<std::vector<Tensor>> run_loop(const DDOp& op, const std::vector<const Tensor*>& x, DimValues* dims) const;
  /// Host op `op` as the model expanded at `dims` gives it, where its constant inputs or its
  /// subgraphs follow the dims (DDOp::follows, node_follows); the expansion kept per dims.
  Result<DDOp> op_at(const DDOp& op, const DimValues& dims) const;
  Result<ZeroPlan> zero_plan(const Stage& st, const DimValues& at, const std::vector<std::string>& zero,
                             const std::set<std::string>& empty) const;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<std::unique_ptr<DDOp>> dd_;
  std::vector<std::string> outputs_;
  std::shared_ptr<const ModelSpec> full_;  ///< the model as loaded (constants_at expands it)
  mutable std::mutex consts_mu_;
  mutable std::map<DimValues, std::shared_ptr<const Graph>> graphs_at_;
  SessionOptions options_;
  std::string path_;
  mutable std::mutex branch_mu_;
  /// If branches and Loop bodies by subgraph and shapes
  mutable std::map<std::string, std::shared_ptr<SessionImpl>> branches_;
};

}  // namespace fusert
