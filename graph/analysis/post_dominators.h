// Post-dominator tree over the node DAG, with a virtual exit joining the graph outputs (and any
// node whose results nobody reads). The cross-fusion strategy uses it to find where the
// branches of a split join again: the immediate post-dominator of the split node.
#pragma once

#include <vector>

#include "graph/ir.h"

namespace fusert {

class PostDominatorTree {
 public:
  /// Stands for the virtual exit node in ipdom() results.
  static constexpr int kExit = -1;

  /// Builds the tree; `g` must be in topological order (the verifier's invariant).
  explicit PostDominatorTree(const Graph& g);

  /// Immediate post-dominator of node `n`: the first node every path from `n` to the exit
  /// passes through (kExit when the paths only meet at the exit).
  int ipdom(int n) const { return ipdom_[static_cast<size_t>(n)]; }
  /// True when every path from `b` to the exit passes through `a` (reflexive: a == b is true).
  bool post_dominates(int a, int b) const;
  int num_nodes() const { return static_cast<int>(ipdom_.size()); }

 private:
  std::vector<int> ipdom_;
};

}  // namespace fusert
