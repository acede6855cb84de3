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

Status decode_pointwise_depthwise(const Graph& g, const FusionGroup& grp, PointwiseDepthwise* d) {
  size_t split = 1;
  while (split < grp.nodes.size() && node_at(g, grp.nodes[split]).op != OpKind::kConv) ++split;
  const Node& c1 = node_at(g, grp.nodes[0]);
  if (c1.op != OpKind::kConv || split == grp.nodes.size())
    return error(StatusCode::kInternal) << "1x1 + depthwise group " << grp.name << " has not two convolutions";
  const Node& c2 = node_at(g, grp.nodes[split]);
  std::string why;
  const std::vector<int> first(grp.nodes.begin() + 1, grp.nodes.begin() + static_cast<long>(split));
  if (!build_epilogue(g, first, c1.outputs[0], g.value(c1.outputs[0]).shape, true, &d->t1, &why) ||
      !build_epilogue(g, tail_of(grp, split + 1), c2.outputs[0], g.value(c2.outputs[0]).shape, true, &d->t2, &why))
    return error(StatusCode::kUnsupported) << why;
  d->p1 = conv_params(g, c1);
  d->p2 = conv_params(g, c2);
  d->x = c1.inputs[0];
  d->y = grp.outputs.at(0);
  d->w1 = c1.inputs[1], d->b1 = opt_input(c1, 2);
  d->w2 = c2.inputs[1], d->b2 = opt_input(c2, 2);
  return Status();
}

Status lower_pointwise_depthwise(const Graph& g, const FusionGroup& grp, Step& s) {
  PointwiseDepthwise d;
  FUSERT_RETURN_IF_ERROR(decode_pointwise_depthwise(g, grp, &d));
  s = group_step(g, grp, "conv2d_fused x2");
  s.run = [d](const BufferTable& b) {
    thread_local std::vector<float> mid;  // per thread: concurrent runs never share it
    mid.resize(static_cast<size_t>(d.p1.n * d.p1.m * d.p1.oh * d.p1.ow));
    cpu::conv2d_fused(d.p1, b.f32(d.x), b.f32(d.w1), ptr_or_null(b, d.b1), d.t1.bind(b), mid.data());
    cpu::conv2d_fused(d.p2, mid.data(), b.f32(d.w2), ptr_or_null(b, d.b2), d.t2.bind(b), b.f32(d.y));
  };
  return Status();
}

}  // namespace fusert::lowering
