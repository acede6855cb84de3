// Fused CPU kernels: one launch per fusion group. Anchors (conv, GEMM) apply an elementwise
// epilogue per output tile while the tile is in cache; elementwise chains run as one chunked
// pass; horizontal groups run one GEMM on concatenated weights; cross groups compute both
// branches per output tile; attention runs softmax(Q K^T * scale + mask) V per head.
// Kernels see buffers and parameter structs only, never the graph.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/epilogue.h"
#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {

// The shared epilogue vocabulary (kernels/common/epilogue.h), by its CPU names.
using kern::ElementwiseInstr;
using kern::ElementwiseProgram;
using kern::Epilogue;
using kern::EpilogueStep;
using kern::EpOp;
using kern::EpTail;
using kern::is_tensor_op;
using kern::OperandMode;
using kern::RowNorm;

// ---------------------------------------------------------------- Epilogues
/// Unfused unary op: y[i] = op(x[i]; a, b) for i in [0, count), the formula of
/// graph/base/unary_ops.def (the same as the fused epilogue step), split across the OpenMP team
/// for large counts. `op` must not be a tensor op. In-place (x == y) allowed.
void unary(EpOp op, float a, float b, int64_t count, const float* x, float* y);

/// Applies `ep.steps` to a contiguous run of `count` values starting at logical flat output
/// index `flat0`, with conv/gemm channel index rules given by (channels, spatial): for conv the
/// output is [N, channels, spatial]; for gemm pass channels = N columns, spatial = 1 and rows
/// via flat index. Exposed for tests and for other fused kernels.
void apply_epilogue_steps(const std::vector<EpilogueStep>& steps, const std::vector<int64_t>& out_shape, int64_t flat0,
                          int64_t count, int64_t channels, int64_t spatial, float* v);

// ---------------------------------------------------------------- Anchors with epilogues
/// conv2d (as cpu::conv2d) + bias + epilogue per output-channel block while in cache.
/// y is [N, M, OH, OW], or [N, M] when ep.tail == kGlobalAvgPool.
/// y must not alias x or w. It may alias an epilogue operand (a residual whose buffer is reused
/// for the output): tiles are then finished in scratch and copied, so the operand is read
/// before it is overwritten. The same holds for every conv and gemm kernel below.
void conv2d_fused(const ConvParams& p, const float* x, const float* w, const float* bias, const Epilogue& ep, float* y);

/// Cross group with two convolutions whose outputs are added (a residual join with a conv on
/// the shortcut, e.g. ResNet's conv3 + downsample): y = ep(conv(p1, x1, w1) + conv(p2, x2, w2) + bias)
/// computed per output tile (both GEMMs accumulate into the same tile). p1 and p2 must have the
/// same n, m, oh, ow; bias ([M], nullable) is the sum of both biases.
void conv2d_sum_fused(const ConvParams& p1, const float* x1, const float* w1, const ConvParams& p2, const float* x2,
                      const float* w2, const float* bias, const Epilogue& ep, float* y);

/// Cross group with two branches on the same input balanced into one conv with stacked output
/// channels (p.m = 2 * M; w = [2M, C/g, KH, KW] with the cheaper kernel zero-padded; bias [2M]):
/// per tile, branch A = channels [0, M), branch B = [M, 2M); a = ep_a(A), b = ep_b(B);
/// merge_add ? y = ep_merge(a + b) [N, M, OH, OW] : y = concat(a, b) [N, 2M, OH, OW] (ep_merge
/// applied to both halves).
/// ep_a and ep_b index their own branch as [N, M, OH, OW] (channels M) and carry no tail;
/// ep_merge indexes the output ([N, M, ...] for add, [N, 2M, ...] for concat) and may carry
/// kGlobalAvgPool. Grouped stacked convs are allowed (blocks never cross a group).
void conv2d_branch_merge(const ConvParams& p, const float* x, const float* w, const float* bias, const Epilogue& ep_a,
                         const Epilogue& ep_b, bool merge_add, const Epilogue& ep_merge, float* y);

/// gemm (as cpu::gemm, C = bias broadcast as in GemmParams) + epilogue per row block.
void gemm_fused(const GemmParams& p, const float* a, const float* b, const float* c, const Epilogue& ep, float* y);

/// Batched MatMul (as cpu::matmul) + epilogue (ep.out_shape = the full output shape).
/// kPerChannel indexes column n; kPerRow the flattened row b * M + m; kLayerNorm is allowed.
void matmul_fused(const MatMulParams& p, const float* a, const float* b, const Epilogue& ep, float* y);

/// Horizontal group: one GEMM of A [M, K] with concatenated weights w_cat [sum(n_i), K]
/// (PyTorch Linear layout, i.e. transB) and biases b_cat [sum(n_i)] (nullable); member i
/// receives columns [off_i, off_i + n_i) into its own output y_i [M, n_i] after its own
/// epilogue (e.g. LayerNorm per member). Rows are processed in blocks; the scatter happens
/// while the block is in cache.
struct HorizontalMember {
  int64_t n = 0;
  Epilogue ep;  ///< ep.out_shape = {M, n}; kPerChannel operands index within the member
  float* y = nullptr;
};
void gemm_horizontal(int64_t m, int64_t k, const float* a, const float* w_cat, const float* b_cat,
                     std::vector<HorizontalMember>& members);

/// Horizontal group of same-shape Gemms on DIFFERENT inputs (grouped/batched launch):
/// y_i = ep_i(a_i [M, K] * w_i^T + b_i) for i in members, one parallel loop over (member, row block).
struct GroupedGemmMember {
  const float* a = nullptr;
  const float* w = nullptr;  ///< [N, K] (transB layout)
  const float* bias = nullptr;
  Epilogue ep;
  float* y = nullptr;
};
void gemm_grouped(int64_t m, int64_t n, int64_t k, std::vector<GroupedGemmMember>& members);

// ---------------------------------------------------------------- Elementwise programs
void run_elementwise_program(const ElementwiseProgram& prog, const std::vector<const float*>& inputs,
                             const std::vector<float*>& outputs);

// ---------------------------------------------------------------- Row-wise normalisations
/// Per row of an [outer, inner] view: x' = prologue(x) (epilogue steps with out_shape
/// {outer, inner}), then LayerNorm (scale/shift [inner], eps) or Softmax, then `post`.
/// Softmax: max-subtracted; a row of all -inf gives zeros, never NaN. x may equal y.
void norm_rows_fused(int64_t outer, int64_t inner, const float* x, const std::vector<EpilogueStep>& prologue,
                     RowNorm kind, const float* scale, const float* shift, float eps,
                     const std::vector<EpilogueStep>& post, float* y);

// ---------------------------------------------------------------- Attention
/// Multi-head scaled dot-product attention, one launch: for batch b, head h, query i:
///   y[b, i, h*D:(h+1)*D] = sum_j softmax_j(scale * q_i . k_j + mask[b, i, j]) * v_j
/// Q, K, V are read in token-major layout [B * S, row_stride] starting at column offsets
/// q_col + h*D (so Q/K/V may live in one concatenated QKV buffer); y is [B * S, H * D].
/// mask (nullable, additive) is indexed mask[b * mask_b_stride + i * mask_i_stride + j]
/// (strides 0 broadcast). Fully masked rows (all -inf) give zeros, never NaN.
void attention(const AttentionParams& p, const float* q, const float* k, const float* v, const float* mask, float* y);

}  // namespace fusert::cpu
