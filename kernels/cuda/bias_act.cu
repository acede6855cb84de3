// The GEMM epilogue as a kernel of its own (kernels/cuda/bias_act.cuh): one element per thread, a
// grid-stride loop, 64-bit indices.
#include <cuda_runtime.h>

#include "kernels/cuda/bias_act.cuh"
#include "kernels/cuda/grid.cuh"

namespace fusert::cuda {

namespace {

__global__ void bias_act_kernel(int64_t numel, int64_t cols, const float* __restrict__ bias, int act,
                                float* __restrict__ d) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < numel; i += int64_t{gridDim.x} * blockDim.x) {
    float v = d[i] + (bias ? bias[i % cols] : 0.0f);
    if (act == static_cast<int>(BiasAct::kRelu)) {
      v = v < 0.0f ? 0.0f : v;  // a NaN stays
    } else if (act == static_cast<int>(BiasAct::kGeluTanh)) {
      v = 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    }
    d[i] = v;
  }
}

}  // namespace

cudaError_t bias_act(int64_t rows, int64_t cols, const float* bias, BiasAct act, float* d, cudaStream_t stream) {
  if (rows < 0 || cols < 0 || (rows * cols > 0 && !d)) return cudaErrorInvalidValue;
  const int64_t numel = rows * cols;
  if (numel == 0) return cudaSuccess;
  bias_act_kernel<<<grid::blocks_for(numel), grid::kThreads, 0, stream>>>(numel, cols, bias, static_cast<int>(act), d);
  return cudaGetLastError();
}

}  // namespace fusert::cuda
