// Lowering of a FusionPlan to CPU steps: one step per kernel group, running the group's fused
// kernel (kernels/cpu/fused_kernels.h), from the backend-neutral spec (runtime/lowering/spec.h).
// One file per group kind, as in runtime/cuda: lower_single*.cc, lower_anchor.cc,
// lower_elementwise.cc, lower_horizontal.cc, lower_grouped.cc, lower_cross.cc,
// lower_attention.cc.
#pragma once

#include <memory>
#include <vector>

#include "runtime/lowering/spec.h"

namespace fusert {

/// One step per kernel group of `plan`, in the plan's order. Single-op groups use the
/// unfused lowering; Reshape/Flatten/Unsqueeze/Identity become alias steps (no kernel).
Result<std::vector<Step>> lower_plan_cpu(const Graph& g, const FusionPlan& plan);
/// The CPU step of one kernel group (also the CUDA backend's host fallback). Errors name the group.
Result<Step> lower_group_cpu(const Graph& g, const FusionGroup& grp);

namespace lowering {

/// Kind-specific CPU lowerings, one file each (named after the group kind).
Status lower_anchor_epilogue(const Graph& g, const FusionGroup& grp, Step& s);  ///< lower_anchor.cc
Status lower_elementwise(const Graph& g, const FusionGroup& grp, Step& s);      ///< lower_elementwise.cc
Status lower_row_norm(const Graph& g, const FusionGroup& grp, Step& s);         ///< lower_elementwise.cc
Status lower_horizontal(const Graph& g, const FusionGroup& grp, Step& s);       ///< lower_horizontal.cc
Status lower_grouped(const Graph& g, const FusionGroup& grp, Step& s);          ///< lower_grouped.cc
Status lower_conv_sum(const Graph& g, const FusionGroup& grp, Step& s);         ///< lower_cross.cc
Status lower_branch_merge(const Graph& g, const FusionGroup& grp, Step& s);     ///< lower_cross.cc
Status lower_attention(const Graph& g, const FusionGroup& grp, Step& s);        ///< lower_attention.cc

using FloatBuf = std::shared_ptr<std::vector<float>>;

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
