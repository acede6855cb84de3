// CPU kernels for sequence-model ops (Transformer blocks): normalisation, GELU, reductions and
// index/layout ops. Index/layout kernels move raw elements of `esize` bytes, so they serve every
// dtype. Like every kernel here they see buffers and parameters only, never the graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/base/tensor.h"

namespace fusert::cpu {

/// LayerNormalization (ONNX opset 17) over an [outer, inner] view: per row,
/// y = (x - mean) / sqrt(var + epsilon) * scale + bias, population variance, accumulated in
/// double. scale/bias are [inner]; bias nullable.
void layer_norm(int64_t outer, int64_t inner, const float* x, const float* scale, const float* bias, float epsilon,
                float* y);

/// How `reduce` combines a window: its sum, its mean, its product, or log(sum(exp)) (the
/// window's max subtracted before exp, so large values do not overflow; an empty window gives
/// 0, 0, 1 and -inf). Accumulated in double.
enum class ReduceOp { kSum, kMean, kProd, kLogSumExp };
/// y[o, i] = `op` over l of x[o, l, i]: the middle axis of an [outer, len, inner] view ->
/// [outer, inner]. Reducing several axes is done by the caller as one [outer, len, inner] view
/// when they are contiguous, else by successive calls (each op here composes over axes).
void reduce(int64_t outer, int64_t len, int64_t inner, ReduceOp op, const float* x, float* y);
/// ONNX Expand: y (shape `ys`) = x (shape `xs`, broadcastable to ys, same rank or lower) by
/// numpy broadcasting, `esize` bytes per element.
void expand(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y);
/// ONNX Pad: y = x padded by `pads` ([begin_0..begin_r-1, end_0..end_r-1], all >= 0); mode 0
/// constant (`value`: one element of `esize` bytes, x's dtype), 1 reflect (mirror without
/// repeating the edge; pads below the dim), 2 edge. Elements are moved as `esize` raw bytes.
void pad(const Shape& xs, const std::vector<int64_t>& pads, int mode, const void* value, size_t esize, const void* x,
         void* y);
/// ONNX Tile: y (shape xs * reps) = x repeated along each dim, `esize` bytes per element.
void tile(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y);
/// ONNX ArgMax over the middle axis of an [outer, len, inner] view: the first largest index
/// (the last with `last`); a NaN counts as the largest (numpy's argmax). With `min`, ArgMin: the
/// smallest, a NaN again winning (numpy's argmin).
void argmax(int64_t outer, int64_t len, int64_t inner, bool last, const float* x, int64_t* y, bool min = false);
/// Hardmax over the middle axis of an [outer, len, inner] view: y = 1 at argmax's index (the first
/// largest; a NaN counts as the largest), 0 elsewhere; y has x's shape (it may alias x).
void hardmax(int64_t outer, int64_t len, int64_t inner, const float* x, float* y);
/// y[o, i] = max (or min) over l of x[o, l, i]; NaN if any element of the window is NaN
/// (ONNX ReduceMax/ReduceMin, as numpy's maximum.reduce); an empty window gives -inf (+inf).
void reduce_extreme(int64_t outer, int64_t len, int64_t inner, bool max, const float* x, float* y);

/// Copies `len_out` slices along an axis: x viewed as [outer, len_in, inner] elements of `esize`
/// bytes; y[o, j, i] = x[o, start + j * step, i] (step may be negative).
void slice_axis(int64_t outer, int64_t len_in, int64_t inner, int64_t start, int64_t step, int64_t len_out,
                size_t esize, const void* x, void* y);

/// Gather along an axis: x viewed as [outer, len, inner], indices (int64, already validated to
/// lie in [-len, len)), y = [outer, n_indices, inner].
void gather(int64_t outer, int64_t len, int64_t inner, const int64_t* indices, int64_t n_indices, size_t esize,
            const void* x, void* y);

/// Where with numpy broadcasting; shapes padded to the output rank. cond is bytes (bool).
void where(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& c_shape, const uint8_t* cond,
           const std::vector<int64_t>& a_shape, const void* a, const std::vector<int64_t>& b_shape, const void* b,
           size_t esize, void* y);

/// Element type codes for cast (ONNX TensorProto): 1 float, 2 uint8, 3 int8, 6 int32, 7 int64, 9 bool.
void cast(int64_t count, int from, const void* x, int to, void* y);

}  // namespace fusert::cpu
