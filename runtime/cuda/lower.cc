// The CUDA plan lowering: one step per kernel group dispatched on the group kind (one file per
// kind, as in runtime/cpu), the capability check the planner asks, and the register probe.
#include <algorithm>

#include "runtime/cpu/lower_cpu.h"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

Status lower_group(GroupLowering& gl) {
  switch (gl.grp.kind) {
    case GroupKind::kSingle:
      return lower_single_cuda(gl);
    case GroupKind::kAnchorEpilogue:
    case GroupKind::kGemmLayerNorm:
      return lower_anchor_cuda(gl);
    case GroupKind::kElementwise:
      return lower_elementwise_cuda(gl);
    case GroupKind::kRowNorm:
      return lower_row_norm_cuda(gl);
    case GroupKind::kAttention:
      return lower_attention_cuda(gl);
    case GroupKind::kConvSum:
      return lower_conv_sum_cuda(gl);
    case GroupKind::kHorizontalGemm:
      return lower_horizontal_cuda(gl);
    case GroupKind::kBranchMerge:
      return lower_branch_merge_cuda(gl);
    case GroupKind::kGroupedGemm:
    case GroupKind::kGroupedRowNorm:
      return lower_grouped_cuda(gl);
    case GroupKind::kPointwiseDepthwise:  // cuDNN has no 1x1 + depthwise fusion; no kernel of ours
      return error(StatusCode::kUnsupported) << "no CUDA kernel for a 1x1 + depthwise block (the two convolutions "
                                                "run as two groups)";
  }
  return error(StatusCode::kInternal) << "unknown group kind";
}

// The step of `grp` with its buffers (for memory planning). A group's CPU kernel is built
// only when it runs on the host, as the planner's capability check decided (single ops only).
Result<Step> group_buffers(const Graph& g, const FusionGroup& grp, DeviceStep* ds) {
  if (!grp.host_reason.empty()) {
    FUSERT_ASSIGN_OR_RETURN(Step s, lower_group_cpu(g, grp));
    ds->host = s.alias_of == kNoValue;
    ds->host_reason = grp.host_reason;
    return s;
  }
  if (grp.kind != GroupKind::kSingle) return lowering::group_step(g, grp, group_kind_name(grp.kind));
  const int ni = grp.nodes[0];
  if (lowering::view_source(g, ni) != kNoValue) return lowering::view_step(g, ni);
  return lowering::node_step(g, ni, op_name(node_at(g, ni).op));
}

// Lowers one device group into `ds`; records its generated kernels' registers and spills.
Status lower_device_group(const Graph& g, const FusionGroup& grp, KernelTable& table, DeviceStep& ds, CudaPlan& cp) {
  GroupLowering gl{g, grp, table, ds};
  Status st = lower_group(gl);
  if (st.code() == StatusCode::kUnsupported) {  // capability and lowering disagree: a bug
    return error(StatusCode::kInternal) << "CUDA lowering of group " << grp.name
                                        << ": the capability check accepted it, but lowering refused it: "
                                        << st.message();
  }
  if (!st.ok()) return error(st.code()) << "CUDA lowering of group " << grp.name << ": " << st.message();
  int regs = 0, spill = 0;
  for (int k : ds.kernels) {
    regs = std::max(regs, cp.kernels[static_cast<size_t>(k)].bin.registers);
    spill += cp.kernels[static_cast<size_t>(k)].bin.spill_bytes();
  }
  if (!ds.kernels.empty()) cp.group_registers[grp.id] = {regs, spill};
  return Status();
}

}  // namespace

Result<CudaPlan> lower_plan_cuda(const Graph& g, const FusionPlan& plan) {
  CudaPlan cp;
  KernelTable table(&cp);
  for (const FusionGroup* grp : plan.kernel_groups()) {
    DeviceStep ds;
    ds.what = grp->name;
    FUSERT_ASSIGN_OR_RETURN(Step s, group_buffers(g, *grp, &ds));
    if (!ds.host && s.alias_of == kNoValue) FUSERT_RETURN_IF_ERROR(lower_device_group(g, *grp, table, ds, cp));
    for (ValueId v : s.outputs) {
      const Value& val = g.value(v);
      cp.alias_scratch_bytes =
          std::max(cp.alias_scratch_bytes, static_cast<size_t>(shape_numel(val.shape)) * dtype_size(val.dtype));
    }
    cp.steps.push_back(std::move(s));
    cp.dsteps.push_back(std::move(ds));
  }
  return cp;
}

FusionDecision check_capability(const Graph& g, const FusionGroup& candidate) {
  if (candidate.kind == GroupKind::kSingle && lowering::view_source(g, candidate.nodes[0]) != kNoValue)
    return FusionDecision::yes();  // a view (Reshape, Flatten, ...) needs no launch
  CudaPlan cp;
  KernelTable table(&cp, false);
  DeviceStep ds;
  GroupLowering gl{g, candidate, table, ds};
  Status st = lower_group(gl);
  if (st.ok()) return FusionDecision::yes();
  return FusionDecision::no("backend", st.message());
}

bool probe_registers(const Graph& g, GroupKind kind, const std::vector<int>& nodes, int* registers, int* spill_bytes,
                     std::string* kernel) {
  FusionGroup grp;
  grp.kind = kind;
  grp.nodes = nodes;
  grp.outputs = group_outputs(g, nodes);
  // The probe's candidate keeps its last value in memory; it is always the chain's output.
  ValueId last = node_at(g, nodes.back()).outputs[0];
  if (std::find(grp.outputs.begin(), grp.outputs.end(), last) == grp.outputs.end()) grp.outputs.push_back(last);
  grp.name = "probe";
  CudaPlan cp;
  KernelTable table(&cp);
  DeviceStep ds;
  GroupLowering gl{g, grp, table, ds};
  Status st = lower_group(gl);
  if (!st.ok()) {  // the grown candidate cannot be generated: report it, so the chain stops here
    *registers = -1;
    *spill_bytes = 0;
    *kernel = st.message();
    return true;
  }
  if (ds.kernels.empty()) return false;
  *registers = 0;
  *spill_bytes = 0;
  for (int k : ds.kernels) {
    const CompiledKernel& b = cp.kernels[static_cast<size_t>(k)].bin;
    if (b.registers >= *registers) *kernel = b.entry;
    *registers = std::max(*registers, b.registers);
    *spill_bytes += b.spill_bytes();
  }
  return true;
}

}  // namespace fusert::cuda
