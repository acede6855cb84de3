// CPU lowering of horizontal groups: Gemms or 1x1 convs sharing one input, on concatenated
// weights.
#include <algorithm>
#include <array>
#include <memory>
#include <set>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

namespace {

// Sibling 1x1 convs of one input: one conv on the stacked weights into a scratch tile, then each
// member's channels are copied out through its own epilogue.
Status lower_horizontal_conv(const Graph& g, const FusionGroup& grp, const std::vector<std::vector<int>>& chains,
                             Step& s) {
  auto h = std::make_shared<HorizontalConv>();
  FUSERT_RETURN_IF_ERROR(decode_horizontal_conv(g, chains, h.get()));
  s = group_step(g, grp, "conv2d_horizontal");
  s.run = [h](const BufferTable& b) {
    h->run(b, [&](const float* x, float* tile) {
      cpu::Epilogue none;
      cpu::conv2d_fused(h->p, x, h->w_cat->data(), h->b_cat->data(), none, tile);
    });
  };
  return Status();
}

}  // namespace

Status decode_horizontal_conv(const Graph& g, const std::vector<std::vector<int>>& chains, HorizontalConv* h) {
  const Node& first = node_at(g, chains[0][0]);
  h->p = conv_params(g, first);
  h->x = first.inputs[0];
  h->w_cat = std::make_shared<std::vector<float>>();
  h->b_cat = std::make_shared<std::vector<float>>();
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 2));
    const Tensor& wt = g.value(n.inputs[1]).data;
    h->w_cat->insert(h->w_cat->end(), wt.f32(), wt.f32() + wt.numel());
    const int64_t m = wt.shape()[0];
    const ValueId bias = opt_input(n, 2);
    for (int64_t i = 0; i < m; ++i) h->b_cat->push_back(bias != kNoValue ? g.value(bias).data.f32()[i] : 0.f);
    EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chain.begin() + 1, chain.end());
    if (!build_epilogue(g, tail, n.outputs[0], g.value(n.outputs[0]).shape, true, &t, &why) ||
        t.ep.tail != cpu::EpTail::kNone) {
      return error(StatusCode::kUnsupported)
             << "horizontal conv member '" << n.name << "': " << (why.empty() ? "reducing tail" : why);
    }
    h->eps.push_back(t);
    h->ys.push_back(node_at(g, chain.back()).outputs[0]);
    h->widths.push_back(m);
  }
  h->p.m = static_cast<int64_t>(h->b_cat->size());
  return Status();
}

void HorizontalConv::scatter(const BufferTable& b, const float* tile) const {
  const int64_t hw = p.oh * p.ow;
  int64_t off = 0;
  for (size_t i = 0; i < ys.size(); ++i) {
    cpu::Epilogue ep = eps[i].bind(b);
    float* y = b.f32(ys[i]);
    for (int64_t n = 0; n < p.n; ++n) {
      float* dst = y + n * widths[i] * hw;
      std::copy_n(tile + (n * p.m + off) * hw, widths[i] * hw, dst);
      cpu::apply_epilogue_steps(ep.steps, ep.out_shape, n * widths[i] * hw, widths[i] * hw, widths[i], hw, dst);
    }
    off += widths[i];
  }
}

Status decode_horizontal_gemm(const Graph& g, const std::vector<std::vector<int>>& chains, HorizontalGemm* h) {
  const Node& first = node_at(g, chains[0][0]);
  h->m = g.value(first.outputs[0]).shape[0];
  h->k = g.value(first.inputs[0]).shape[1];
  h->a = first.inputs[0];
  h->w_cat = std::make_shared<std::vector<float>>();
  h->b_cat = std::make_shared<std::vector<float>>();
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 2));
    int64_t width = g.value(n.outputs[0]).shape[1];
    std::vector<float> w = weight_nk(g, n), b = bias_n(g, n, width);
    h->w_cat->insert(h->w_cat->end(), w.begin(), w.end());
    h->b_cat->insert(h->b_cat->end(), b.begin(), b.end());
    EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chain.begin() + 1, chain.end());
    if (!build_epilogue(g, tail, n.outputs[0], {h->m, width}, false, &t, &why))
      return error(StatusCode::kInternal) << why;
    if (!per_column_bias(g, n)) bias_as_epilogue(g, n, {h->m, width}, &t);
    h->eps.push_back(t);
    h->ys.push_back(node_at(g, chain.back()).outputs[0]);
    h->widths.push_back(width);
  }
  return Status();
}

std::vector<cpu::HorizontalMember> HorizontalGemm::bind(const BufferTable& b) const {
  std::vector<cpu::HorizontalMember> members(ys.size());
  for (size_t i = 0; i < ys.size(); ++i) {
    members[i].n = widths[i];
    members[i].ep = eps[i].bind(b);
    members[i].y = b.f32(ys[i]);
  }
  return members;
}

Status lower_horizontal(const Graph& g, const FusionGroup& grp, Step& s) {
  auto chains = member_chains(g, grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kConv) return lower_horizontal_conv(g, grp, chains, s);
  if (first.op != OpKind::kGemm) return error(StatusCode::kUnsupported) << "horizontal group of " << op_name(first.op);
  s = group_step(g, grp, "gemm_horizontal");
  HorizontalGemm h;
  FUSERT_RETURN_IF_ERROR(decode_horizontal_gemm(g, chains, &h));
  s.run = [h](const BufferTable& b) {
    std::vector<cpu::HorizontalMember> members = h.bind(b);
    cpu::gemm_horizontal(h.m, h.k, b.f32(h.a), h.w_cat->data(), h.b_cat->data(), members);
  };
  return Status();
}

}  // namespace fusert::lowering
