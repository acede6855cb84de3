// Data-movement and dtype kernels (kernels/cuda/layout.cu, compiled by nvcc): strided N-d copy
// (Transpose, Slice, Expand, one input of Concat, one output of Split), Pad and Tile as one
// gather, Gather along an axis
// with a run-time index range check, Cast between f32/i64/i32/bool, Where, and Resize of the last
// two dims from sampling tables. All enqueue on `stream` and return the launch status; rank <= 6.
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

/// Pad (every mode) and Tile as one gather: y over `out_shape` (rank dims), each output index i_d
/// read from x [in_shape] at j_d = i_d - begin[d], mapped where it falls outside [0, in_shape[d]):
/// kConstant reads the one element at `value` (device memory) instead, kReflect mirrors without
/// repeating the edge (|begin|, end < in_shape), kEdge clamps, kWrap takes j mod in_shape (Tile:
/// begin 0). elem_bytes 1, 4 or 8.
enum class PadMode { kConstant, kReflect, kEdge, kWrap };
cudaError_t pad_map(int rank, const int64_t* out_shape, const int64_t* in_shape, const int64_t* begin, PadMode mode,
                    const void* value, const void* x, void* y, int elem_bytes, cudaStream_t stream);

/// ONNX Resize of the last two dims (cpu::resize_2d's arithmetic): x [outer, ih, iw] -> y [outer,
/// oh, ow], f32. Output row r reads `row_taps` source rows row_index[r * row_taps + t] (weights
/// row_weight[...]), output column o `col_taps` source columns the same way (1 tap nearest, 2
/// linear, 4 cubic): y = sum_t row_weight * (sum_k col_weight * x[row, col]), taps in order. The
/// four tables (runtime/lowering/resize.h) live in device memory.
struct ResizeTables {
  int row_taps = 1, col_taps = 1;
  const int64_t* row_index = nullptr;
  const float* row_weight = nullptr;
  const int64_t* col_index = nullptr;
  const float* col_weight = nullptr;
};
cudaError_t resize_2d(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const ResizeTables& t,
                      const float* x, float* y, cudaStream_t stream);

}  // namespace fusert::cuda
