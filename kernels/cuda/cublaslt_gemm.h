// GEMM anchor on cuBLASLt with fused epilogues, row-major fp32:
//   D[b] = act(alpha * op(A[b]) op(B[b]) + bias + beta * C[b])   for b in [0, batch)
// with A [M, K] (or [K, M] when trans_a), B [K, N] (or [N, K] when trans_b), bias [N] per
// output column, C [M, N] (the residual operand) and D [M, N]. Row-major is computed as the
// column-major product D^T = op(B)^T op(A)^T, so cuBLASLt's bias (per row of the column-major
// D) is our per-column bias. Epilogues: CUBLASLT_EPILOGUE_DEFAULT / BIAS / RELU / RELU_BIAS /
// GELU / GELU_BIAS (cuBLASLt's GELU is the tanh approximation: used only for Gelu with
// approximate="tanh"). TF32 follows Context::tf32 (CUBLAS_COMPUTE_32F_FAST_TF32 vs
// CUBLAS_COMPUTE_32F). Algorithm: the first result of cublasLtMatmulAlgoGetHeuristic.
#pragma once

#include <memory>
#include <string>

#include "kernels/cuda/context.h"

namespace fusert::cuda {

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;  ///< elements between batches (0 = broadcast)
  float alpha = 1.f, beta = 0.f;                                   ///< beta != 0 reads C
  bool bias = false;
  enum Act { kNone, kRelu, kGeluTanh } act = kNone;
};

class LtGemm {
 public:
  /// Builds the matmul and layout descriptors and picks an algorithm that fits the context's
  /// workspace. Where cuBLASLt has no algorithm for the epilogue (bias, ReLU, GELU) at this
  /// shape, the GEMM runs without it and one kernel (bias_act.cuh) adds the bias and applies the
  /// activation after it, with a note on stderr (counted by lt_epilogue_fallbacks()). Errors name
  /// `what`.
  static Result<std::unique_ptr<LtGemm>> create(Context& ctx, const GemmDesc& d, const std::string& what);
  /// True when the epilogue runs as a kernel of its own (create's fallback).
  bool epilogue_apart() const { return epilogue_apart_; }
  ~LtGemm();
  /// Enqueues on ctx.stream(). bias is [N] (or null when !d.bias); c may be null when beta == 0;
  /// d may equal c (in place).
  Status run(Context& ctx, const float* a, const float* b, const float* bias, const float* c, float* d) const;

 private:
  LtGemm() = default;
  static Result<std::unique_ptr<LtGemm>> create_exact(Context& ctx, const GemmDesc& d, const std::string& what);
  GemmDesc d_;                   ///< what cuBLASLt computes (without the epilogue when it runs apart)
  bool epilogue_apart_ = false;  ///< the bias and activation of `full_` run as bias_act after it
  GemmDesc full_;                ///< the GEMM as asked
  std::string what_;
  cublasLtMatmulDesc_t op_ = nullptr;
  /// Layouts of our (row-major) A, B, C, D; cuBLASLt's "A" operand is our B and its "B" our A.
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};            ///< for pointers that are all 16-byte aligned
  cublasLtMatmulAlgo_t algo_unaligned_{};  ///< for any 4-byte aligned pointers
  size_t workspace_bytes_ = 0;
};

/// GEMMs of this process whose epilogue cuBLASLt had no algorithm for (LtGemm::create's fallback).
int64_t lt_epilogue_fallbacks();

}  // namespace fusert::cuda
