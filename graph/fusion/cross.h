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
// no cycle after the merge. Every operand is checked for its own shape: an anchor epilogue
// writes one value per element of its anchor's output, so the branch that hosts the join must
// already have the join's output shape (a [N,C,1,1] squeeze-excitation gate multiplied into a
// [N,C,H,W] map cannot host it); the other operand may broadcast (per channel, per row,
// spatial 1x1, scalar: the gate then runs as a broadcast-multiply epilogue of the map's conv).
// Conv-sum and two-branch forms need both branches at the output's shape. For the two-branch
// form both convs read the same tensor with the same strides/dilations and group 1, and their
// kernels stack (stacked_conv below: each zero-padded, centred, to the elementwise-max kernel
// with pads that keep every output position; 3x1 beside 1x3 stacks as 3x3).
// Cost (the source's rule): the branches' FLOP ratio; above 1:3 the merge is refused unless
// balancing applies (the cheap kernel zero-padded to the big one's size when the pads line up,
// which makes the ratio 1), and the join is then fused into the heavier branch only. Linear
// branches (no activation before the Add) are re-parameterised into one conv.
// Limits: two-input joins only; Concat joins only in the two-branch conv form.
#pragma once

#include "graph/fusion/legality.h"

namespace fusert {

void run_cross(PlanState& st);

/// The one conv that two convs on the same input stack into (branch balancing and
/// re-parameterisation, RepVGG/ACNet): kernel = elementwise max of the two kernels, each
/// zero-padded centred. Valid when the kernel-size differences are even and each conv's pads
/// plus dilation x its zero-padding equal the stacked pads on every side, so that both convs
/// see the same output positions. `pads` is ONNX order [top, left, bottom, right].
struct StackedConv {
  int64_t kh = 0, kw = 0;
  std::vector<int64_t> pads;
};
bool stacked_conv(const Graph& g, const Node& c1, const Node& c2, StackedConv* out);

}  // namespace fusert
