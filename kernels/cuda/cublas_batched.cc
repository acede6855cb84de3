// Pointer-array batched GEMM through cuBLAS (see cublas_batched.h).
#include "kernels/cuda/cublas_batched.h"

#include <limits>

namespace fusert::cuda {

Status gemm_batched_nt(Context& ctx, int64_t m, int64_t n, int64_t k, const float* const* a, const float* const* w,
                       float* const* y, int batch, const std::string& what) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (m > kMax || n > kMax || k > kMax)
    return error(StatusCode::kUnsupported) << what << ": GEMM dimensions exceed int";
  // The workspace may have been regrown since the last call; cuBLAS must use it (never its own
  // allocation) so the call can be captured into a CUDA Graph.
  CUBLAS_CHECK(cublasSetWorkspace(ctx.blas(), ctx.workspace(), ctx.workspace_bytes()), what);
  const float one = 1.f, zero = 0.f;
  const cublasComputeType_t compute = ctx.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  CUBLAS_CHECK(
      cublasGemmBatchedEx(ctx.blas(), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, reinterpret_cast<const void* const*>(w),
                          CUDA_R_32F, K, reinterpret_cast<const void* const*>(a), CUDA_R_32F, K, &zero,
                          reinterpret_cast<void* const*>(y), CUDA_R_32F, N, batch, compute, CUBLAS_GEMM_DEFAULT),
      what);
  return Status();
}

}  // namespace fusert::cuda
