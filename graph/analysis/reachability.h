// Reachability between nodes of the DAG, as one bitset of descendants per node. Fusion uses it
// to refuse merges that would create a cycle: a group is illegal when a path leaves the group
// and comes back through a node outside it (a -> x -> b with a, b inside, x outside).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.h"

namespace fusert {

class Reachability {
 public:
  /// Builds descendant sets; `g` must be in topological order. O(V * E / 64) time, V^2 bits.
  explicit Reachability(const Graph& g);

  /// True when a path of one or more edges leads from node `a` to node `b` (false for a == b:
  /// the graph is acyclic).
  bool reaches(int a, int b) const;
  /// For a candidate fusion group (node indices, any order): a node outside the group that is
  /// reached from the group and reaches back into it, or -1 when merging the group is acyclic.
  /// The witness is the lowest such node index, so the reason text is deterministic.
  int cycle_witness(const std::vector<int>& group) const;
  /// Shorthand: merging nodes `a` and `b` would create a cycle.
  bool merge_creates_cycle(int a, int b) const { return cycle_witness({a, b}) >= 0; }
  int num_nodes() const { return n_; }

 private:
  const uint64_t* row(int a) const { return &bits_[static_cast<size_t>(a) * words_]; }
  int n_ = 0;
  size_t words_ = 0;
  std::vector<uint64_t> bits_;  // row a, bit b: a reaches b
};

}  // namespace fusert
