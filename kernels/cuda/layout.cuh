// Data-movement and dtype kernels (kernels/cuda/layout.cu, compiled by nvcc): strided N-d copy
// (Transpose, Slice, Expand, one input of Concat, one output of Split), Gather along an axis
// with a run-time index range check, Cast between f32/i64/i32/bool, Where. All enqueue on
// `stream` and return the launch status; rank <= 6.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusert::cuda {

constexpr int kMaxCopyRank = 6;

/// y[out_offset + sum_d i_d * out_strides[d]] = x[in_offset + sum_d i_d * in_strides[d]] for every
/// index i of `shape` (rank dims); `elem_bytes` is 1, 4 or 8. Transpose: in_strides permuted;
/// Slice: in_strides scaled by steps, in_offset at the starts; Expand: in_strides 0 where
/// broadcast; Concat/Split: out/in offsets along the axis with the full tensor's strides.
cudaError_t strided_copy(int rank, const int64_t* shape, const void* x, int64_t in_offset, const int64_t* in_strides,
                         void* y, int64_t out_offset, const int64_t* out_strides, int elem_bytes, cudaStream_t stream);

/// ONNX Gather: y[outer, j, inner] = x[outer, idx[j] (negative from the end), inner] with x
/// [outer, axis_len, inner] (elem_bytes 4 or 8) and `count` indices (i64 when idx_i64 else i32).
/// An index outside [-axis_len, axis_len) sets *bad_index (device int, may be null) to 1 and
/// writes 0 for that row.
cudaError_t gather(int64_t outer, int64_t axis_len, int64_t inner, const void* x, int elem_bytes, const void* idx,
                   bool idx_i64, int64_t count, void* y, int* bad_index, cudaStream_t stream);

enum class CastType { kF32, kI64, kI32, kBool };
/// y = (to)x elementwise (bool: x != 0).
cudaError_t cast(int64_t count, const void* x, CastType from, void* y, CastType to, cudaStream_t stream);

/// y = cond ? a : b with numpy broadcasting of f32 a, b and bool cond over out_shape (strides
/// per operand over the output dims, 0 = broadcast).
cudaError_t where(int rank, const int64_t* out_shape, const uint8_t* cond, const int64_t* c_strides, const float* a,
                  const int64_t* a_strides, const float* b, const int64_t* b_strides, float* y, cudaStream_t stream);

}  // namespace fusert::cuda
