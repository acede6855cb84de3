// Comparisons and logic on the device (kernels/cuda/logic.cuh): one output element per thread, a
// grid-stride loop, 64-bit indices, the operands' offsets from their broadcast strides.
#include <cuda_runtime.h>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/layout.cuh"
#include "kernels/cuda/logic.cuh"

namespace fusert::cuda {

namespace {

using grid::blocks_for;
using grid::kThreads;

struct CompareArgs {
  int rank, op;
  int64_t numel;
  int64_t shape[kMaxCopyRank], a_strides[kMaxCopyRank], b_strides[kMaxCopyRank];
};

template <typename T>
__device__ bool apply(int op, T a, T b) {
  switch (static_cast<LogicOp>(op)) {
    case LogicOp::kEqual:
      return a == b;
    case LogicOp::kLess:
      return a < b;
    case LogicOp::kGreater:
      return a > b;
    case LogicOp::kLessOrEqual:
      return a <= b;
    case LogicOp::kGreaterOrEqual:
      return a >= b;
    case LogicOp::kAnd:
      return a && b;
    case LogicOp::kOr:
      return a || b;
    default:  // kXor
      return (a != T(0)) != (b != T(0));
  }
}

template <typename T>
__global__ void compare_kernel(CompareArgs p, const T* __restrict__ a, const T* __restrict__ b,
                               uint8_t* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < p.numel; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = i, ai = 0, bi = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % p.shape[d];
      rem /= p.shape[d];
      ai += idx * p.a_strides[d];
      bi += idx * p.b_strides[d];
    }
    y[i] = apply(p.op, a[ai], b[bi]) ? 1 : 0;
  }
}

__global__ void not_kernel(int64_t count, const uint8_t* __restrict__ x, uint8_t* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    y[i] = x[i] ? 0 : 1;
}

template <typename T>
cudaError_t launch(const CompareArgs& p, const void* a, const void* b, uint8_t* y, cudaStream_t stream) {
  compare_kernel<T>
      <<<blocks_for(p.numel), kThreads, 0, stream>>>(p, static_cast<const T*>(a), static_cast<const T*>(b), y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t compare(int rank, const int64_t* out_shape, LogicOp op, LogicType t, const void* a,
                    const int64_t* a_strides, const void* b, const int64_t* b_strides, uint8_t* y,
                    cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  CompareArgs p{};
  p.rank = rank;
  p.op = static_cast<int>(op);
  p.numel = 1;
  for (int d = 0; d < rank; ++d) {
    p.shape[d] = out_shape[d];
    p.a_strides[d] = a_strides[d];
    p.b_strides[d] = b_strides[d];
    p.numel *= out_shape[d];
  }
  if (p.numel == 0) return cudaSuccess;
  switch (t) {
    case LogicType::kF32:
      return launch<float>(p, a, b, y, stream);
    case LogicType::kI32:
      return launch<int32_t>(p, a, b, y, stream);
    case LogicType::kI64:
      return launch<int64_t>(p, a, b, y, stream);
    case LogicType::kBool:
      return launch<uint8_t>(p, a, b, y, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t logical_not(int64_t count, const uint8_t* x, uint8_t* y, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  not_kernel<<<blocks_for(count), kThreads, 0, stream>>>(count, x, y);
  return cudaGetLastError();
}

}  // namespace fusert::cuda
