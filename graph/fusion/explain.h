// Human-readable views of a FusionPlan: --explain text (groups, refusals, the depth table),
// Graphviz DOT coloured by strategy, and a stable plan dump for golden tests.
#pragma once

#include <string>

#include "graph/fusion/group.h"

namespace fusert {

/// Every group (strategy, kind, members, bytes and launches saved, register estimate and
/// pressure class, imbalance ratio, note), every refusal with its reason, and a summary in the
/// shape of the source's depth table with this model's traffic reduction per depth class.
std::string explain_plan(const Graph& g, const FusionPlan& plan);

/// Fraction of a group's unfused activation traffic (bytes read + written by its members)
/// that fusion removes.
double traffic_reduction(const Graph& g, const FusionGroup& grp);

/// DOT: one cluster per multi-node group, filled by strategy (vertical blue, horizontal green,
/// cross orange, compound purple); single-op nodes white.
std::string plan_to_dot(const Graph& g, const FusionPlan& plan);

/// Deterministic one-line-per-group dump (tests/golden/*.plan.txt): no timings.
std::string plan_dump(const Graph& g, const FusionPlan& plan);

}  // namespace fusert
