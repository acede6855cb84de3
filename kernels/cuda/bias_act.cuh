// The epilogue cuBLASLt fuses into a GEMM (bias per output column, then ReLU or tanh-GELU), as one
// launch of its own after a plain GEMM: the fallback where cuBLASLt has no algorithm for the
// epilogue at a shape (kernels/cuda/cublaslt_gemm.h). nvcc kernel in bias_act.cu; enqueue on
// `stream` and return the launch status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusert::cuda {

enum class BiasAct { kNone, kRelu, kGeluTanh };

/// d[r, c] = act(d[r, c] + bias[c]) over a row-major [rows, cols] matrix, in place; bias may be
/// null (no bias). ReLU is max(x, 0) keeping a NaN; tanh-GELU is
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), graph/base/unary_ops.def's GeluTanh.
cudaError_t bias_act(int64_t rows, int64_t cols, const float* bias, BiasAct act, float* d, cudaStream_t stream);

}  // namespace fusert::cuda
