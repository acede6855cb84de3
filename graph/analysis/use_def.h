// Use-def view of a graph: which nodes read each value and which nodes feed each node, built
// from the node lists alone (so it is right even when Value::consumers is stale mid-pass).
#pragma once

#include <vector>

#include "graph/ir.h"

namespace fusert {

class UseDef {
 public:
  explicit UseDef(const Graph& g);

  /// Node indices reading `v`, one entry per input slot (a node reading v twice appears twice).
  const std::vector<int>& uses(ValueId v) const { return uses_[static_cast<size_t>(v)]; }
  int num_uses(ValueId v) const { return static_cast<int>(uses(v).size()); }
  /// The node producing `v`, or -1 for graph inputs, initializers and orphans.
  int producer(ValueId v) const { return producer_[static_cast<size_t>(v)]; }
  /// True when exactly one input slot of one node reads `v` and `v` is not a graph output:
  /// the value can be folded into its consumer without being kept alive elsewhere.
  bool single_use(ValueId v) const;
  /// Distinct nodes reading any output of node `n`, ascending.
  const std::vector<int>& successors(int n) const { return succ_[static_cast<size_t>(n)]; }
  /// Distinct nodes producing any input of node `n`, ascending.
  const std::vector<int>& predecessors(int n) const { return pred_[static_cast<size_t>(n)]; }
  /// True when some output of `n` is a graph output.
  bool feeds_graph_output(int n) const { return feeds_output_[static_cast<size_t>(n)]; }

 private:
  std::vector<std::vector<int>> uses_;
  std::vector<int> producer_;
  std::vector<bool> is_output_;
  std::vector<std::vector<int>> succ_, pred_;
  std::vector<bool> feeds_output_;
};

}  // namespace fusert
