// Element-wise ops of several broadcast f32 inputs (kernels/cuda/nary.cuh): one output element per
// thread, a grid-stride loop, 64-bit indices.
#include <cuda_runtime.h>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/nary.cuh"

namespace fusert::cuda {

namespace {

using grid::blocks_for;
using grid::kThreads;

struct NaryArgs {
  int rank, op, n;
  int64_t numel;
  int64_t shape[kMaxCopyRank];
  int64_t strides[kMaxNaryInputs][kMaxCopyRank];
  const float* xs[kMaxNaryInputs];
};

__global__ void nary_kernel(NaryArgs p, float* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < p.numel; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t off[kMaxNaryInputs] = {};
    int64_t rem = i;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % p.shape[d];
      rem /= p.shape[d];
      for (int k = 0; k < p.n; ++k) off[k] += idx * p.strides[k][d];
    }
    float v = p.xs[0][off[0]];
    const NaryOp op = static_cast<NaryOp>(p.op);
    if (op == NaryOp::kPRelu) {
      y[i] = v < 0.0f ? p.xs[1][off[1]] * v : v;  // v < 0: a NaN takes the v branch
      continue;
    }
    for (int k = 1; k < p.n; ++k) {
      const float u = p.xs[k][off[k]];
      if (op == NaryOp::kSum || op == NaryOp::kMean) {
        v += u;
      } else if (!isnan(v)) {
        v = isnan(u) ? u : op == NaryOp::kMax ? (u > v ? u : v) : (u < v ? u : v);
      }
    }
    y[i] = op == NaryOp::kMean ? v * (1.0f / static_cast<float>(p.n)) : v;
  }
}

}  // namespace

cudaError_t nary(int rank, const int64_t* out_shape, NaryOp op, int n, const float* const* xs, const int64_t* strides,
                 float* y, cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank || n < 1 || n > kMaxNaryInputs || (op == NaryOp::kPRelu && n != 2))
    return cudaErrorInvalidValue;
  NaryArgs p{};
  p.rank = rank;
  p.op = static_cast<int>(op);
  p.n = n;
  p.numel = 1;
  for (int d = 0; d < rank; ++d) {
    p.shape[d] = out_shape[d];
    p.numel *= out_shape[d];
  }
  for (int k = 0; k < n; ++k) {
    p.xs[k] = xs[k];
    for (int d = 0; d < rank; ++d) p.strides[k][d] = strides[k * rank + d];
  }
  if (p.numel == 0) return cudaSuccess;
  nary_kernel<<<blocks_for(p.numel), kThreads, 0, stream>>>(p, y);
  return cudaGetLastError();
}

}  // namespace fusert::cuda
