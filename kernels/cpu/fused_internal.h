// Internal: epilogue machinery shared by the fused CPU kernel files. Operand indexing is
// resolved once per launch (PreparedSteps) so that applying a step to a run of a tile is a
// plain, vectorisable loop with no per-element index arithmetic.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "kernels/cpu/eigen_maps.h"
#include "kernels/cpu/fused_kernels.h"

namespace fusert::cpu::detail {

/// Row-major views with a row stride (a tile inside a larger output, one head of a QKV row).
using StridedMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
using ConstStridedMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;

/// out[i] = op(in[i], t[i * t_stride]) for i in [0, n). in may equal out; t is ignored by unary
/// ops; t_stride 0 broadcasts one value. operand_first swaps the roles (t op v).
void apply_op(EpOp op, float a, float b, bool operand_first, const float* in, const float* t, int64_t t_stride,
              int64_t n, float* out);

/// A kStrided operand's broadcast over the output shape, with adjacent dims merged where the
/// operand stays affine across them, so a run usually needs one pointer and one stride.
struct StridedIndex {
  std::vector<int64_t> dims, strides;  ///< merged output dims and operand strides
  StridedIndex() = default;
  StridedIndex(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& operand_strides);
  /// Operand offset of flat output index `flat`; *run = elements until the innermost merged
  /// dim wraps (the operand advances by strides.back() per element within the run).
  int64_t locate(int64_t flat, int64_t* run) const;
};

/// Epilogue steps bound to one output layout: [.., channels, spatial] with the flat index
/// rules of fused_kernels.h (kPerChannel = (flat / spatial) % channels, kPerRow =
/// flat / (channels * spatial)).
class PreparedSteps {
 public:
  PreparedSteps() = default;
  PreparedSteps(const std::vector<EpilogueStep>& steps, const std::vector<int64_t>& out_shape, int64_t channels,
                int64_t spatial);
  bool empty() const { return steps_.empty(); }
  /// Applies every step, in order, to v[0, count) holding logical flat indices [flat0, ...).
  void apply(int64_t flat0, int64_t count, float* v) const;

 private:
  struct Step {
    EpilogueStep desc;  // operand, mode, op, bounds
    StridedIndex index;
  };
  void apply_step(const Step& s, int64_t flat0, int64_t count, float* v) const;
  std::vector<Step> steps_;
  int64_t channels_ = 1, spatial_ = 1;
};

/// Whether a tensor operand of ep (steps or post) points into [y, y + count), e.g. a residual
/// whose buffer the memory plan reuses for the output. Kernels then finish each tile in scratch
/// so that the operand is read before y is written.
bool epilogue_reads(const Epilogue& ep, const float* y, int64_t count);

/// In-place LayerNorm of one row: (v - mean) / sqrt(var + eps) * scale + shift (shift nullable).
void layer_norm_row(int64_t n, const float* scale, const float* shift, float eps, float* v);

/// In-place max-subtracted softmax of one row; an all -inf row becomes zeros, NaN stays NaN.
void softmax_row(int64_t n, float* v);
/// One attention score row in place: scale * row + mask[b, i, :] (mask nullable), then
/// softmax_row (kernels/cpu/attention.cc; the oneDNN attention anchor shares it).
void attention_probabilities_row(const AttentionParams& p, const float* mask, int64_t b, int64_t i, float* row);

/// A whole Epilogue (steps, LayerNorm tail, post) for row-major [rows, n] outputs (gemm-like):
/// apply_rows finishes complete rows, which is why gemm kernels block by rows.
class RowEpilogue {
 public:
  RowEpilogue(const Epilogue& ep, int64_t n);
  bool empty() const { return steps_.empty() && post_.empty() && !layer_norm_; }
  /// Rows [row0, row0 + rows) of the logical output, stored at y with row stride ld.
  void apply_rows(int64_t row0, int64_t rows, float* y, int64_t ld) const;

 private:
  PreparedSteps steps_, post_;
  bool layer_norm_ = false;
  const float* scale_ = nullptr;
  const float* shift_ = nullptr;
  float eps_ = 0.f;
  int64_t n_ = 0;
};

/// Rows per block for a row-blocked GEMM of width n: a block of outputs stays in L2 while its
/// epilogue runs, yet is tall enough for the GEMM micro-kernel, and there are enough blocks
/// to feed the team when m allows.
int64_t gemm_row_block(int64_t m, int64_t n, int64_t k);

}  // namespace fusert::cpu::detail
