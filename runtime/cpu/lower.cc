// The CPU plan lowering: one step per kernel group, dispatched on the group kind.
#include "runtime/cpu/lower_cpu.h"

namespace fusert {

Result<Step> lower_group_cpu(const Graph& g, const FusionGroup& grp) {
  using namespace lowering;
  if (grp.kind == GroupKind::kSingle) {
    const int ni = grp.nodes[0];
    if (view_source(g, ni) != kNoValue) return view_step(g, ni);
    return lower_node_cpu(g, ni);
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
      st = lower_attention(g, grp, s);
      break;
    case GroupKind::kSingle:
      break;
  }
  if (!st.ok()) return error(st.code()) << "lowering group " << grp.name << ": " << st.message();
  return s;
}

Result<std::vector<Step>> lower_plan_cpu(const Graph& g, const FusionPlan& plan) {
  std::vector<Step> steps;
  for (const FusionGroup* grp : plan.kernel_groups()) {
    FUSERT_ASSIGN_OR_RETURN(Step s, lower_group_cpu(g, *grp));
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace fusert
