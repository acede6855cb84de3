// Lowering of a FusionPlan to CPU steps: one step per kernel group, running the group's fused
// kernel (kernels/cpu/fused_kernels.h). Internal helpers shared by the lower_fused*.cc files.
#pragma once

#include <memory>
#include <vector>

#include "graph/fusion/group.h"
#include "kernels/cpu/fused_kernels.h"
#include "runtime/execution_plan.h"

namespace fusert {

/// One step per kernel group of `plan`, in the plan's order. Single-op groups use the
/// unfused lowering; Reshape/Flatten/Unsqueeze/Identity become alias steps (no kernel).
Result<std::vector<Step>> lower_plan_cpu(const Graph& g, const FusionPlan& plan);
/// The CPU step of one kernel group (also the CUDA backend's host fallback). Errors name the group.
Result<Step> lower_group_cpu(const Graph& g, const FusionGroup& grp);

namespace lowering {

/// An epilogue whose tensor operands are value ids, bound to pointers at run time.
struct EpilogueTemplate {
  cpu::Epilogue ep;
  std::vector<ValueId> step_operands;  ///< per ep.steps entry (kNoValue for none)
  std::vector<ValueId> post_operands;  ///< per ep.post entry
  ValueId ln_scale = kNoValue, ln_shift = kNoValue;
  std::vector<std::shared_ptr<const std::vector<float>>> constants;  ///< operands made at lowering
  cpu::Epilogue bind(const BufferTable& b) const;
};

/// Builds the epilogue for the chain `nodes` applied to running value `cur` whose logical
/// shape is `out_shape`; `conv` selects per-channel indexing of [N, C, HW] (else [M, N]).
/// Returns false (with `why`) if some node cannot be an epilogue step.
bool build_epilogue(const Graph& g, const std::vector<int>& nodes, ValueId cur, const Shape& out_shape, bool conv,
                    EpilogueTemplate* t, std::string* why);

/// Step skeleton for a group: name, nodes, inputs (values read from outside), outputs.
Step group_step(const Graph& g, const FusionGroup& grp, const char* kernel);

/// Kind-specific lowerings (lower_fused_anchor.cc, lower_fused_multi.cc).
Status lower_anchor_epilogue(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_elementwise(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_row_norm(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_horizontal(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_grouped(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_conv_sum(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_branch_merge(const Graph& g, const FusionGroup& grp, Step& s);
Status lower_attention(const Graph& g, const FusionGroup& grp, Step& s);

/// Horizontal/grouped groups split into anchor-led chains (anchor, then its epilogue members).
std::vector<std::vector<int>> member_chains(const Graph& g, const FusionGroup& grp);
/// A Gemm's B operand as [N, K] (PyTorch Linear layout) with alpha folded in.
std::vector<float> weight_nk(const Graph& g, const Node& n);
/// A Gemm's C operand as a per-column bias [count] with beta folded in (zeros when absent or
/// when C is not per-column: see bias_as_epilogue).
std::vector<float> bias_n(const Graph& g, const Node& n, int64_t count);
/// True when a Gemm's C broadcasts per column ([N], [1, N], [1], []) or is absent.
bool per_column_bias(const Graph& g, const Node& n);
/// For a Gemm whose C is not per-column ([M, 1], [M, N]): puts beta * C first in the epilogue
/// `t` of output shape [M, N] (a constant operand indexed per row or in full). Kernels that
/// take only a per-column bias vector (horizontal and grouped GEMMs) then stay exact.
void bias_as_epilogue(const Graph& g, const Node& n, const Shape& out, EpilogueTemplate* t);

/// A branch-merge group taken apart: the two convs, the join (the planner records it), each
/// branch's chain up to the join, the merge chain after it, and the stacked conv
/// (decoded by the planner: FusionGroup::branch_merge): weights [Ma, C, KH, KW] = pad(Wa) + pad(Wb) and bias
/// ba + bb when neither branch has a chain (re-parameterised), else [Ma + Mb, C, KH, KW] with
/// Wa's channels first. Errors when the group is not of that form.
struct BranchMergeLayout {
  int conv_a = -1, conv_b = -1, join = -1;
  std::vector<int> chain_a, chain_b, post;
  bool linear = false;
  int64_t ma = 0;     ///< channels of each branch (both equal the join's)
  cpu::ConvParams p;  ///< the stacked conv: kernel, pads and p.m = Ma or Ma + Mb
  std::vector<float> w, bias;
};
Status branch_merge_layout(const Graph& g, const FusionGroup& grp, BranchMergeLayout* out);

/// Copies w [M, C, kh, kw] centred into a zeroed [M, C, KH, KW] buffer at `dst` (branch balancing).
void pad_kernel(const Tensor& w, int64_t KH, int64_t KW, float* dst);
cpu::ConvParams conv_params(const Graph& g, const Node& n);
cpu::GemmParams gemm_params(const Graph& g, const Node& n);
cpu::MatMulParams matmul_params(const Graph& g, const Node& n);

}  // namespace lowering
}  // namespace fusert
