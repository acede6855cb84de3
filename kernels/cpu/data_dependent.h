// Host kernels of the data-dependent ops (graph/data_dependent.h): each computes its output and
// with it the output's size, which no shape function can know before. They run between the
// execution stages of a session (runtime/staged.h), on tensors, single-threaded: their work is
// small next to the stages around them (a detector's NonMaxSuppression over its candidates).
// Semantics are ONNX's (opset 11..21), checked against ONNX Runtime in tools/ort_cases.py.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/base/tensor.h"

namespace fusert::cpu {

/// ONNX NonZero: the indices of the non-zero elements of `x` (f32, i32, i64, bool; rank >= 1)
/// in row-major order, as i64 [rank, n].
Tensor non_zero(const Tensor& x);

struct NmsParams {
  int64_t max_per_class = 0;  ///< max_output_boxes_per_class (0 selects nothing)
  float iou_threshold = 0;    ///< a box is dropped when its IoU with a kept box is above this
  bool has_score_threshold = false;
  float score_threshold = 0;      ///< a candidate's score must be above this
  bool center_point_box = false;  ///< boxes are [x_center, y_center, w, h], else [y1, x1, y2, x2] (any two corners)
};

/// ONNX NonMaxSuppression: boxes f32 [B, N, 4], scores f32 [B, C, N] -> i64 [n, 3] of (batch,
/// class, box), per batch and class in order of decreasing score (equal scores: lower box first;
/// a NaN score, possible only without a score threshold, last).
/// A box of zero area or without overlap is never suppressed.
Tensor non_max_suppression(const Tensor& boxes, const Tensor& scores, const NmsParams& p);

/// ONNX Unique: the distinct elements of `x` (f32, i32, i64), or its distinct slices along
/// `axis` (`axis` < 0: x flattened), ascending (`sorted`; slices compared element by element)
/// or in order of first occurrence. NaNs are one value, after every number (numpy's unique;
/// ONNX leaves NaN open, ONNX Runtime merges it with its neighbours); -0 equals 0. y: x's
/// dtype, [n] or x's shape with n along axis; indices, inverse_indices, counts: i64 [n], [len], [n].
struct UniqueResult {
  Tensor y, indices, inverse, counts;
};
UniqueResult unique(const Tensor& x, int64_t axis, bool sorted);

/// ONNX Compress: the slices of `x` along `axis` (< 0: x flattened) whose entry in `condition`
/// (bool, 1-D, at most the axis' length; missing entries are false) is true.
Tensor compress(const Tensor& x, const Tensor& condition, int64_t axis);

/// ONNX Slice along one axis with start, end and step known at run time (ONNX's clamping: starts
/// into [0, d] (or [0, d - 1] for a negative step), ends into [0, d] (or [-1, d - 1]), negative
/// values from the end; step != 0, checked by the caller): x's shape with the slice's length along
/// `axis`.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step);

/// ONNX TopK with `k` known at run time (0 <= k <= x's dim `axis`, checked by the caller):
/// values (x's dtype) and i64 indices, x's shape with k along axis.
void top_k_tensor(const Tensor& x, int64_t axis, int64_t k, bool largest, Tensor* values, Tensor* indices);

}  // namespace fusert::cpu
