// Lowering of cross groups with two conv branches on one input: balanced into one conv with
// stacked output channels, or re-parameterised into a single conv when both are linear.
#include <algorithm>
#include <memory>

#include "runtime/lower_fused.h"

namespace fusert::lowering {

// Copies w [M, C, kh, kw] centred into a zeroed [M, C, KH, KW] buffer at `dst`.
// Zero-padding a kernel by d each side with the conv's pads d smaller leaves every output
// unchanged: the extra taps multiply the padding that the larger pads add.
void pad_kernel(const Tensor& w, int64_t KH, int64_t KW, float* dst) {
  const int64_t m = w.shape()[0], c = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t dh = (KH - kh) / 2, dw = (KW - kw) / 2;
  for (int64_t i = 0; i < m * c; ++i)
    for (int64_t y = 0; y < kh; ++y)
      for (int64_t x = 0; x < kw; ++x) dst[(i * KH + y + dh) * KW + x + dw] = w.f32()[(i * kh + y) * kw + x];
}

Status branch_merge_layout(const Graph& g, const FusionGroup& grp, BranchMergeLayout* L) {
  if (!grp.branch_merge) {
    return error(StatusCode::kInternal) << "branch-merge group " << grp.name << " without its decoded layout";
  }
  const BranchMergeSpec& spec = *grp.branch_merge;  // decoded once, by the planner
  L->conv_a = spec.conv_a, L->conv_b = spec.conv_b, L->join = spec.join;
  L->chain_a = spec.chain_a, L->chain_b = spec.chain_b, L->post = spec.post;
  const Node& ca = g.nodes[static_cast<size_t>(spec.conv_a)];
  const Node& cb = g.nodes[static_cast<size_t>(spec.conv_b)];
  const Node& jn = g.nodes[static_cast<size_t>(spec.join)];
  const Tensor& wa = g.value(ca.inputs[1]).data;
  const Tensor& wb = g.value(cb.inputs[1]).data;
  if (wa.empty() || wb.empty()) return error(StatusCode::kUnsupported) << "branch-merge needs weight initializers";
  const BranchMergeSpec& sc = spec;  // the stacked kernel and pads
  const int64_t ma = wa.shape()[0], mb = wb.shape()[0], c = wa.shape()[1];
  if (ma != mb || g.value(jn.outputs[0]).shape[1] != ma)
    return error(StatusCode::kInternal) << "branch-merge branches of different widths";
  L->ma = ma;
  L->linear = L->chain_a.empty() && L->chain_b.empty();
  L->p = conv_params(g, ca);
  L->p.kh = sc.kh, L->p.kw = sc.kw;
  L->p.pad_top = sc.pads[0], L->p.pad_left = sc.pads[1], L->p.pad_bottom = sc.pads[2], L->p.pad_right = sc.pads[3];
  L->p.m = L->linear ? ma : ma + mb;
  const size_t per = static_cast<size_t>(ma * c * sc.kh * sc.kw);
  L->w.assign(L->linear ? per : 2 * per, 0.f);
  L->bias.assign(static_cast<size_t>(L->p.m), 0.f);
  std::vector<float> tmp(per, 0.f);
  pad_kernel(wa, sc.kh, sc.kw, L->w.data());
  pad_kernel(wb, sc.kh, sc.kw, L->linear ? tmp.data() : L->w.data() + per);
  if (L->linear)
    for (size_t i = 0; i < per; ++i) L->w[i] += tmp[i];
  for (const auto& [n, off] : {std::make_pair(&ca, int64_t{0}), std::make_pair(&cb, L->linear ? int64_t{0} : ma)}) {
    if (n->inputs.size() < 3 || n->inputs[2] == kNoValue) continue;
    const Tensor& b = g.value(n->inputs[2]).data;
    if (b.empty()) return error(StatusCode::kUnsupported) << "branch-merge needs bias initializers";
    for (int64_t i = 0; i < ma; ++i) L->bias[static_cast<size_t>(off + i)] += b.f32()[i];
  }
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
