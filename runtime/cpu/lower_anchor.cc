// CPU lowering of anchor groups: Conv/Gemm/MatMul + epilogue chain (+ residual, + GAP tail),
// and Gemm + LayerNorm.
#include <algorithm>
#include <memory>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

Status lower_anchor_epilogue(const Graph& g, const FusionGroup& grp, Step& s) {
  const Node& a = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const bool conv = a.op == OpKind::kConv;
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 1), a.outputs[0], g.value(a.outputs[0]).shape, conv, &t, &why)) {
    return error(StatusCode::kInternal) << why;
  }
  ValueId y = grp.outputs.at(0);
  ValueId x = a.inputs[0], w = a.inputs[1], bias = opt_input(a, 2);
  if (conv) {
    s = group_step(g, grp, "conv2d_fused");
    cpu::ConvParams p = conv_params(g, a);
    s.run = [=](const BufferTable& b) {
      cpu::conv2d_fused(p, b.f32(x), b.f32(w), ptr_or_null(b, bias), t.bind(b), b.f32(y));
    };
  } else if (a.op == OpKind::kGemm) {
    s = group_step(g, grp, "gemm_fused");
    cpu::GemmParams p = gemm_params(g, a);
    s.run = [=](const BufferTable& b) {
      cpu::gemm_fused(p, b.f32(x), b.f32(w), ptr_or_null(b, bias), t.bind(b), b.f32(y));
    };
  } else if (a.op == OpKind::kMatMul && t.ep.tail != cpu::EpTail::kGlobalAvgPool) {
    s = group_step(g, grp, "matmul_fused");
    cpu::MatMulParams p = matmul_params(g, a);
    s.run = [=](const BufferTable& b) { cpu::matmul_fused(p, b.f32(x), b.f32(w), t.bind(b), b.f32(y)); };
  } else {
    return error(StatusCode::kUnsupported) << "anchor " << op_name(a.op) << " with this epilogue";
  }
  return Status();
}

}  // namespace fusert::lowering
