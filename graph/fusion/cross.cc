// Cross fusion over every join of two computed paths.
#include "graph/fusion/cross.h"

#include <algorithm>
#include <cstdio>

#include "graph/fusion/cost_model.h"
#include "graph/fusion/vertical.h"

namespace fusert {

namespace {

// One side of a join: the anchor-led kernel group (or lone anchor node) producing it.
struct Branch {
  int group = -1;
  ValueId out = kNoValue;  // the branch's value read by the join
  std::vector<int> nodes;
  int anchor = -1;
  bool linear = false;  // no op after the anchor: re-parameterisable
  int64_t flops = 0;
};

bool branch_of(const PlanState& st, ValueId s, Branch* b) {
  const Graph& g = st.g;
  int p = g.value(s).producer;
  if (p < 0 || !check_single_use(g, s)) return false;
  int gid = st.group_of(p);
  if (gid >= 0) {
    const FusionGroup& grp = st.groups[static_cast<size_t>(gid)];
    if (grp.kind != GroupKind::kAnchorEpilogue || grp.outputs != std::vector<ValueId>{s}) return false;
    b->nodes = grp.nodes;
  } else {
    b->nodes = {p};
  }
  b->group = gid;
  b->out = s;
  b->anchor = b->nodes.front();
  const Node& a = st.node(b->anchor);
  if (a.op != OpKind::kConv && a.op != OpKind::kGemm) return false;
  if (st.node(b->nodes.back()).op == OpKind::kGlobalAveragePool) return false;
  b->linear = b->nodes.size() == 1;
  for (int n : b->nodes) b->flops += node_flops(g, n);
  return true;
}

// Why the join operand `s` is not a branch although an anchor-led kernel produces it (it has
// other readers or is a graph output), or yes when there is nothing to report.
FusionDecision branch_refusal(const PlanState& st, ValueId s, int* anchor) {
  int p = st.g.value(s).producer;
  if (p < 0) return FusionDecision::yes();
  int gid = st.group_of(p);
  *anchor = gid >= 0 ? st.groups[static_cast<size_t>(gid)].nodes.front() : p;
  OpKind op = st.node(*anchor).op;
  if (op != OpKind::kConv && op != OpKind::kGemm) return FusionDecision::yes();
  return check_single_use(st.g, s);
}

// The join's trailing chain: the vertical group it heads, or (vertical off) epilogue ops.
std::vector<int> post_chain(PlanState& st, int join) {
  std::vector<int> post;
  int gid = st.group_of(join);
  if (gid >= 0) {
    const FusionGroup& grp = st.groups[static_cast<size_t>(gid)];
    if (grp.nodes.front() != join) return {-1};
    post.assign(grp.nodes.begin() + 1, grp.nodes.end());
    return post;
  }
  ValueId cur = st.node(join).outputs[0];
  while (check_single_use(st.g, cur)) {
    int c = st.g.value(cur).consumers[0];
    if (!is_epilogue_op(st.g, c, cur) || is_join(st.g, c) || st.group_of(c) >= 0 || st.node(c).fuse_never) break;
    post.push_back(c);
    cur = st.node(c).outputs[0];
  }
  return post;
}

// Same input, same strides/dilations, group 1: can the two convs become one stacked conv?
// `pad_note` explains the balancing when kernel sizes differ.
bool stackable(const Graph& g, const Node& c1, const Node& c2, bool* padded) {
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || c1.inputs[0] != c2.inputs[0]) return false;
  if (c1.attr_i("group") != 1 || c2.attr_i("group") != 1) return false;
  if (c1.attr_ints("strides") != c2.attr_ints("strides") || c1.attr_ints("dilations") != c2.attr_ints("dilations")) return false;
  const Shape& w1 = g.value(c1.inputs[1]).shape;
  const Shape& w2 = g.value(c2.inputs[1]).shape;
  const auto& p1 = c1.attr_ints("pads");
  const auto& p2 = c2.attr_ints("pads");
  *padded = w1[2] != w2[2] || w1[3] != w2[3];
  // Zero-padding the smaller kernel by d on each side needs its pads to be d smaller.
  int64_t dh = (w2[2] - w1[2]) / 2, dw = (w2[3] - w1[3]) / 2;
  if ((w2[2] - w1[2]) % 2 || (w2[3] - w1[3]) % 2) return false;
  return p2[0] - p1[0] == dh && p2[2] - p1[2] == dh && p2[1] - p1[1] == dw && p2[3] - p1[3] == dw;
}

// FLOPs added by zero-padding the smaller of two conv kernels to the larger one's size.
int64_t padded_extra_flops(const Graph& g, const Node& c1, const Node& c2) {
  const Shape& w1 = g.value(c1.inputs[1]).shape;
  const Shape& w2 = g.value(c2.inputs[1]).shape;
  const Node& small = w1[2] * w1[3] <= w2[2] * w2[3] ? c1 : c2;
  const Shape& ws = g.value(small.inputs[1]).shape;
  int64_t kh = std::max(w1[2], w2[2]), kw = std::max(w1[3], w2[3]);
  return 2 * shape_numel(g.value(small.outputs[0]).shape) * ws[1] * (kh * kw - ws[2] * ws[3]);
}

// Absorbs the join (+ post chain, + a GAP tail for conv anchors) into `base`'s kernel.
void fuse_join(PlanState& st, Strategy s, GroupKind kind, std::vector<int> nodes, const std::vector<int>& dissolve,
               int join, std::vector<int> post, const std::string& note, double ratio, bool balanced) {
  std::vector<int> all = nodes;
  all.push_back(join);
  all.insert(all.end(), post.begin(), post.end());
  bool conv = st.node(nodes.front()).op == OpKind::kConv;
  if (kind == GroupKind::kAnchorEpilogue && !conv) {
    for (int p : post) if (st.node(p).op == OpKind::kLayerNormalization) kind = GroupKind::kGemmLayerNorm;
  }
  ValueId last = st.node(all.back()).outputs[0];
  if (conv && kind != GroupKind::kBranchMerge && check_single_use(st.g, last)) {
    int c = st.g.value(last).consumers[0];
    if (st.node(c).op == OpKind::kGlobalAveragePool && st.group_of(c) < 0 && !st.node(c).fuse_never) all.push_back(c);
  }
  if (FusionDecision d = check_no_cycle(st.g, all); !d) { st.reject(s, all, d); return; }
  if (FusionDecision d = backend_supports(st.opt.backend, kind); !d) { st.reject(s, all, d); return; }
  for (int gid : dissolve) if (gid >= 0) st.dissolve(gid);
  int id = st.add_group(s, kind, all, note);
  st.groups[static_cast<size_t>(id)].imbalance_ratio = ratio;
  st.groups[static_cast<size_t>(id)].balanced = balanced;
}

void cross_at_join(PlanState& st, int join) {
  const Node& j = st.node(join);
  std::vector<int> post = post_chain(st, join);
  if (!post.empty() && post[0] == -1) return;
  Branch a, b;
  bool ha = branch_of(st, j.inputs[0], &a), hb = branch_of(st, j.inputs[1], &b);
  if (!ha && !hb) {
    for (ValueId in : j.inputs) {  // every "no" carries a reason
      int anchor = -1;
      if (FusionDecision d = branch_refusal(st, in, &anchor); !d) st.reject(Strategy::kCross, {anchor, join}, d);
    }
    return;
  }
  int join_group = st.group_of(join);
  if (ha && hb) {
    double ratio = imbalance_ratio(a.flops, b.flops);
    bool padded = false;
    bool same_input = stackable(st.g, st.node(a.anchor), st.node(b.anchor), &padded);
    if (same_input && j.op == OpKind::kAdd) {
      double balanced_ratio = padded ? 1.0 : ratio;
      char note[200];
      std::snprintf(note, sizeof note, "%s%s branch FLOP ratio %.1f%s", a.linear && b.linear ? "re-parameterised into one conv; " : "two branches on one input; ",
                    padded ? "balanced by zero-padding the smaller kernel;" : "", ratio, padded ? " -> 1.0" : "");
      FusionDecision d = check_imbalance(ratio, st.opt.max_imbalance, "conv");
      if (padded) {  // stacking needs equal kernels: the smaller one is zero-padded
        if (!d) st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
        // Linear branches are re-parameterised into the larger kernel: no extra work at all.
        int64_t extra = a.linear && b.linear ? 0 : padded_extra_flops(st.g, st.node(a.anchor), st.node(b.anchor));
        std::vector<int> all = a.nodes;
        all.insert(all.end(), b.nodes.begin(), b.nodes.end());
        all.push_back(join);
        d = check_balancing_pays(st.opt.backend, extra, bytes_saved(st.g, all, {st.node(join).outputs[0]}), static_cast<int>(all.size()) - 1);
      }
      if (d) {
        std::vector<int> nodes = a.nodes;
        nodes.insert(nodes.end(), b.nodes.begin(), b.nodes.end());
        fuse_join(st, Strategy::kCross, GroupKind::kBranchMerge, nodes, {a.group, b.group, join_group}, join, post, note, balanced_ratio, padded);
        return;
      } else {
        st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
      }
    } else if (a.linear && b.linear && st.node(a.anchor).op == OpKind::kConv && st.node(b.anchor).op == OpKind::kConv && j.op == OpKind::kAdd) {
      FusionDecision d = check_imbalance(ratio, st.opt.max_imbalance, "conv");
      if (d) {
        char note[160];
        std::snprintf(note, sizeof note, "conv shortcut: both GEMMs accumulate per output tile; branch FLOP ratio %.1f", ratio);
        fuse_join(st, Strategy::kCross, GroupKind::kConvSum, {a.anchor, b.anchor}, {a.group, b.group, join_group}, join, post, note, ratio, false);
        return;
      }
      st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
    }
    // Refused or not stackable: fuse the join into the heavier branch; the other is read back.
    if (b.flops > a.flops) std::swap(a, b);
    hb = false;
  }
  const Branch& br = ha ? a : b;
  if (j.op != OpKind::kAdd && j.op != OpKind::kMul && j.op != OpKind::kSub) return;
  // The shortcut is the join operand that is not the branch (after the swap above the heavier
  // branch may be either operand).
  ValueId other = j.inputs[0] == br.out ? j.inputs[1] : j.inputs[0];
  if (st.g.value(other).shape != st.g.value(j.outputs[0]).shape) return;
  fuse_join(st, Strategy::kCross, GroupKind::kAnchorEpilogue, br.nodes, {br.group, join_group}, join, post,
            "residual join into '" + st.node(br.anchor).name + "' epilogue; shortcut '" + st.g.value(other).name + "' read once", 0, false);
}

}  // namespace

void run_cross(PlanState& st) {
  for (size_t i = 0; i < st.g.nodes.size(); ++i) {
    int ni = static_cast<int>(i);
    if (!is_join(st.g, ni) || st.node(ni).fuse_never) continue;
    int gid = st.group_of(ni);
    if (gid >= 0 && (st.groups[static_cast<size_t>(gid)].strategy != Strategy::kVertical || st.groups[static_cast<size_t>(gid)].nodes.front() != ni)) continue;
    cross_at_join(st, ni);
  }
}

}  // namespace fusert
