// Steps that follow their input's layout (layout_follow.cc): elementwise ops, BatchNormalization,
// GlobalAveragePool, Resize and NCHW <-> NHWC Transposes on 4-D f32 activations offer the layout pass to read their
// inputs and write their output in the layout of their first input's producer (NCHW, NHWC or oneDNN's unpadded channel
// blocks, kernels/cpu/blocked.h), so the activations around them stay in the layout of the oneDNN convolutions on both
// sides.
#pragma once

#include "graph/ir.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/import_kernels.h"
#include "runtime/execution_plan.h"

namespace fusert::cpu_lowering {

/// Each wraps `s`, already lowered for NCHW (its run is kept for the all-NCHW case), when the
/// node's shapes allow; otherwise `s` is left as it is.
void follow_binary(const Graph& g, const Node& n, cpu::BinaryKind kind, Step& s);
void follow_unary(const Graph& g, const Node& n, cpu::EpOp op, float a, float b, Step& s);
void follow_batch_norm(const Graph& g, const Node& n, Step& s);
/// A fused elementwise program (lower_elementwise.cc) over a 4-D output `y`: its inputs
/// (`inputs`, in the program's order) of the output's shape are read in the chosen block, the
/// per-channel, per-pixel and scalar ones as they are.
void follow_elementwise_program(const Graph& g, const std::vector<ValueId>& inputs, ValueId y,
                                const cpu::ElementwiseProgram& prog, Step& s);
void follow_global_avg_pool(const Graph& g, const Node& n, Step& s);
/// A Resize of the last two dims of a 4-D tensor (`rows`, `cols`: the lowering's tables).
void follow_resize_2d(const Graph& g, const Node& n, const cpu::ResizeAxis& rows, const cpu::ResizeAxis& cols, Step& s);

/// A 4-D Transpose between NCHW and NHWC (perm 0, 2, 3, 1 or 0, 3, 1, 2, as ConvNeXt's blocks
/// write around their LayerNorm and MLP): the NCHW side is read or written in the layout of the
/// convolutions next to it, a copy of pixel runs when that is NHWC.
void follow_transpose(const Graph& g, const Node& n, Step& s);

}  // namespace fusert::cpu_lowering
