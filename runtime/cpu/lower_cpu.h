// Lowering of a FusionPlan to CPU steps: one step per kernel group, running the group's fused
// kernel (kernels/cpu/fused_kernels.h), from the backend-neutral spec (runtime/lowering/spec.h).
// One file per group kind, as in runtime/cuda: lower_single*.cc, lower_anchor.cc,
// lower_elementwise.cc, lower_horizontal.cc, lower_grouped.cc, lower_cross.cc,
// lower_attention.cc.
#pragma once

#include <memory>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/import_kernels.h"
#include "runtime/lowering/spec.h"
#include "runtime/options.h"

namespace fusert {

/// Which kernels the CPU lowering uses for anchors (Conv, Gemm, MatMul and their epilogues).
enum class CpuKernels {
  kReference,   ///< our Eigen/OpenMP kernels (kernels/cpu): the reference every test compares against
  kOneDnn,      ///< oneDNN primitives with post-ops (kernels/cpu/onednn.h) where they run
                ///< optimised; the reference kernel (with the reason in Step::detail) elsewhere
  kOneDnnBf16,  ///< kOneDnn with the float Conv/Gemm/MatMul-by-weights anchors in bf16
                ///< (cpu::onednn::Precision::kBf16; SessionOptions::precision "bf16")
};
/// True for the kinds that run oneDNN primitives.
inline bool uses_onednn(CpuKernels k) { return k != CpuKernels::kReference; }
/// "reference" or "onednn"; false for anything else.
bool parse_cpu_kernels(const std::string& s, CpuKernels* out);
/// SessionOptions::cpu_kernels parsed into *kernels; kInvalidArgument naming the value otherwise.
/// Every backend that runs CPU kernels (the CUDA backend's host-fallback steps) checks it.
Status check_cpu_kernels(const SessionOptions& options, CpuKernels* kernels);

/// One step per kernel group of `plan`, in the plan's order. Single-op groups use the
/// unfused lowering; Reshape/Flatten/Unsqueeze/Identity become alias steps (no kernel).
Result<std::vector<Step>> lower_plan_cpu(const Graph& g, const FusionPlan& plan,
                                         CpuKernels kernels = CpuKernels::kReference);
/// The CPU step of one kernel group (also the CUDA backend's host fallback). Errors name the group.
Result<Step> lower_group_cpu(const Graph& g, const FusionGroup& grp, CpuKernels kernels = CpuKernels::kReference);

/// The layout pass (layout.cc): activations passed between oneDNN convolutions that prefer the
/// same dense layout stay in it (no reorders). Call once on the lowered steps, before any run.
/// Returns the number of activations kept in a native layout.
int assign_native_layouts(const Graph& g, std::vector<Step>& steps);

namespace lowering {

/// Kind-specific CPU lowerings, one file each (named after the group kind).
Status lower_anchor_epilogue(const Graph& g, const FusionGroup& grp, Step& s);  ///< lower_anchor.cc
/// An anchor group (or a lone Conv/Gemm/MatMul, a conv-sum cross group, a horizontal GEMM, a
/// 1x1+depthwise block, a lone MaxPool/AveragePool) on oneDNN primitives with post-ops
/// (lower_onednn.cc).
/// kUnsupported with the reason when oneDNN cannot run it optimised.
/// `bf16`: the float anchors in bf16 (CpuKernels::kOneDnnBf16).
Status lower_onednn(const Graph& g, const FusionGroup& grp, bool bf16, Step& s);
/// A QLinearConv on oneDNN's int8 convolution (lower_quant.cc); kUnsupported with the reason
/// (u8 weights, a weight zero point other than 0, no optimised kernel) when it cannot.
Status lower_qlinear_conv_onednn(const Graph& g, int node, Step& s);
/// A MatMulInteger by constant int8 weights (zero point 0) on oneDNN's int8 matmul (lower_quant.cc).
Status lower_matmul_integer_onednn(const Graph& g, int node, Step& s);
/// A MaxPool of 8-bit values (lower_quant.cc): NCHW, or NHWC where the layout pass keeps its
/// neighbours' int8 activations in NHWC.
Status lower_max_pool_8bit(const Graph& g, int node, Step& s);
/// The pooling parameters of a MaxPool / AveragePool node (lower_single.cc).
cpu::PoolParams pool_params(const Graph& g, const Node& n);
Status lower_elementwise(const Graph& g, const FusionGroup& grp, Step& s);   ///< lower_elementwise.cc
Status lower_row_norm(const Graph& g, const FusionGroup& grp, Step& s);      ///< lower_elementwise.cc
Status lower_horizontal(const Graph& g, const FusionGroup& grp, Step& s);    ///< lower_horizontal.cc
Status lower_grouped(const Graph& g, const FusionGroup& grp, Step& s);       ///< lower_grouped.cc
Status lower_conv_sum(const Graph& g, const FusionGroup& grp, Step& s);      ///< lower_cross.cc
Status lower_branch_merge(const Graph& g, const FusionGroup& grp, Step& s);  ///< lower_cross.cc
/// With `kernels` onednn, the AttentionAnchor where oneDNN has optimised matmuls for the heads.
Status lower_attention(const Graph& g, const FusionGroup& grp, CpuKernels kernels, Step& s);  ///< lower_attention.cc
/// A 1x1 + depthwise block on the reference kernels: the two convolutions one after the other
/// through a per-thread intermediate (lower_anchor.cc).
Status lower_pointwise_depthwise(const Graph& g, const FusionGroup& grp, Step& s);

/// A 1x1 + depthwise block decoded: each half's conv parameters, weights, bias (kNoValue when
/// absent) and unary epilogue; x the block's input, y its output (lower_anchor.cc).
struct PointwiseDepthwise {
  cpu::ConvParams p1, p2;
  ValueId x = kNoValue, y = kNoValue, w1 = kNoValue, b1 = kNoValue, w2 = kNoValue, b2 = kNoValue;
  EpilogueTemplate t1, t2;
};
Status decode_pointwise_depthwise(const Graph& g, const FusionGroup& grp, PointwiseDepthwise* d);

using FloatBuf = std::shared_ptr<std::vector<float>>;

/// A horizontal group of Gemms decoded: the shared input, the concatenated weights [sum n_i, K]
/// and biases, and each member's epilogue, width and output (lower_horizontal.cc).
struct HorizontalGemm {
  int64_t m = 0, k = 0;
  ValueId a = kNoValue;
  FloatBuf w_cat, b_cat;
  std::vector<EpilogueTemplate> eps;
  std::vector<ValueId> ys;
  std::vector<int64_t> widths;
  std::vector<cpu::HorizontalMember> bind(const BufferTable& b) const;
};
Status decode_horizontal_gemm(const Graph& g, const std::vector<std::vector<int>>& chains, HorizontalGemm* h);

/// A horizontal group of sibling 1x1 convs of one input x decoded: one conv `p` over the stacked
/// weights w_cat [sum M_i, C, 1, 1] and biases b_cat [sum M_i] (p.m = sum M_i), and each member's
/// epilogue (unary/binary steps, no tail), width M_i and output (lower_horizontal.cc).
struct HorizontalConv {
  cpu::ConvParams p;
  ValueId x = kNoValue;
  FloatBuf w_cat, b_cat;
  std::vector<EpilogueTemplate> eps;
  std::vector<ValueId> ys;
  std::vector<int64_t> widths;
  /// Runs `conv(x, tile)` (the stacked convolution into a per-calling-thread scratch tile
  /// [N, sum M_i, OH, OW]), then copies each member's channels into its output through its
  /// epilogue.
  template <typename Conv>
  void run(const BufferTable& b, const Conv& conv) const {
    // Per calling thread, reused across runs: steps keep no shared mutable state, so concurrent
    // runs of one plan never share the tile (as conv.cc's im2col buffer).
    thread_local std::vector<float> tile;
    tile.resize(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
    conv(b.f32(x), tile.data());
    scatter(b, tile.data());
  }
  void scatter(const BufferTable& b, const float* tile) const;
};
Status decode_horizontal_conv(const Graph& g, const std::vector<std::vector<int>>& chains, HorizontalConv* h);

/// kUnsupported unless input `i` of `n` is absent or a weight (its data known at lowering).
inline Status check_const(const Graph& g, const Node& n, size_t i) {
  if (i < n.inputs.size() && n.inputs[i] != kNoValue && g.value(n.inputs[i]).data.empty()) {
    return error(StatusCode::kUnsupported) << "'" << n.name << "': input " << i << " must be a weight for this fusion";
  }
  return Status();
}

inline const float* ptr_or_null(const BufferTable& b, ValueId v) { return v == kNoValue ? nullptr : b.f32(v); }

}  // namespace lowering
}  // namespace fusert
