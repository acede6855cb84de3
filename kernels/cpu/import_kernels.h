// CPU reference kernels for ops ONNX exports bring that no fused kernel covers: comparisons and
// logic (bool results), element-wise extrema, PRelu, Resize and ConvTranspose. Each is an opaque
// op of the op table (one kernel, never inside a fusion group). Shapes are NCHW / row-major;
// broadcast operands are given padded to the output's rank. Like every kernel here they see
// buffers and parameters only, never the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/base/tensor.h"
#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {

/// Element type of the compare/extrema kernels.
enum class ElemType { kF32, kI32, kI64, kBool };

/// Binary comparison or logic op (ONNX Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And,
/// Or, Xor): y (bool, one byte, shape `ys`) = a op b with numpy broadcasting; `as`, `bs` padded
/// to ys's rank. A comparison with NaN is false except NaN != (IEEE 754).
enum class CompareOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };
void compare(CompareOp op, ElemType t, const Shape& ys, const Shape& as, const void* a, const Shape& bs, const void* b,
             uint8_t* y);
/// ONNX Not: y = !x over `count` bools.
void logical_not(int64_t count, const uint8_t* x, uint8_t* y);

/// ONNX Max / Min over k inputs with numpy broadcasting (ONNX opset 13): y (shape `ys`) =
/// element-wise max or min; a NaN in any input gives NaN (numpy.maximum). `shapes` padded.
void extremum(bool max, ElemType t, const Shape& ys, const std::vector<Shape>& shapes,
              const std::vector<const void*>& xs, void* y);

/// ONNX Sum / Mean over k f32 inputs with numpy broadcasting: y (shape `ys`) = x_0 + ... +
/// x_k-1, in input order (times 1/k for Mean); `shapes` padded.
void sum_inputs(bool mean, const Shape& ys, const std::vector<Shape>& shapes, const std::vector<const void*>& xs,
                float* y);

/// ONNX PRelu: y = x for x >= 0, slope * x below; slope (shape `ss`, padded) broadcast to x's
/// shape `xs` (unidirectional). NaN stays NaN.
void prelu(const Shape& xs, const float* x, const Shape& ss, const float* slope, float* y);

/// ONNX Resize (opset 11..19 semantics) on any rank, f32, as a separable sampler: per output
/// dim d, `index[d]` and `weight[d]` hold for each output coordinate `taps` source indices and
/// weights (1 tap for nearest, 2 for linear; computed by the lowering from the coordinate
/// transformation). y[o] = sum over the taps' product of x[i].
void resize(const Shape& xs, const Shape& ys, const std::vector<ResizeAxis>& axes, const float* x, float* y);

/// ONNX ConvTranspose, 2-D NCHW: x [N, C, H, W], w [C, M/group, KH, KW], bias [M] or null,
/// y [N, M, OH, OW] with y[n, g*Mg+m, h*sh - pt + kh*dh, w*sw - pl + kw*dw] += x[n, g*Cg+c, h, w] *
/// w[g*Cg+c, m, kh, kw] (the gradient of Conv; ONNX operator spec). Accumulates in double.
void conv_transpose(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y);

}  // namespace fusert::cpu
