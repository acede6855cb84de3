// Cross fusion (inter-layer fusion): a split-then-merge region, where one tensor feeds two
// branches joined by Add/Concat (then maybe an activation), becomes one kernel.
//
//   residual join:   x -> [conv1+relu] -> [conv2+relu] -> [conv3] -> a --+
//                    x --------------------------------------------------[Add] -> [Relu] -> y
//                    ==> [conv3 + Add(x) + Relu] : the join runs in conv3's epilogue
//   conv shortcut:   [conv3](a2) -> a, [downsample](x) -> b, Add(a, b) -> Relu
//                    ==> [conv3 + downsample + Add + Relu] : both GEMMs accumulate into one tile
//   two branches:    x -> [Conv1 3x3 + Relu1], x -> [Conv2 1x1 + Relu2] -> Add -> Relu3
//                    ==> one conv with stacked output channels (1x1 zero-padded to 3x3),
//                        Relu per half, Add of the halves, Relu3, per output tile
//
// Legality: each branch is an anchor (Conv/Gemm) group whose output is used only by the join;
// no cycle after the merge; the join's operands have the output's shape. For the two-branch
// form both convs read the same tensor with the same strides/dilations and group 1.
// Cost (the source's rule): the branches' FLOP ratio; above 1:3 the merge is refused unless
// balancing applies (the cheap kernel zero-padded to the big one's size when the pads line up,
// which makes the ratio 1), and the join is then fused into the heavier branch only. Linear
// branches (no activation before the Add) are re-parameterised into one conv.
// Limits: two-input joins only; Concat joins only in the two-branch conv form.
#pragma once

#include "graph/fusion/legality.h"

namespace fusert {

void run_cross(PlanState& st);

}  // namespace fusert
