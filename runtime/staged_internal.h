// StagedModel's parts (runtime/staged.h), shared by staged.cc (stages, runs, reports) and
// staged_ops.cc (the ops run on the host between stages). Not installed.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/session_impl.h"
#include "runtime/staged.h"

namespace fusert {

/// A stage's outputs where a count before it is 0: per output, whether it follows a zero count
/// (then empty, of `shapes`) or is computed at count 1 on stand-ins for the empty values.
struct StagedModel::ZeroPlan {
  std::vector<bool> follows;
  std::vector<Shape> shapes;
};

/// "stage S of N" (S from 1), as messages and reports name a stage.
inline std::string stage_str(int s, int n) { return "stage " + std::to_string(s + 1) + " of " + std::to_string(n); }

struct StagedModel::Stage {
  std::unique_ptr<SessionImpl> session;
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> counts;  ///< the data-dependent dims its shapes follow
  /// Its constants folded from a count (a Shape of a data-dependent output): name -> counts.
  std::map<std::string, std::vector<std::string>> count_constants;
  int index = 0;
  /// Per dims with a zero count, which outputs follow it and their (empty) shapes, once found
  /// (finding them imports the model again: not once per run; runtime/staged_zero.cc).
  mutable std::mutex empty_mu;
  mutable std::map<DimValues, ZeroPlan> zero_plans;
};

struct StagedModel::DDOp {
  Node node;                    ///< value ids of the full graph: names below
  std::vector<std::string> in;  ///< input names ("" omitted)
  std::vector<Tensor> fixed;    ///< per input: its data when a constant
  /// per input: a constant that follows an input dim or a count (a trip count M folded from a
  /// Shape): read from the model at each run's dims (StagedModel::constants_at), not from `fixed`
  std::vector<bool> follows;
  /// The node itself follows the dims: a subgraph serialized at the import's dims (an If branch or
  /// Loop body reading a constant folded from a shape): taken from the model at each run's dims.
  bool node_follows = false;
  std::vector<std::string> out;
  std::vector<std::string> dims;  ///< its counts' dims (data-dependent: dd_dim_names), else none
  std::string label;
  int after = 0;  ///< runs after this stage
};

}  // namespace fusert
