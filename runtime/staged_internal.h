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

struct StagedModel::Stage {
  std::unique_ptr<SessionImpl> session;
  std::vector<std::string> inputs, outputs;
  std::vector<std::string> counts;  ///< the data-dependent dims its shapes follow
  int index = 0;
  /// The empty outputs' shapes per dims with a zero count, once found (finding them imports the
  /// model again: not once per run).
  mutable std::mutex empty_mu;
  mutable std::map<DimValues, std::vector<Shape>> empty_shapes;
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
  std::string dim, label;
  int after = 0;  ///< runs after this stage
};

}  // namespace fusert
