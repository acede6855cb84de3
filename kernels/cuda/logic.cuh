// Comparisons and logic on the device (kernels/cuda/logic.cu, compiled by nvcc): ONNX Equal, Less,
// Greater, LessOrEqual, GreaterOrEqual (f32, i32, i64, bool operands), And, Or, Xor (bool) and Not,
// with numpy broadcasting; bool results of one byte (0 / 1), as the CPU's cpu::compare. Enqueue on
// `stream` and return the launch status; rank <= kMaxCopyRank.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusert::cuda {

enum class LogicOp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };
enum class LogicType { kF32, kI32, kI64, kBool };

/// y[i] = a[..] `op` b[..] over out_shape (rank dims); a_strides / b_strides in elements per output
/// dim, 0 where the operand broadcasts. And/Or/Xor read bytes as truth values (nonzero = true).
cudaError_t compare(int rank, const int64_t* out_shape, LogicOp op, LogicType t, const void* a,
                    const int64_t* a_strides, const void* b, const int64_t* b_strides, uint8_t* y, cudaStream_t stream);

/// y = !x over `count` bytes.
cudaError_t logical_not(int64_t count, const uint8_t* x, uint8_t* y, cudaStream_t stream);

}  // namespace fusert::cuda
