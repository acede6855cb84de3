// Anchor parameters (conv, gemm, matmul), the members of horizontal and grouped groups, and the
// stacked conv of a branch-merge group: backend-neutral, read by every lowering.
#include <algorithm>
#include <cstring>
#include <memory>

#include "runtime/lowering/spec.h"

namespace fusert::lowering {

kern::ConvParams conv_params(const Graph& g, const Node& n) {
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& w = g.value(n.inputs[1]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  kern::ConvParams p;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.m = w[0];
  p.kh = w[2];
  p.kw = w[3];
  p.oh = y[2];
  p.ow = y[3];
  const auto& st = n.attr_ints("strides");
  const auto& dl = n.attr_ints("dilations");
  const auto& pd = n.attr_ints("pads");
  p.stride_h = st[0];
  p.stride_w = st[1];
  p.dil_h = dl[0];
  p.dil_w = dl[1];
  p.pad_top = pd[0];
  p.pad_left = pd[1];
  p.pad_bottom = pd[2];
  p.pad_right = pd[3];
  p.group = n.attr_i("group");
  return p;
}

kern::ConvTransposeParams conv_transpose_params(const Graph& g, const Node& n) {
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& w = g.value(n.inputs[1]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const auto& st = n.attr_ints("strides");
  const auto& dl = n.attr_ints("dilations");
  const auto& pd = n.attr_ints("pads");
  return {x[0],  x[1],  x[2],  x[3],  y[1],  y[2], y[3], w[2], w[3], n.attr_i("group"),
          st[0], st[1], dl[0], dl[1], pd[0], pd[1]};
}

std::array<uint8_t, 8> pad_constant(const Graph& g, const Node& n) {
  std::array<uint8_t, 8> out{};
  const DType dt = g.value(n.inputs[0]).dtype;
  const Value* cv = n.inputs.size() > 2 && n.inputs[2] != kNoValue ? &g.value(n.inputs[2]) : nullptr;
  const double v = n.attr_f("value");
  if (cv && cv->is_initializer && cv->data.numel() == 1 && cv->data.dtype() == dt) {
    std::memcpy(out.data(), cv->data.raw(), dtype_size(dt));
  } else if (dt == DType::kI64) {
    const int64_t i = static_cast<int64_t>(v);
    std::memcpy(out.data(), &i, sizeof i);
  } else if (dt == DType::kI32) {
    const int32_t i = static_cast<int32_t>(v);
    std::memcpy(out.data(), &i, sizeof i);
  } else {
    const float f = static_cast<float>(v);
    std::memcpy(out.data(), &f, sizeof f);
  }
  return out;
}

kern::GemmParams gemm_params(const Graph& g, const Node& n) {
  kern::GemmParams p;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  p.trans_a = n.attr_i("transA") != 0;
  p.trans_b = n.attr_i("transB") != 0;
  p.m = y[0];
  p.n = y[1];
  p.k = p.trans_a ? a[0] : a[1];
  p.alpha = static_cast<float>(n.attr_f("alpha"));
  p.beta = static_cast<float>(n.attr_f("beta"));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    Shape c = g.value(n.inputs[2]).shape;
    c.insert(c.begin(), 2 - c.size(), 1);
    p.c_rows = c[0];
    p.c_cols = c[1];
  }
  return p;
}

kern::MatMulParams matmul_params(const Graph& g, const Node& n) {
  Shape a = g.value(n.inputs[0]).shape, bsh = g.value(n.inputs[1]).shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (bsh.size() == 1) bsh.push_back(1);
  kern::MatMulParams p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = bsh.back();
  Shape ab(a.begin(), a.end() - 2), bb(bsh.begin(), bsh.end() - 2);
  size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  Shape ob(r);
  // numpy broadcasting: a dim of 1 takes the other's, a 0 included (max(0, 1) made an empty
  // batch one batch, and the kernels wrote past the empty output)
  for (size_t i = 0; i < r; ++i) ob[i] = ab[i] == 1 ? bb[i] : ab[i];
  p.batch = shape_numel(ob);
  for (int64_t o = 0; o < p.batch; ++o) {  // numpy broadcasting: each output batch's sources
    int64_t rem = o, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % ob[d];
      rem /= ob[d];
      ia += (ab[d] == 1 ? 0 : idx) * sa;
      ib += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ab[d];
      sb *= bb[d];
    }
    p.a_batch_index.push_back(ia);
    p.b_batch_index.push_back(ib);
  }
  return p;
}

// Splits a group into anchor-led chains: each anchor followed by the members that consume
// its running value, in order.
std::vector<std::vector<int>> member_chains(const Graph& g, const FusionGroup& grp) {
  std::vector<std::vector<int>> chains;
  std::set<int> used;
  for (int ni : grp.nodes) {
    if (op_info(node_at(g, ni).op).pattern != PatternKind::kAnchor && node_at(g, ni).op != OpKind::kLayerNormalization)
      continue;
    if (used.count(ni)) continue;
    std::vector<int> chain = {ni};
    used.insert(ni);
    ValueId cur = node_at(g, ni).outputs[0];
    for (bool grew = true; grew;) {
      grew = false;
      for (int c : g.value(cur).consumers) {
        if (std::find(grp.nodes.begin(), grp.nodes.end(), c) == grp.nodes.end() || used.count(c)) continue;
        chain.push_back(c);
        used.insert(c);
        cur = node_at(g, c).outputs[0];
        grew = true;
        break;
      }
    }
    chains.push_back(chain);
  }
  return chains;
}

// W as [N, K] (PyTorch Linear layout) from a Gemm's B operand.
std::vector<float> weight_nk(const Graph& g, const Node& n) {
  const Tensor& w = g.value(n.inputs[1]).data;
  int64_t r = w.shape()[0], c = w.shape()[1];
  std::vector<float> out(static_cast<size_t>(r * c));
  bool trans_b = n.attr_i("transB") != 0;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(trans_b ? i * c + j : j * r + i)] = w.f32()[i * c + j];
  float alpha = static_cast<float>(n.attr_f("alpha"));
  for (float& v : out) v *= alpha;
  return out;
}

std::vector<float> bias_n(const Graph& g, const Node& n, int64_t count) {
  std::vector<float> out(static_cast<size_t>(count), 0.f);
  if (n.inputs.size() < 3 || n.inputs[2] == kNoValue || !per_column_bias(g, n)) return out;
  const Tensor& c = g.value(n.inputs[2]).data;
  float beta = static_cast<float>(n.attr_f("beta"));
  for (int64_t i = 0; i < count; ++i) out[static_cast<size_t>(i)] = beta * c.f32()[c.numel() == 1 ? 0 : i];
  return out;
}

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

}  // namespace fusert::lowering
