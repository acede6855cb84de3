// The backend-neutral lowering spec of a fusion group: what both the CPU and the CUDA lowering
// read from a group instead of decoding it each on its own. The planner records the decoded
// patterns (FusionGroup::attention, ::branch_merge); from the group and the graph this layer
// derives the epilogue (EpilogueTemplate: the chain as kern::EpOp steps with their operands),
// the anchor parameters (conv/gemm/matmul), the members of horizontal and grouped groups, the
// stacked branch-merge conv, and whether a single op is a view. Backends add only what is
// theirs: kernels, library calls, launches.
#pragma once

#include <array>
#include <cstdint>

#include <memory>
#include <string>
#include <vector>

#include "graph/fusion/group.h"
#include "kernels/common/epilogue.h"
#include "kernels/common/params.h"
#include "runtime/execution_plan.h"

namespace fusert::lowering {

inline const Node& node_at(const Graph& g, int ni) { return g.nodes[static_cast<size_t>(ni)]; }
/// Input `i` of `n`, or kNoValue when the optional input is absent.
inline ValueId opt_input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }
/// The group's nodes from position `from` on (an anchor's epilogue chain).
inline std::vector<int> tail_of(const FusionGroup& grp, size_t from) {
  return std::vector<int>(grp.nodes.begin() + static_cast<long>(from), grp.nodes.end());
}

/// A member chain's epilogue: every node after its anchor.
inline std::vector<int> tail_of_chain(const std::vector<int>& chain) {
  return std::vector<int>(chain.begin() + 1, chain.end());
}

/// A single-op group that is a view (Reshape, Flatten, Unsqueeze, Squeeze, Identity with the
/// same dtype): the value whose buffer its output shares; kNoValue when the op needs a kernel.
/// Every backend lowers a view to an alias step (view_step), never a launch.
ValueId view_source(const Graph& g, int ni);
/// Step skeleton of node `ni` alone: its name, every input present and every output (kernel
/// names the kernel for stats and profiles).
Step node_step(const Graph& g, int ni, const char* kernel);
/// The alias step of view node `ni` (view_source(g, ni) != kNoValue).
Step view_step(const Graph& g, int ni);

/// An epilogue whose tensor operands are value ids, bound to pointers at run time.
struct EpilogueTemplate {
  kern::Epilogue ep;
  std::vector<ValueId> step_operands;  ///< per ep.steps entry (kNoValue for none)
  std::vector<ValueId> post_operands;  ///< per ep.post entry
  ValueId ln_scale = kNoValue, ln_shift = kNoValue;
  std::vector<std::shared_ptr<const std::vector<float>>> constants;  ///< operands made at lowering
  kern::Epilogue bind(const BufferTable& b) const;
};

/// Builds the epilogue for the chain `nodes` applied to running value `cur` whose logical
/// shape is `out_shape`; `conv` selects per-channel indexing of [N, C, HW] (else [M, N]).
/// Returns false (with `why`) if some node cannot be an epilogue step.
bool build_epilogue(const Graph& g, const std::vector<int>& nodes, ValueId cur, const Shape& out_shape, bool conv,
                    EpilogueTemplate* t, std::string* why);

/// An elementwise group decoded: the running input `x` (the head's first input) and one
/// epilogue step per node, in order, over the output shape. kUnsupported (with the node's
/// reason) when a node is not an elementwise step.
Status decode_elementwise(const Graph& g, const FusionGroup& grp, ValueId* x, EpilogueTemplate* t);

/// A row-norm group decoded: elementwise prologue, the norm (LayerNorm or Softmax over the
/// last axis of `shape`, viewed as [outer, inner]), the post chain.
struct RowNormGroup {
  size_t norm_at = 0;    ///< position of the norm in grp.nodes
  ValueId x = kNoValue;  ///< the running input: the prologue head's operand of the norm's shape
  Shape shape;           ///< the norm's input shape
  int64_t outer = 0, inner = 0;
  bool layer_norm = false;                     ///< else Softmax
  ValueId scale = kNoValue, shift = kNoValue;  ///< LayerNorm only; shift may be absent
  float eps = 0.f;
  EpilogueTemplate pro, post;
};
/// kUnsupported when the norm is not over the last axis or a chain node is not an epilogue
/// step; kInternal when the group has no norm or the prologue head has no input of its shape.
Status decode_row_norm(const Graph& g, const FusionGroup& grp, RowNormGroup* out);

/// Step skeleton for a group: name, nodes, inputs (values read from outside), outputs.
Step group_step(const Graph& g, const FusionGroup& grp, const char* kernel);

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
  int64_t ma = 0;      ///< channels of each branch (both equal the join's)
  kern::ConvParams p;  ///< the stacked conv: kernel, pads and p.m = Ma or Ma + Mb
  std::vector<float> w, bias;
};
Status branch_merge_layout(const Graph& g, const FusionGroup& grp, BranchMergeLayout* out);

/// Copies w [M, C, kh, kw] centred into a zeroed [M, C, KH, KW] buffer at `dst` (branch balancing).
void pad_kernel(const Tensor& w, int64_t KH, int64_t KW, float* dst);
kern::ConvParams conv_params(const Graph& g, const Node& n);
/// Pad's constant as raw bytes of x's element type (f32, i32 or i64; 8 bytes, the rest 0): input 2
/// itself where the model gives it (so that an i64 beyond 2^53 is exact), else the `value`
/// attribute (a YAML model's float). Both backends' Pad read it.
std::array<uint8_t, 8> pad_constant(const Graph& g, const Node& n);
kern::GemmParams gemm_params(const Graph& g, const Node& n);
/// ConvTranspose's parameters from its shapes and (shape-inference-canonicalised) attributes; the
/// end pads are implied by y's size. Both backends' ConvTranspose read it.
kern::ConvTransposeParams conv_transpose_params(const Graph& g, const Node& n);
kern::MatMulParams matmul_params(const Graph& g, const Node& n);

}  // namespace fusert::lowering
