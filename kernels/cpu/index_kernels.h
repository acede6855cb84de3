// CPU kernels for ONNX's element-indexed ops: GatherElements, ScatterElements, GatherND,
// ScatterND, OneHot, TopK, Trilu and CumSum.
// Each is an opaque op of the op table (one kernel, never inside a fusion group). Tensors are
// row-major; an axis is seen as the middle dim of an [outer, len, inner] view. Element types are
// given by size in bytes where the op only moves elements (any dtype), by ElemType where it
// computes. Like every kernel here they see buffers and parameters only, never the graph;
// indices were range-checked by the step before the kernel runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/base/tensor.h"
#include "kernels/cpu/import_kernels.h"

namespace fusert::cpu {

/// [outer, len, inner] view of one axis of a tensor: outer = product of the dims before it,
/// inner = product of those after.
struct AxisView {
  int64_t outer = 1, len = 1, inner = 1;
};
AxisView axis_view_of(const Shape& s, int64_t axis);

/// ONNX GatherElements: y[o, l, i] = x[o, idx[o, l, i] (negative counts from the end), i] where
/// `iv` views the indices (and y) and `xv` views x around the same axis; x and the indices have
/// the same rank and, off the axis, the indices' dims must equal x's (ONNX allows smaller ones
/// there: shape inference refuses those). `esize` bytes per element; indices i64 or i32.
void gather_elements(const AxisView& xv, const AxisView& iv, size_t esize, const void* x, const void* idx, bool idx_i32,
                     void* y);

/// Reduction of ONNX ScatterElements.
enum class ScatterReduce { kNone, kAdd, kMul, kMax, kMin };

/// ONNX ScatterElements: y = x, then y[o, idx[o, l, i], i] (op)= upd[o, l, i] in index order
/// (`uv` views the indices and updates, `xv` x and y). kNone copies any element type (`esize`
/// bytes); the reductions are f32 (`esize` 4).
void scatter_elements(const AxisView& xv, const AxisView& uv, size_t esize, ScatterReduce op, const void* x,
                      const void* idx, bool idx_i32, const void* upd, void* y);

/// ONNX TopK along the middle axis of `v`: the k largest (or smallest) elements of each line,
/// in order, into values (`vals`, x's element type) and their indices (`idx`); both views are
/// [outer, k, inner]. Equal elements keep the lower index first; a NaN counts as the largest.
void top_k(const AxisView& v, int64_t k, bool largest, ElemType t, const void* x, void* vals, int64_t* idx);

/// The shared view of ONNX GatherND / ScatterND: `count` index tuples of `m` i64 values each
/// (per batch of `batches`), addressing slices of `slice` elements in a data block of `dims`
/// (the m indexed dims of the data after its batch dims; `dims` has m entries).
struct NdView {
  int64_t batches = 1, count = 0, m = 0, slice = 1;
  std::vector<int64_t> dims;
};

/// ONNX GatherND: y[b, t, :] = x[b, idx[b, t, :], :] (negative indices from the end); `esize`
/// bytes per element.
void gather_nd(const NdView& v, size_t esize, const void* x, const int64_t* idx, void* y);

/// ONNX ScatterND (batch_dims 0): y = x, then y[idx[t, :], :] (op)= upd[t, :] in index order.
/// kNone copies any element type; the reductions are f32 (`esize` 4). x may alias y.
void scatter_nd(const NdView& v, size_t esize, ScatterReduce op, const void* x, int64_t x_elems, const int64_t* idx,
                const void* upd, void* y);

/// ONNX OneHot: y[o, d, i] = on where idx[o, i] (read as `it`, truncated toward zero, negative
/// from the end) equals d, else off; d < depth. `on` / `off` point at one element of `esize` bytes.
void one_hot(int64_t outer, int64_t depth, int64_t inner, ElemType it, const void* idx, size_t esize, const void* off,
             const void* on, void* y);

/// ONNX Trilu on `batch` matrices of [rows, cols]: y = x where (col - row) >= k (upper) or
/// (col - row) <= k (lower), 0 elsewhere; `esize` bytes per element.
void trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k, bool upper, size_t esize, const void* x, void* y);

/// ONNX CumSum along the middle axis of `v`: y[o, l, i] = sum of x[o, m, i] for m <= l (m < l
/// with `exclusive`; m >= l, m > l with `reverse`). f32 accumulates in double; i32, i64 wrap.
void cumsum(const AxisView& v, bool exclusive, bool reverse, ElemType t, const void* x, void* y);

}  // namespace fusert::cpu
