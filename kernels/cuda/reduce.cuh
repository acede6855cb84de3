// Reductions over the middle axis of an [outer, len, inner] view that cuBLASLt's ones-GEMM does not
// cover (kernels/cuda/reduce.cu, compiled by nvcc): ReduceMax/Min, Prod, LogSumExp, L1, L2,
// SumSquare, LogSum, ArgMax/ArgMin, LRN (a sum over neighbouring channels) and CumSum (a scan). One thread per output,
// in the CPU kernels' arithmetic (kernels/cpu/sequence_kernels.h: double accumulation, the element map in f32, NaN
// rules). All enqueue on `stream` and return the launch status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fusert::cuda {

struct ReduceKind {
  enum Pre { kNone, kAbs, kSquare } pre = kNone;  ///< each element first, in f32
  enum Combine { kSum, kProd, kLogSumExp, kMax, kMin } combine = kSum;
  enum Post { kKeep, kSqrt, kLog } post = kKeep;  ///< each result last, in f32
};

/// y[o, i] = post(combine over l of pre(x[o, l, i])); max/min: the first NaN wins, an empty window
/// gives -inf / +inf; LogSumExp: m + log(sum exp(x - m)) with m the maximum (a NaN or an infinite m
/// returned as is); sums and products in double.
cudaError_t reduce_axis(int64_t outer, int64_t len, int64_t inner, const ReduceKind& k, const float* x, float* y,
                        cudaStream_t stream);

/// ArgMax (ArgMin with `min`) over the middle axis: the first extreme index (the last with `last`
/// on ties); a NaN counts as the extreme (numpy). y is int64 [outer, inner].
cudaError_t arg_extreme(int64_t outer, int64_t len, int64_t inner, bool min, bool last, const float* x, int64_t* y,
                        cudaStream_t stream);

/// ONNX CumSum along the middle axis of an [outer, len, inner] view (cpu::cumsum's arithmetic: f32
/// summed in double, int32 / int64 in unsigned arithmetic, wrapping), `exclusive` (each y the sum
/// before it) and `reverse` (from the end).
enum class ScanType { kF32, kI32, kI64 };
cudaError_t cumsum(int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, ScanType t, const void* x,
                   void* y, cudaStream_t stream);

/// ONNX LRN across channels (cpu::lrn's arithmetic): x, y [n, c, s]; y = x / (bias + alpha / size *
/// sum of x^2 over channels c - (size-1)/2 .. c + size/2 inside [0, c))^beta, the sum and the power in
/// double.
cudaError_t lrn(int64_t n, int64_t c, int64_t s, int64_t size, float alpha, float beta, float bias, const float* x,
                float* y, cudaStream_t stream);

}  // namespace fusert::cuda
