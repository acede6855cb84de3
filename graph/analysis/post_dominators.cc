// Immediate post-dominators on a topologically ordered DAG in one reverse sweep.
//
// Every successor of a node comes later in topological order, and every ipdom lies strictly
// later too, so the tree's parent index always exceeds the child's (the exit counts as index
// N). Visiting nodes from last to first, all successors already have their ipdom, and
//   ipdom(n) = nearest common ancestor, in the tree, of n's successors
// found by the two-finger walk of Cooper, Harvey and Kennedy ("A Simple, Fast Dominance
// Algorithm"): repeatedly step the finger with the smaller index up to its parent. O(V * depth).
#include "graph/analysis/post_dominators.h"

#include "graph/analysis/use_def.h"

namespace fusert {

PostDominatorTree::PostDominatorTree(const Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  const int exit = n;  // internal index of the virtual exit
  UseDef ud(g);
  std::vector<int> parent(static_cast<size_t>(n) + 1, exit);
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (a < b) a = parent[static_cast<size_t>(a)];
      while (b < a) b = parent[static_cast<size_t>(b)];
    }
    return a;
  };
  for (int v = n - 1; v >= 0; --v) {
    int p = -2;  // none yet
    const std::vector<int>& succ = ud.successors(v);
    for (int s : succ) p = p == -2 ? s : intersect(p, s);
    // A result that is a graph output, or that nobody reads, flows to the exit directly.
    if (succ.empty() || ud.feeds_graph_output(v)) p = exit;
    parent[static_cast<size_t>(v)] = p;
  }
  ipdom_.resize(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    int p = parent[static_cast<size_t>(v)];
    ipdom_[static_cast<size_t>(v)] = p == exit ? kExit : p;
  }
}

bool PostDominatorTree::post_dominates(int a, int b) const {
  // Walk up from b; parents only grow, so stop once past a.
  for (int x = b; x != kExit && x <= a; x = ipdom(x)) {
    if (x == a) return true;
  }
  return false;
}

}  // namespace fusert
