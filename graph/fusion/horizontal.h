// Horizontal fusion (same-level fusion): independent ops with the same structure become one
// launch.
//
//   shared input (Q/K/V, sibling 1x1 convs):     x ---> [Gemm Wq] -> q
//                                                 x ---> [Gemm Wk] -> k      ==>  x -> [Gemm [Wq;Wk;Wv]] -> q, k, v
//                                                 x ---> [Gemm Wv] -> v
//   different inputs, same shape (grouped):       a -> [Gemm W1] -> y1, b -> [Gemm W2] -> y2  ==>  one grouped launch
//                                                 LayerNorm(y1), LayerNorm(y2)                 ==>  one grouped launch
//
// Legality: members are unclaimed single nodes, mutually independent (no path between any two,
// checked with the cycle test on the merged set), with identical attributes: for Gemm the same
// transA/transB/alpha/beta and bias presence, weights as initializers; for 1x1 Conv the same
// strides, pads, dilations and group 1; for shared-input members the shared tensor must be the
// same operand (operand order). Outputs keep their original order and names.
// Cost: saves launches (n-1) and, for a shared input, n-1 reads of it; refused when the merge
// raises peak activation memory by more than FusionOptions::max_peak_growth. With profile
// data, hot ops are left to vertical fusion (the source: cold ops are horizontal candidates).
// Limits: merging anchors that already head vertical chains is the compound strategy's job.
#pragma once

#include "graph/fusion/legality.h"

namespace fusert {

void run_horizontal(PlanState& st);

/// Structural signature of a node for horizontal matching ("" if not a candidate): op,
/// attributes, weight shape, bias presence, and (for shared-input matching) operand position.
std::string horizontal_signature(const Graph& g, int node, bool include_input_shape);

/// The longest-path level of every node from the graph inputs (same-level test).
std::vector<int> node_levels(const Graph& g);

}  // namespace fusert
