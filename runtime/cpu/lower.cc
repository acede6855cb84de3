// The CPU plan lowering: one step per kernel group, dispatched on the group kind.
#include "runtime/cpu/lower_cpu.h"

namespace fusert {

bool parse_cpu_kernels(const std::string& s, CpuKernels* out) {
  if (s == "reference") {
    *out = CpuKernels::kReference;
  } else if (s == "onednn") {
    *out = CpuKernels::kOneDnn;
  } else {
    return false;
  }
  return true;
}

namespace {

bool is_anchor(OpKind op) { return op == OpKind::kConv || op == OpKind::kGemm || op == OpKind::kMatMul; }
bool is_pool(OpKind op) { return op == OpKind::kMaxPool || op == OpKind::kAveragePool; }
// A pooling oneDNN may run: of f32 values (8-bit ones run our own kernel, lower_max_pool_8bit).
bool is_f32_pool(const Graph& g, const Node& n) { return is_pool(n.op) && g.value(n.inputs[0]).dtype == DType::kF32; }

// The oneDNN step of an anchor group or a pooling, or false with the reason in `why` (the
// reference kernel runs instead).
bool try_onednn(const Graph& g, const FusionGroup& grp, bool bf16, Step* s, std::string* why) {
  Status st = lowering::lower_onednn(g, grp, bf16, *s);
  if (st.ok()) return true;
  *why = st.message();
  return false;
}

}  // namespace

Result<Step> lower_group_cpu(const Graph& g, const FusionGroup& grp, CpuKernels kernels) {
  using namespace lowering;
  const OpKind head = node_at(g, grp.nodes[0]).op;
  const bool onednn_kind =
      ((grp.kind == GroupKind::kSingle || grp.kind == GroupKind::kAnchorEpilogue ||
        grp.kind == GroupKind::kGemmLayerNorm) &&
       is_anchor(head)) ||
      (grp.kind == GroupKind::kSingle &&
       (is_f32_pool(g, node_at(g, grp.nodes[0])) || head == OpKind::kQLinearConv || head == OpKind::kMatMulInteger)) ||
      grp.kind == GroupKind::kConvSum || grp.kind == GroupKind::kHorizontalGemm ||
      grp.kind == GroupKind::kPointwiseDepthwise;
  std::string why;
  if (uses_onednn(kernels) && onednn_kind) {
    Step s;
    if (try_onednn(g, grp, kernels == CpuKernels::kOneDnnBf16, &s, &why)) return s;
  }
  if (grp.kind == GroupKind::kSingle) {
    const int ni = grp.nodes[0];
    if (view_source(g, ni) != kNoValue) return view_step(g, ni);
    FUSERT_ASSIGN_OR_RETURN(Step s, lower_node_cpu(g, ni));
    if (!why.empty()) s.detail = "reference kernel: " + why;
    return s;
  }
  Status st;
  Step s;
  switch (grp.kind) {
    case GroupKind::kAnchorEpilogue:
    case GroupKind::kGemmLayerNorm:
      st = lower_anchor_epilogue(g, grp, s);
      break;
    case GroupKind::kElementwise:
      st = lower_elementwise(g, grp, s);
      break;
    case GroupKind::kRowNorm:
      st = lower_row_norm(g, grp, s);
      break;
    case GroupKind::kHorizontalGemm:
      st = lower_horizontal(g, grp, s);
      break;
    case GroupKind::kGroupedGemm:
    case GroupKind::kGroupedRowNorm:
      st = lower_grouped(g, grp, s);
      break;
    case GroupKind::kConvSum:
      st = lower_conv_sum(g, grp, s);
      break;
    case GroupKind::kBranchMerge:
      st = lower_branch_merge(g, grp, s);
      break;
    case GroupKind::kAttention:
      st = lower_attention(g, grp, kernels, s);
      break;
    case GroupKind::kPointwiseDepthwise:
      st = lower_pointwise_depthwise(g, grp, s);
      break;
    case GroupKind::kSingle:
      break;
  }
  if (!st.ok()) return error(st.code()) << "lowering group " << grp.name << ": " << st.message();
  if (!why.empty()) s.detail = "reference kernel: " + why;
  return s;
}

Result<std::vector<Step>> lower_plan_cpu(const Graph& g, const FusionPlan& plan, CpuKernels kernels) {
  std::vector<Step> steps;
  for (const FusionGroup* grp : plan.kernel_groups()) {
    FUSERT_ASSIGN_OR_RETURN(Step s, lower_group_cpu(g, *grp, kernels));
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace fusert
