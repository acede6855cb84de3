// Grouped GEMM anchor: same-shape GEMMs on different buffers in one cuBLAS launch
// (cublasGemmBatchedEx with device arrays of pointers; cuBLAS API reference, "cublasGemmBatchedEx").
#pragma once

#include <string>

#include "kernels/cuda/context.h"

namespace fusert::cuda {

/// Enqueues y_i [M, N] = a_i [M, K] * w_i^T for i < batch, row-major fp32, with w_i [N, K]
/// (PyTorch Linear layout). `a`, `w`, `y` are DEVICE arrays of `batch` device pointers. Row-major
/// is the column-major product y^T = w a^T (transa = T on w, lda = K; a untransposed, ldb = K;
/// ldc = N). TF32 follows ctx.tf32. Uses the context's workspace. Errors name `what`.
Status gemm_batched_nt(Context& ctx, int64_t m, int64_t n, int64_t k, const float* const* a, const float* const* w,
                       float* const* y, int batch, const std::string& what);

}  // namespace fusert::cuda
