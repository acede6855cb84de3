// The parameter structs of the anchor and data-movement kernels every backend shares (the CPU
// kernels, cuDNN/cuBLASLt calls and generated CUDA kernels take the same ones), and two pure
// index helpers on them. Shapes are ONNX's (NCHW, row-major); sizes in elements.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fusert::kern {

/// Y[M,N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (ONNX Gemm, opset 13). A is [M,K]
/// (or [K,M] when trans_a), B is [K,N] (or [N,K] when trans_b), row-major. C (nullable) is
/// unidirectionally broadcast to [M,N]: c_rows is 1 or M, c_cols is 1 or N.
struct GemmParams {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 1.f;
  int64_t c_rows = 0, c_cols = 0;  // shape of C after padding to rank 2 ([N] -> [1,N])
};

/// Batched MatMul (numpy semantics, ONNX MatMul): Y[b] = A[b'] * B[b''] with [M,K] x [K,N].
/// a_batch_index[i] / b_batch_index[i] give the broadcast source matrix of output batch i.
struct MatMulParams {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::vector<int64_t> a_batch_index, b_batch_index;  // size batch; empty = identity
};

/// How an operand's batch index maps output batch b to an operand matrix: all zero (kShared:
/// one matrix for every batch; checked first, so batch 1 is kShared), the identity (kPerBatch:
/// 0, 1, 2, ...; an empty index too), or anything else (kIrregular). The library GEMMs
/// (cuBLASLt strided batches, oneDNN matmul broadcast) take only the first two.
enum class BatchPattern { kShared, kPerBatch, kIrregular };
BatchPattern batch_pattern(const std::vector<int64_t>& index);

/// 2-D convolution (ONNX Conv), NCHW input [N,C,H,W], weight [M, C/group, KH, KW], output
/// [N,M,OH,OW]; pads explicit (auto_pad already resolved).
struct ConvParams {
  int64_t n = 1, c = 0, h = 0, w = 0;  // input
  int64_t m = 0, kh = 1, kw = 1;       // output channels, kernel
  int64_t oh = 0, ow = 0;              // output spatial
  int64_t stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t group = 1;
};

/// 2-D ConvTranspose (ONNX), NCHW: x [N, C, H, W], w [C, M/group, KH, KW], y [N, M, OH, OW];
/// strides sh, sw, dilations dh, dw, top/left pads pt, pl.
struct ConvTransposeParams {
  int64_t n, c, h, w, m, oh, ow, kh, kw, group, sh, sw, dh, dw, pt, pl;
};

/// One axis of an ONNX Resize as a separable sampler: for each output coordinate `taps` source
/// indices and weights (1 tap for nearest, 2 for linear), from the coordinate transformation.
struct ResizeAxis {
  int taps = 1;
  std::vector<int64_t> index;  ///< [out_len * taps]
  std::vector<float> weight;   ///< [out_len * taps]
};
/// True when the axis maps every output coordinate o to source o with weight 1 (a resize that
/// leaves the axis as it is).
bool resize_axis_is_identity(const ResizeAxis& a, int64_t len);

/// Multi-head attention's layout (softmax(scale * Q K^T + mask) V per batch and head): Q, K, V
/// token-major [B * S, row_stride] from column offsets q_col + h*D; an additive mask indexed
/// mask[b * mask_b_stride + i * mask_i_stride + j] (strides 0 broadcast).
struct AttentionParams {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0;  ///< row strides (elements)
  int64_t q_col = 0, k_col = 0, v_col = 0;           ///< column offsets of head 0
  float scale = 1.f;
  int64_t mask_b_stride = 0, mask_i_stride = 0;
};

}  // namespace fusert::kern
