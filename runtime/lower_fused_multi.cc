// Lowering of multi-anchor groups: horizontal (concatenated weights), grouped launches,
// and attention (two-branch convs: lower_fused_branch.cc).
#include <algorithm>
#include <array>
#include <memory>
#include <set>

#include "runtime/lower_fused.h"

namespace fusert::lowering {

namespace {

using FloatBuf = std::shared_ptr<std::vector<float>>;

const Node& node_at(const Graph& g, int ni) { return g.nodes[static_cast<size_t>(ni)]; }

}  // namespace

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

namespace {

Status check_const(const Graph& g, const Node& n, size_t i) {
  if (i < n.inputs.size() && n.inputs[i] != kNoValue && g.value(n.inputs[i]).data.empty()) {
    return error(StatusCode::kUnsupported) << "'" << n.name << "': input " << i << " must be a weight for this fusion";
  }
  return Status();
}

// Sibling 1x1 convs of one input: one conv on the stacked weights [sum M_i, C, 1, 1] into a
// scratch tile, then each member's rows are copied out through its own epilogue.
Status lower_horizontal_conv(const Graph& g, const FusionGroup& grp, const std::vector<std::vector<int>>& chains,
                             Step& s) {
  s = group_step(g, grp, "conv2d_horizontal");
  const Node& first = node_at(g, chains[0][0]);
  cpu::ConvParams p = conv_params(g, first);
  const int64_t hw = p.oh * p.ow;
  auto w = std::make_shared<std::vector<float>>(), bias = std::make_shared<std::vector<float>>();
  std::vector<EpilogueTemplate> eps;
  std::vector<ValueId> ys;
  std::vector<int64_t> widths;
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 2));
    const Tensor& wt = g.value(n.inputs[1]).data;
    w->insert(w->end(), wt.f32(), wt.f32() + wt.numel());
    int64_t m = wt.shape()[0];
    for (int64_t i = 0; i < m; ++i)
      bias->push_back(n.inputs.size() > 2 && n.inputs[2] != kNoValue ? g.value(n.inputs[2]).data.f32()[i] : 0.f);
    EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chain.begin() + 1, chain.end());
    if (!build_epilogue(g, tail, n.outputs[0], g.value(n.outputs[0]).shape, true, &t, &why) ||
        t.ep.tail != cpu::EpTail::kNone) {
      return error(StatusCode::kUnsupported)
             << "horizontal conv member '" << n.name << "': " << (why.empty() ? "reducing tail" : why);
    }
    eps.push_back(t);
    ys.push_back(node_at(g, chain.back()).outputs[0]);
    widths.push_back(m);
  }
  p.m = static_cast<int64_t>(bias->size());
  ValueId x = first.inputs[0];
  s.run = [=](const BufferTable& b) {
    // Per calling thread, reused across runs: steps keep no shared mutable state, so
    // concurrent runs of one plan never share the tile (as conv.cc's im2col buffer).
    thread_local std::vector<float> tile;
    tile.resize(static_cast<size_t>(p.n * p.m * hw));
    float* scratch = tile.data();
    cpu::Epilogue none;
    cpu::conv2d_fused(p, b.f32(x), w->data(), bias->data(), none, scratch);
    int64_t off = 0;
    for (size_t i = 0; i < ys.size(); ++i) {
      cpu::Epilogue ep = eps[i].bind(b);
      float* y = b.f32(ys[i]);
      for (int64_t n = 0; n < p.n; ++n) {
        float* dst = y + n * widths[i] * hw;
        std::copy_n(scratch + (n * p.m + off) * hw, widths[i] * hw, dst);
        cpu::apply_epilogue_steps(ep.steps, ep.out_shape, n * widths[i] * hw, widths[i] * hw, widths[i], hw, dst);
      }
      off += widths[i];
    }
  };
  return Status();
}

}  // namespace

Status lower_horizontal(const Graph& g, const FusionGroup& grp, Step& s) {
  auto chains = member_chains(g, grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kConv) return lower_horizontal_conv(g, grp, chains, s);
  if (first.op != OpKind::kGemm) return error(StatusCode::kUnsupported) << "horizontal group of " << op_name(first.op);
  s = group_step(g, grp, "gemm_horizontal");
  const int64_t m = g.value(first.outputs[0]).shape[0], k = g.value(first.inputs[0]).shape[1];
  auto w_cat = std::make_shared<std::vector<float>>();
  auto b_cat = std::make_shared<std::vector<float>>();
  std::vector<EpilogueTemplate> eps;
  std::vector<ValueId> ys;
  std::vector<int64_t> widths;
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, n, 2));
    int64_t width = g.value(n.outputs[0]).shape[1];
    std::vector<float> w = weight_nk(g, n), b = bias_n(g, n, width);
    w_cat->insert(w_cat->end(), w.begin(), w.end());
    b_cat->insert(b_cat->end(), b.begin(), b.end());
    EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chain.begin() + 1, chain.end());
    if (!build_epilogue(g, tail, n.outputs[0], {m, width}, false, &t, &why)) return error(StatusCode::kInternal) << why;
    if (!per_column_bias(g, n)) bias_as_epilogue(g, n, {m, width}, &t);
    eps.push_back(t);
    ys.push_back(node_at(g, chain.back()).outputs[0]);
    widths.push_back(width);
  }
  ValueId a = first.inputs[0];
  s.run = [=](const BufferTable& b) {
    std::vector<cpu::HorizontalMember> members(ys.size());
    for (size_t i = 0; i < ys.size(); ++i) {
      members[i].n = widths[i];
      members[i].ep = eps[i].bind(b);
      members[i].y = b.f32(ys[i]);
    }
    cpu::gemm_horizontal(m, k, b.f32(a), w_cat->data(), b_cat->data(), members);
  };
  return Status();
}

Status lower_grouped(const Graph& g, const FusionGroup& grp, Step& s) {
  auto chains = member_chains(g, grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kLayerNormalization) {
    s = group_step(g, grp, "norm_rows_grouped");
    std::vector<int> members(grp.nodes);
    std::vector<std::array<ValueId, 4>> io;
    const Shape& shape = g.value(first.inputs[0]).shape;
    int64_t inner = shape.back(), outer = shape_numel(shape) / inner;
    float eps = static_cast<float>(first.attr_f("epsilon"));
    for (int ni : members) {
      const Node& n = node_at(g, ni);
      io.push_back({n.inputs[0], n.inputs[1], n.inputs.size() > 2 ? n.inputs[2] : kNoValue, n.outputs[0]});
    }
    s.run = [=](const BufferTable& b) {
      for (const auto& r : io) {
        cpu::norm_rows_fused(outer, inner, b.f32(r[0]), {}, cpu::RowNorm::kLayerNorm, b.f32(r[1]),
                             r[2] == kNoValue ? nullptr : b.f32(r[2]), eps, {}, b.f32(r[3]));
      }
    };
    return Status();
  }
  s = group_step(g, grp, "gemm_grouped");
  const int64_t m = g.value(first.outputs[0]).shape[0], n = g.value(first.outputs[0]).shape[1],
                k = g.value(first.inputs[0]).shape[1];
  std::vector<FloatBuf> ws, bs;
  std::vector<ValueId> as, ys;
  std::vector<EpilogueTemplate> eps;
  for (const auto& chain : chains) {
    const Node& nd = node_at(g, chain[0]);
    if (chain.size() != 1)
      return error(StatusCode::kInternal) << "grouped GEMM member '" << nd.name << "' has an epilogue chain";
    FUSERT_RETURN_IF_ERROR(check_const(g, nd, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, nd, 2));
    ws.push_back(std::make_shared<std::vector<float>>(weight_nk(g, nd)));
    bs.push_back(std::make_shared<std::vector<float>>(bias_n(g, nd, n)));
    EpilogueTemplate t;
    t.ep.out_shape = {m, n};
    if (!per_column_bias(g, nd)) bias_as_epilogue(g, nd, {m, n}, &t);
    eps.push_back(t);
    as.push_back(nd.inputs[0]);
    ys.push_back(nd.outputs[0]);
  }
  s.run = [=](const BufferTable& b) {
    std::vector<cpu::GroupedGemmMember> members(ys.size());
    for (size_t i = 0; i < ys.size(); ++i) {
      members[i].a = b.f32(as[i]);
      members[i].w = ws[i]->data();
      members[i].bias = bs[i]->data();
      members[i].ep = eps[i].bind(b);
      members[i].y = b.f32(ys[i]);
    }
    cpu::gemm_grouped(m, n, k, members);
  };
  return Status();
}

Status lower_attention(const Graph& g, const FusionGroup& grp, Step& s) {
  if (!grp.attention)
    return error(StatusCode::kInternal) << "attention group " << grp.name << " without its decoded pattern";
  const AttentionMatch& m = *grp.attention;  // decoded once, by the planner
  s = group_step(g, grp, "attention");
  cpu::AttentionParams p;
  p.batch = m.batch;
  p.heads = m.heads;
  p.seq = m.seq;
  p.head_dim = m.head_dim;
  p.q_stride = p.k_stride = p.v_stride = m.heads * m.head_dim;
  p.scale = m.scale;
  p.mask_b_stride = m.mask_b_stride;
  p.mask_i_stride = m.mask_i_stride;
  ValueId q = m.q, k = m.k, v = m.v, mask = m.mask, y = m.out;
  s.run = [=](const BufferTable& b) {
    cpu::attention(p, b.f32(q), b.f32(k), b.f32(v), mask == kNoValue ? nullptr : b.f32(mask), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
