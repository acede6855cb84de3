// Shared legality predicates of the fusion strategies (XLA's gpu_fusible): single use, graph
// outputs, cycles after a merge, fuse hints, epilogue-able ops, backend capability.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/fusion/decision.h"
#include "graph/fusion/group.h"

namespace fusert {

/// The planner's working state shared by all strategy stages.
struct PlanState {
  const Graph& g;
  const FusionOptions& opt;
  std::vector<int> claim;  ///< node -> kernel group id, -1 while unclaimed
  std::vector<FusionGroup> groups;
  std::vector<Rejection> rejected;

  PlanState(const Graph& graph, const FusionOptions& options) : g(graph), opt(options), claim(graph.nodes.size(), -1) {}
  bool enabled(Strategy s) const { return opt.enabled.count(s) > 0; }
  const Node& node(int i) const { return g.nodes[static_cast<size_t>(i)]; }
  /// Adds a kernel group over `nodes` (claims them), computing outputs and cost annotations.
  int add_group(Strategy s, GroupKind kind, std::vector<int> nodes, const std::string& note = "");
  /// Dissolves a kernel group (its nodes become unclaimed); used when a later stage replaces it.
  void dissolve(int group_id);
  void reject(Strategy s, std::vector<int> nodes, const FusionDecision& d);
  /// The kernel group id of a node, or -1.
  int group_of(int node) const { return claim[static_cast<size_t>(node)]; }
};

/// A value may be kept in registers between two fused ops only if its single consumer is the
/// next op and it is not a graph output (otherwise the group would have to write it too).
FusionDecision check_single_use(const Graph& g, ValueId v);

/// Merging `nodes` into one kernel is illegal if some node outside the set is both reachable
/// from the set and reaches back into it (the merged kernel would depend on itself).
FusionDecision check_no_cycle(const Graph& g, const std::vector<int>& nodes);

/// `fuse: never` hints and unclaimed checks for a candidate node.
FusionDecision check_fusible(const PlanState& st, int node);

/// Ops that can run as a per-element epilogue step (pattern kind elementwise/broadcast, no
/// shape change, f32). A binary op qualifies when its other operand is available before the
/// anchor starts (a weight, a constant, or an earlier value).
/// `running` is the chain's value entering the op (kNoValue: any input may be).
bool is_epilogue_op(const Graph& g, int node, ValueId running = kNoValue);
/// True if `node` is a join of two computed paths (a binary broadcast op, both inputs produced
/// by nodes): where vertical chains stop and cross fusion starts.
bool is_join(const Graph& g, int node);

/// A group as the backend's capability check sees it before it is formed: kind, sorted
/// nodes, outputs, and the join node of a cross group (-1 otherwise).
FusionGroup candidate_group(const Graph& g, GroupKind kind, std::vector<int> nodes, int join = -1);
/// Whether the backend runs a candidate group of `kind` over `nodes` as one launch: asks
/// FusionOptions::supports (set by the backend); yes when unset.
FusionDecision backend_supports(const FusionOptions& opt, const Graph& g, GroupKind kind, const std::vector<int>& nodes,
                                int join = -1);
/// The same for a candidate built with candidate_group and completed by the strategy (e.g.
/// with the decoded attention pattern).
FusionDecision backend_supports(const FusionOptions& opt, const Graph& g, const FusionGroup& candidate);

}  // namespace fusert
