// The fusion planner: a pipeline of named stages over a canonicalised graph, producing a
// FusionPlan (kernel groups in execution order, compound regions, refusals with reasons).
#pragma once

#include "graph/base/status.h"
#include "graph/fusion/group.h"

namespace fusert {

/// Model family, decided from graph features (never names): "transformer" (Softmax over a
/// MatMul of two activations, i.e. attention scores Q K^T; a classifier head's MatMul by a
/// weight does not count), "cnn-mobile" (depthwise convolutions), "cnn-residual" (convs with
/// residual joins), "generic".
std::string detect_family(const Graph& g);

/// Plans fusion of `g` (nodes topologically ordered; weights bound). The stage order follows
/// docs/fusion-strategies.md per family: cnn-mobile vertical first; cnn-residual vertical,
/// cross for residuals, compound to finish; transformer horizontal, vertical, compound.
/// With no strategy enabled every node is its own group. Kernel groups are returned in a
/// topological execution order.
Result<FusionPlan> plan_fusion(const Graph& g, const FusionOptions& opt);

/// For a plan made on another shape of the same graph (symbolic dims: same nodes, other input
/// shapes): decodes again, at g's shapes, what groups hold of the shapes (an attention group's
/// batch, heads, seq and mask strides). Errors: kUnsupported when a group no longer matches
/// at these shapes (the caller plans this shape on its own).
Status rebind_plan(const Graph& g, FusionPlan* plan);

}  // namespace fusert
