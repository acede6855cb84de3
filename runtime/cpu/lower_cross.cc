// CPU lowering of cross groups: two convs joined by an Add computed per output tile (conv-sum),
// and two conv branches on one input balanced into one stacked conv (branch-merge).
#include <algorithm>
#include <memory>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

Status lower_conv_sum(const Graph& g, const FusionGroup& grp, Step& s) {
  const Node& c1 = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const Node& c2 = g.nodes[static_cast<size_t>(grp.nodes[1])];
  const Node& join = g.nodes[static_cast<size_t>(grp.nodes[2])];
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || join.op != OpKind::kAdd)
    return error(StatusCode::kInternal) << "conv-sum group shape";
  s = group_step(g, grp, "conv2d_sum_fused");
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 3), join.outputs[0], g.value(join.outputs[0]).shape, true, &t, &why))
    return error(StatusCode::kInternal) << why;
  auto bias = std::make_shared<std::vector<float>>(static_cast<size_t>(g.value(c1.inputs[1]).shape[0]), 0.f);
  for (const Node* c : {&c1, &c2}) {
    if (ValueId bv = opt_input(*c, 2); bv != kNoValue)
      for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] += g.value(bv).data.f32()[i];
  }
  cpu::ConvParams p1 = conv_params(g, c1), p2 = conv_params(g, c2);
  ValueId x1 = c1.inputs[0], w1 = c1.inputs[1], x2 = c2.inputs[0], w2 = c2.inputs[1], y = grp.outputs.at(0);
  s.run = [=](const BufferTable& b) {
    cpu::conv2d_sum_fused(p1, b.f32(x1), b.f32(w1), p2, b.f32(x2), b.f32(w2), bias->data(), t.bind(b), b.f32(y));
  };
  return Status();
}

Status lower_branch_merge(const Graph& g, const FusionGroup& grp, Step& s) {
  auto L = std::make_shared<BranchMergeLayout>();
  FUSERT_RETURN_IF_ERROR(branch_merge_layout(g, grp, L.get()));
  const Node& ca = g.nodes[static_cast<size_t>(L->conv_a)];
  const Node& cb = g.nodes[static_cast<size_t>(L->conv_b)];
  const Node& jn = g.nodes[static_cast<size_t>(L->join)];
  const Shape out = g.value(jn.outputs[0]).shape;
  EpilogueTemplate ep_merge, ep_a, ep_b;
  std::string why;
  if (!build_epilogue(g, L->post, jn.outputs[0], out, true, &ep_merge, &why))
    return error(StatusCode::kInternal) << why;
  ValueId x = ca.inputs[0], y = grp.outputs.at(0);
  if (L->linear) {  // W = pad(Wa) + pad(Wb), b = ba + bb
    s = group_step(g, grp, "conv2d_fused(re-parameterised)");
    s.run = [=](const BufferTable& b) {
      cpu::conv2d_fused(L->p, b.f32(x), L->w.data(), L->bias.data(), ep_merge.bind(b), b.f32(y));
    };
    return Status();
  }
  s = group_step(g, grp, "conv2d_branch_merge");
  if (!build_epilogue(g, L->chain_a, ca.outputs[0], out, true, &ep_a, &why) ||
      !build_epilogue(g, L->chain_b, cb.outputs[0], out, true, &ep_b, &why))
    return error(StatusCode::kInternal) << why;
  s.run = [=](const BufferTable& b) {
    cpu::conv2d_branch_merge(L->p, b.f32(x), L->w.data(), L->bias.data(), ep_a.bind(b), ep_b.bind(b), true,
                             ep_merge.bind(b), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
