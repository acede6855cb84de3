// Graph-side helpers for the elementwise unary ops of graph/base/unary_ops.def.
#pragma once

#include "graph/ir.h"

namespace fusert {

/// True for the ops whose op-table row comes from graph/base/unary_ops.def (Row 1): one input,
/// one output, the formula in the table.
bool is_table_unary(OpKind op);

/// The float parameters a and b of a Row-1 op at node `n`: its first two attributes in schema
/// order (HardSigmoid: alpha, beta); 0 when the op has fewer.
void unary_params(const Node& n, float* a, float* b);

}  // namespace fusert
