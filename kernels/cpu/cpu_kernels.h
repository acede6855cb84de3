// CPU reference kernels (Eigen + OpenMP). They are the oracle for every other backend.
// Kernels see raw NCHW/row-major float32 buffers and parameter structs only, never the graph.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/params.h"

namespace fusert::cpu {

// The shared parameter structs (kernels/common/params.h), by their CPU names.
using kern::AttentionParams;
using kern::batch_pattern;
using kern::BatchPattern;
using kern::ConvParams;
using kern::ConvTransposeParams;
using kern::GemmParams;
using kern::MatMulParams;
using kern::ResizeAxis;

/// The CPU kernels' thread count for the calling thread while alive; the previous count is
/// restored on destruction. The OpenMP teams the kernels fork (num_threads clauses) and Eigen's
/// GEMM threading (which follows the calling thread's OpenMP nthreads ICV unless the
/// application called Eigen::setNbThreads) use it. Nothing process-wide changes: another
/// thread, or another session on another thread, keeps its own count. n <= 0 = all cores
/// (OMP_NUM_THREADS when set). Not copyable; nest freely (innermost wins).
class ThreadScope {
 public:
  explicit ThreadScope(int n);
  ~ThreadScope();
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int prev_ = 0, prev_omp_ = 0;
};
/// The calling thread's count: the innermost ThreadScope's, else OpenMP's default.
int num_threads();

/// For one inference (kernels/cpu/pinning.cc): when `n` > 1 equals the number of cores the
/// calling thread may run on, pins OpenMP team thread t to the t-th of those cores and the calling
/// thread to the first, restoring the calling thread's own mask on exit. The team threads (the
/// calling thread's OpenMP pool) stay pinned after it, re-pinned when the caller's cores change.
/// No-op otherwise, and when the user binds threads (OMP_PROC_BIND, OMP_PLACES,
/// GOMP_CPU_AFFINITY) or another run in the process is pinned at the time.
class CorePinScope {
 public:
  explicit CorePinScope(int n);
  ~CorePinScope();
  CorePinScope(const CorePinScope&) = delete;
  CorePinScope& operator=(const CorePinScope&) = delete;

 private:
  std::vector<int> prev_;  // the calling thread's cores before, when it was pinned
};

// ---------------------------------------------------------------- GEMM
/// Y[M,N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (ONNX Gemm, opset 13).
/// A is [M,K] (or [K,M] when trans_a), B is [K,N] (or [N,K] when trans_b), row-major.
/// C (nullable) is unidirectionally broadcast to [M,N]: c_rows is 1 or M, c_cols is 1 or N.
void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y);

/// Batched MatMul (numpy semantics, ONNX MatMul): Y[b] = A[b'] * B[b''] with [M,K] x [K,N].
/// a_batch_index[i] / b_batch_index[i] give the broadcast source matrix of output batch i.
void matmul(const MatMulParams& p, const float* a, const float* b, float* y);
// ---------------------------------------------------------------- Convolution
/// 2-D convolution, NCHW input [N,C,H,W], weight [M, C/group, KH, KW], bias [M] (nullable),
/// output [N,M,OH,OW]. Pads are explicit (auto_pad already resolved). ONNX Conv semantics.
/// Uses im2col + GEMM per group; group == C == M takes a direct depthwise path.
void conv2d(const ConvParams& p, const float* x, const float* w, const float* bias, float* y);

/// BatchNormalization (inference): y = scale * (x - mean) / sqrt(var + epsilon) + bias, per
/// channel of an [N,C,spatial...] tensor (spatial = product of trailing dims, may be 1).
void batch_norm(int64_t n, int64_t c, int64_t spatial, const float* x, const float* scale, const float* bias,
                const float* mean, const float* var, float epsilon, float* y);
/// InstanceNormalization: y = scale * (x - mean) / sqrt(var + epsilon) + bias per channel, the
/// mean and (population) variance of each [spatial] plane of an [N,C,spatial...] tensor; x may
/// alias y.
void instance_norm(int64_t n, int64_t c, int64_t spatial, const float* x, const float* scale, const float* bias,
                   float epsilon, float* y);

// ---------------------------------------------------------------- Pooling
/// MaxPool / AveragePool over NCHW (ONNX semantics; pads explicit, ceil_mode resolved into oh/ow).
/// AveragePool: count_include_pad selects the divisor (window clipped to padded or real input).
struct PoolParams {
  int64_t n = 1, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool count_include_pad = false;
};
void max_pool2d(const PoolParams& p, const float* x, float* y);
/// max_pool2d in NHWC: x [N, H, W, C] -> y [N, OH, OW, C], the same values (NaN in a window wins).
void max_pool2d_nhwc(const PoolParams& p, const float* x, float* y);
/// max_pool2d of 8-bit values (a QDQ model's MaxPool, graph/passes/qdq_maxpool_rule.cc): int8
/// (`is_signed`) or uint8, NCHW or (`nhwc`) NHWC; a window of padding alone gives the type's minimum.
void max_pool2d_8bit(const PoolParams& p, bool is_signed, bool nhwc, const void* x, void* y);
void avg_pool2d(const PoolParams& p, const float* x, float* y);
/// GlobalAveragePool: [N,C,spatial] -> [N,C].
void global_avg_pool(int64_t n, int64_t c, int64_t spatial, const float* x, float* y);

// ---------------------------------------------------------------- Elementwise
// Unary elementwise ops (activations): cpu::unary in kernels/cpu/fused_kernels.h, one formula
// per row of graph/base/unary_ops.def.

enum class BinaryKind { kAdd, kSub, kMul, kDiv, kPow };
/// Numpy-broadcast binary op. Shapes are already padded to the output rank; a_shape[d] and
/// b_shape[d] are each 1 or out_shape[d].
void binary(BinaryKind kind, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& a_shape, const float* a,
            const std::vector<int64_t>& b_shape, const float* b, float* y);

// ---------------------------------------------------------------- Data movement
/// Softmax over the last axis of an [outer, axis_len] view (ONNX Softmax opset 13 after the
/// axis is moved last by flattening: outer = product of dims before axis, inner dims must be 1;
/// for an inner size > 1 pass inner). Max-subtracted; a row of all -inf gives zeros, not NaN.
void softmax(int64_t outer, int64_t axis_len, int64_t inner, const float* x, float* y);
/// LogSoftmax over the same view: y = (x - max) - log(sum(exp(x - max))), the sum in double.
/// A NaN, a +inf or an all -inf row gives NaN (as ONNX's reference); x may alias y.
void log_softmax(int64_t outer, int64_t axis_len, int64_t inner, const float* x, float* y);

/// Transpose of a tensor of rank <= 6: y has dims in_shape[perm[i]].
void transpose(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm, const float* x, float* y);

/// Concat along an axis: each input viewed as [outer, len_i * inner]; y is [outer, sum(len) * inner].
void concat(int64_t outer, int64_t inner, const std::vector<int64_t>& lens, const std::vector<const float*>& xs,
            float* y);

/// Concat along channels of 4-D tensors [N, C_i, H, W] into y [N, sum C_i, H, W], each input and
/// the output in its own layout of the size of NCHW, as runtime/execution_plan.h NativeLayout
/// names it: empty for NCHW; 4 element strides over (N, C, H, W) of a dense layout (NHWC:
/// C*H*W, 1, W*C, C); or 5, the strides over (N, C/b, H, W) and the channel block b (oneDNN's
/// unpadded nChw8c: channel c at (c / b) * s[1] + c % b). nhw = {N, H, W}; cs[i] = C_i.
/// Runs of whole pixels or blocks are copied with memcpy when input and output agree.
void concat_channels(const int64_t nhw[3], const std::vector<int64_t>& cs, const std::vector<const float*>& xs,
                     const std::vector<std::vector<int64_t>>& x_layouts, const std::vector<int64_t>& y_layout,
                     float* y);

}  // namespace fusert::cpu
