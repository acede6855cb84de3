// Vertical fusion (pipeline / depth fusion): a producer-consumer chain on one path becomes one
// kernel whose intermediates never reach memory.
//
//   before:  x -> [Conv] -> t1 -> [Add bias] -> t2 -> [Relu] -> y     3 launches, t1/t2 in memory
//   after:   x -> [Conv + bias + Relu (epilogue per output tile)] -> y   1 launch
//
// Heads: an anchor (Conv, Gemm, MatMul), an elementwise/broadcast op, or LayerNormalization/
// Softmax. The chain follows single-consumer edges through epilogue ops (Relu, Clip, Sigmoid,
// HardSigmoid, HardSwish, Gelu, Tanh, Erf, Sqrt, and Add/Sub/Mul/Div/Pow with a weight, constant
// or graph-input operand); a conv chain may end in GlobalAveragePool (a reducing tail); a Gemm
// or elementwise chain may take a LayerNormalization/Softmax over the last axis and continue
// after it.
// Legality: every fused intermediate has one consumer and is not a graph output (the epilogue
// kernels write only the chain's last value); no `fuse: never`; no cycle after the merge; the
// backend supports the kind.
// Cost: depth is bounded by the register-pressure estimate (docs/fusion-strategies.md depth
// table: 2 ops low, 3-4 medium, 5+ high and checked): a chain of 5+ ops whose estimate exceeds
// the budget is cut there, with the numbers in the refusal.
// Limits: a join of two computed paths (residual Add) is left to the cross strategy; Reshape
// and friends end a chain (they are views, not kernels).
#pragma once

#include "graph/fusion/legality.h"

namespace fusert {

/// Forms vertical groups over unclaimed nodes. With profile data, hot anchors go first.
void run_vertical(PlanState& st);

}  // namespace fusert
