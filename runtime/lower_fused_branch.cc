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

std::vector<int> chain_from(const Graph& g, const FusionGroup& grp, int anchor, int join) {
  std::vector<int> chain;
  ValueId cur = g.nodes[static_cast<size_t>(anchor)].outputs[0];
  for (;;) {
    const Value& v = g.value(cur);
    if (v.consumers.size() != 1 || v.consumers[0] == join) break;
    int c = v.consumers[0];
    if (std::find(grp.nodes.begin(), grp.nodes.end(), c) == grp.nodes.end()) break;
    chain.push_back(c);
    cur = g.nodes[static_cast<size_t>(c)].outputs[0];
  }
  return chain;
}

Status lower_branch_merge(const Graph& g, const FusionGroup& grp, Step& s) {
  std::vector<int> convs;
  int join = -1;
  for (int ni : grp.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    if (n.op == OpKind::kConv && convs.size() < 2) convs.push_back(ni);
    else if (n.op == OpKind::kAdd && join < 0 && convs.size() == 2) join = ni;
  }
  if (convs.size() != 2 || join < 0) return error(StatusCode::kInternal) << "branch-merge group shape";
  const Node& ca = g.nodes[static_cast<size_t>(convs[0])];
  const Node& cb = g.nodes[static_cast<size_t>(convs[1])];
  const Tensor& wa = g.value(ca.inputs[1]).data;
  const Tensor& wb = g.value(cb.inputs[1]).data;
  if (wa.empty() || wb.empty()) return error(StatusCode::kUnsupported) << "branch-merge needs weight initializers";
  const Node& big = wa.shape()[2] >= wb.shape()[2] ? ca : cb;
  const int64_t KH = std::max(wa.shape()[2], wb.shape()[2]), KW = std::max(wa.shape()[3], wb.shape()[3]);
  const int64_t ma = wa.shape()[0], mb = wb.shape()[0], c = wa.shape()[1];
  std::vector<int> chain_a = chain_from(g, grp, convs[0], join), chain_b = chain_from(g, grp, convs[1], join);
  std::vector<int> post;
  for (int ni : grp.nodes) if (ni > join) post.push_back(ni);
  const Node& jn = g.nodes[static_cast<size_t>(join)];
  const Shape out = g.value(jn.outputs[0]).shape;
  EpilogueTemplate ep_merge;
  std::string why;
  if (!build_epilogue(g, post, jn.outputs[0], out, true, &ep_merge, &why)) return error(StatusCode::kInternal) << why;
  cpu::ConvParams p = conv_params(g, big);
  auto bias_of = [&](const Node& n, int64_t count, float* dst) {
    for (int64_t i = 0; i < count; ++i) dst[i] += n.inputs.size() > 2 && n.inputs[2] != kNoValue ? g.value(n.inputs[2]).data.f32()[i] : 0.f;
  };
  ValueId x = ca.inputs[0], y = grp.outputs.at(0);
  if (chain_a.empty() && chain_b.empty()) {  // linear: W = pad(Wa) + pad(Wb), b = ba + bb
    s = group_step(g, grp, "conv2d_fused(re-parameterised)");
    auto w = std::make_shared<std::vector<float>>(static_cast<size_t>(ma * c * KH * KW), 0.f), tmp = std::make_shared<std::vector<float>>(w->size(), 0.f);
    pad_kernel(wa, KH, KW, w->data());
    pad_kernel(wb, KH, KW, tmp->data());
    for (size_t i = 0; i < w->size(); ++i) (*w)[i] += (*tmp)[i];
    auto bias = std::make_shared<std::vector<float>>(static_cast<size_t>(ma), 0.f);
    bias_of(ca, ma, bias->data());
    bias_of(cb, mb, bias->data());
    s.run = [=](const BufferTable& b) { cpu::conv2d_fused(p, b.f32(x), w->data(), bias->data(), ep_merge.bind(b), b.f32(y)); };
    return Status();
  }
  s = group_step(g, grp, "conv2d_branch_merge");
  p.m = ma + mb;
  auto w = std::make_shared<std::vector<float>>(static_cast<size_t>((ma + mb) * c * KH * KW), 0.f);
  pad_kernel(wa, KH, KW, w->data());
  pad_kernel(wb, KH, KW, w->data() + ma * c * KH * KW);
  auto bias = std::make_shared<std::vector<float>>(static_cast<size_t>(ma + mb), 0.f);
  bias_of(ca, ma, bias->data());
  bias_of(cb, mb, bias->data() + ma);
  EpilogueTemplate ep_a, ep_b;
  Shape half = out;
  half[1] = ma;
  if (!build_epilogue(g, chain_a, ca.outputs[0], half, true, &ep_a, &why) ||
      !build_epilogue(g, chain_b, cb.outputs[0], half, true, &ep_b, &why)) return error(StatusCode::kInternal) << why;
  s.run = [=](const BufferTable& b) {
    cpu::conv2d_branch_merge(p, b.f32(x), w->data(), bias->data(), ep_a.bind(b), ep_b.bind(b), true, ep_merge.bind(b), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
