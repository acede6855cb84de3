// Cross fusion over every join of two computed paths.
#include "graph/fusion/cross.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "graph/fusion/cost_model.h"
#include "graph/fusion/legality.h"

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

// Same input, same strides/dilations, group 1, kernels that stack: one stacked conv?
// `padded` is set when a kernel must be zero-padded.
bool stackable(const Graph& g, const Node& c1, const Node& c2, bool* padded) {
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || c1.inputs[0] != c2.inputs[0]) return false;
  if (c1.attr_i("group") != 1 || c2.attr_i("group") != 1) return false;
  if (c1.attr_ints("strides") != c2.attr_ints("strides") || c1.attr_ints("dilations") != c2.attr_ints("dilations"))
    return false;
  StackedConv sc;
  if (!stacked_conv(g, c1, c2, &sc)) return false;
  const Shape& w1 = g.value(c1.inputs[1]).shape;
  const Shape& w2 = g.value(c2.inputs[1]).shape;
  *padded = w1[2] != w2[2] || w1[3] != w2[3];
  return true;
}

// FLOPs added by zero-padding both kernels to the stacked kernel's size.
int64_t padded_extra_flops(const Graph& g, const Node& c1, const Node& c2) {
  StackedConv sc;
  if (!stacked_conv(g, c1, c2, &sc)) return 0;
  int64_t extra = 0;
  for (const Node* c : {&c1, &c2}) {
    const Shape& w = g.value(c->inputs[1]).shape;
    extra += 2 * shape_numel(g.value(c->outputs[0]).shape) * w[1] * (sc.kh * sc.kw - w[2] * w[3]);
  }
  return extra;
}

// The members of `nodes` from conv `anchor`'s output up to (not including) `join`, in order.
std::vector<int> chain_to_join(const Graph& g, const std::vector<int>& nodes, int anchor, int join) {
  std::vector<int> chain;
  ValueId cur = g.nodes[static_cast<size_t>(anchor)].outputs[0];
  for (;;) {
    const Value& v = g.value(cur);
    if (v.consumers.size() != 1 || v.consumers[0] == join) break;
    const int c = v.consumers[0];
    if (std::find(nodes.begin(), nodes.end(), c) == nodes.end()) break;
    chain.push_back(c);
    cur = g.nodes[static_cast<size_t>(c)].outputs[0];
  }
  return chain;
}

// Decodes a branch-merge group once, for every backend's lowering (FusionGroup::branch_merge).
std::shared_ptr<const BranchMergeSpec> decode_branch_merge(const Graph& g, std::vector<int> nodes, int join) {
  std::sort(nodes.begin(), nodes.end());
  auto spec = std::make_shared<BranchMergeSpec>();
  std::vector<int> convs;
  for (int ni : nodes)
    if (g.nodes[static_cast<size_t>(ni)].op == OpKind::kConv) convs.push_back(ni);
  if (convs.size() != 2) return nullptr;
  spec->conv_a = convs[0], spec->conv_b = convs[1], spec->join = join;
  spec->chain_a = chain_to_join(g, nodes, convs[0], join);
  spec->chain_b = chain_to_join(g, nodes, convs[1], join);
  const Node& jn = g.nodes[static_cast<size_t>(join)];
  for (const auto& [conv, chain] :
       {std::make_pair(convs[0], &spec->chain_a), std::make_pair(convs[1], &spec->chain_b)}) {
    const ValueId last = chain->empty() ? g.nodes[static_cast<size_t>(conv)].outputs[0]
                                        : g.nodes[static_cast<size_t>(chain->back())].outputs[0];
    if (std::find(jn.inputs.begin(), jn.inputs.end(), last) == jn.inputs.end()) return nullptr;  // must reach the join
  }
  for (int ni : nodes)
    if (ni > join) spec->post.push_back(ni);
  StackedConv sc;
  if (!stacked_conv(g, g.nodes[static_cast<size_t>(convs[0])], g.nodes[static_cast<size_t>(convs[1])], &sc))
    return nullptr;
  spec->kh = sc.kh, spec->kw = sc.kw, spec->pads = sc.pads;
  return spec;
}

// Absorbs the join (+ post chain, + a GAP tail for conv anchors) into `base`'s kernel.
void fuse_join(PlanState& st, Strategy s, GroupKind kind, std::vector<int> nodes, const std::vector<int>& dissolve,
               int join, std::vector<int> post, const std::string& note, double ratio, bool balanced) {
  std::vector<int> all = nodes;
  all.push_back(join);
  all.insert(all.end(), post.begin(), post.end());
  bool conv = st.node(nodes.front()).op == OpKind::kConv;
  // The join's trailing chain becomes the host kernel's epilogue: elementwise steps anywhere, a
  // LayerNorm tail only after a Gemm (the row-blocked GEMM sees whole rows), never a Softmax.
  for (int p : post) {
    const Node& n = st.node(p);
    const bool norm_ok = n.op == OpKind::kLayerNormalization && kind == GroupKind::kAnchorEpilogue &&
                         st.node(nodes.front()).op == OpKind::kGemm;
    if ((n.op == OpKind::kLayerNormalization || n.op == OpKind::kSoftmax) && !norm_ok) {
      st.reject(s, all,
                refuse("epilogue") << "'" << n.name << "' (" << op_name(n.op)
                                   << ") after the join cannot run in the epilogue of " << group_kind_name(kind) << " '"
                                   << st.node(nodes.front()).name << "'");
      return;
    }
    if (n.op == OpKind::kLayerNormalization) kind = GroupKind::kGemmLayerNorm;
  }
  ValueId last = st.node(all.back()).outputs[0];
  if (conv && kind != GroupKind::kBranchMerge && check_single_use(st.g, last)) {
    int c = st.g.value(last).consumers[0];
    if (st.node(c).op == OpKind::kGlobalAveragePool && st.group_of(c) < 0 && !st.node(c).fuse_never) all.push_back(c);
  }
  FusionGroup candidate;
  const FusionDecision d = first_refusal([&] { return check_no_cycle(st.g, all); },
                                         [&]() -> FusionDecision {
                                           candidate = candidate_group(st.g, kind, all, join);
                                           if (kind != GroupKind::kBranchMerge) return FusionDecision::yes();
                                           candidate.branch_merge = decode_branch_merge(st.g, all, join);
                                           if (candidate.branch_merge) return FusionDecision::yes();
                                           return refuse("branch_merge") << "the branches of '" << st.node(join).name
                                                                         << "' do not decode into two "
                                                                         << "stackable conv chains that reach the join";
                                         },
                                         [&] { return backend_supports(st.opt, st.g, candidate); });
  if (!d) {
    st.reject(s, all, d);
    return;
  }
  for (int gid : dissolve)
    if (gid >= 0) st.dissolve(gid);
  int id = st.add_group(s, kind, all, note);
  st.groups[static_cast<size_t>(id)].imbalance_ratio = ratio;
  st.groups[static_cast<size_t>(id)].balanced = balanced;
  st.groups[static_cast<size_t>(id)].join = join;
  st.groups[static_cast<size_t>(id)].branch_merge = candidate.branch_merge;
}

// A branch merge's decision: the 1:3 rule, or, when a kernel must be zero-padded to stack, the
// roofline (the imbalance refusal is recorded, and balancing decides).
FusionDecision branch_merge_decision(PlanState& st, int join, const Branch& a, const Branch& b, bool padded,
                                     double ratio) {
  FusionDecision d = check_imbalance(ratio, st.opt.max_imbalance, "conv");
  if (!padded) return d;
  if (!d) st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
  // Linear branches are re-parameterised into the larger kernel: no extra work at all.
  const int64_t extra = a.linear && b.linear ? 0 : padded_extra_flops(st.g, st.node(a.anchor), st.node(b.anchor));
  std::vector<int> all = a.nodes;
  all.insert(all.end(), b.nodes.begin(), b.nodes.end());
  all.push_back(join);
  return check_balancing_pays(st.opt, extra, bytes_saved(st.g, all, {st.node(join).outputs[0]}),
                              static_cast<int>(all.size()) - 1);
}

// Two anchor-led branches meeting at an Add in one kernel: one stacked conv (a branch merge) or
// both GEMMs accumulating per output tile (a conv sum). True when the join went to fuse_join
// (formed there, or refused with its reason); false when neither applies or the decision said no.
bool fuse_both_branches(PlanState& st, int join, const Branch& a, const Branch& b, const std::vector<int>& post) {
  const Node& j = st.node(join);
  const int join_group = st.group_of(join);
  const Shape& out_shape = st.g.value(j.outputs[0]).shape;
  const bool same_shapes = st.g.value(a.out).shape == out_shape && st.g.value(b.out).shape == out_shape;
  const double ratio = imbalance_ratio(a.flops, b.flops);
  bool padded = false;
  const bool same_input = stackable(st.g, st.node(a.anchor), st.node(b.anchor), &padded);
  if (same_input && same_shapes && j.op == OpKind::kAdd) {
    char note[200];
    std::snprintf(note, sizeof note, "%s%s branch FLOP ratio %.1f%s",
                  a.linear && b.linear ? "re-parameterised into one conv; " : "two branches on one input; ",
                  padded ? "balanced by zero-padding the smaller kernel;" : "", ratio, padded ? " -> 1.0" : "");
    const FusionDecision d = branch_merge_decision(st, join, a, b, padded, ratio);
    if (d) {
      std::vector<int> nodes = a.nodes;
      nodes.insert(nodes.end(), b.nodes.begin(), b.nodes.end());
      fuse_join(st, Strategy::kCross, GroupKind::kBranchMerge, nodes, {a.group, b.group, join_group}, join, post, note,
                padded ? 1.0 : ratio, padded);
      return true;
    }
    st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
    return false;
  }
  const bool conv_sum = same_shapes && a.linear && b.linear && st.node(a.anchor).op == OpKind::kConv &&
                        st.node(b.anchor).op == OpKind::kConv && j.op == OpKind::kAdd;
  if (!conv_sum) return false;
  const FusionDecision d = check_imbalance(ratio, st.opt.max_imbalance, "conv");
  if (!d) {
    st.reject(Strategy::kCross, {a.anchor, b.anchor, join}, d);
    return false;
  }
  char note[160];
  std::snprintf(note, sizeof note, "conv shortcut: both GEMMs accumulate per output tile; branch FLOP ratio %.1f",
                ratio);
  fuse_join(st, Strategy::kCross, GroupKind::kConvSum, {a.anchor, b.anchor}, {a.group, b.group, join_group}, join, post,
            note, ratio, false);
  return true;
}

// The host's epilogue writes one value per element of the anchor's output: a branch that the
// join broadcasts up (an SE gate [N,C,1,1] times a [N,C,H,W] map) cannot host it.
FusionDecision check_can_host(const PlanState& st, const Branch& br, const Shape& out_shape) {
  if (st.g.value(br.out).shape == out_shape) return FusionDecision::yes();
  return refuse("broadcast_join") << "'" << st.g.value(br.out).name << "' " << shape_str(st.g.value(br.out).shape)
                                  << " is broadcast to the join's " << shape_str(out_shape) << "; an epilogue of '"
                                  << st.node(br.anchor).name << "' writes one value per element of its output";
}

// The join (Add, Mul or Sub; + its post chain) into the epilogue of branch `br`'s kernel. The
// shortcut is the join operand that is not the branch; it may broadcast (per channel, spatial
// 1x1, scalar, ...): the epilogue indexes it by the output position.
void host_join(PlanState& st, int join, const Branch& br, const std::vector<int>& post) {
  const Node& j = st.node(join);
  if (j.op != OpKind::kAdd && j.op != OpKind::kMul && j.op != OpKind::kSub) return;
  const Shape& out_shape = st.g.value(j.outputs[0]).shape;
  if (FusionDecision d = check_can_host(st, br, out_shape); !d) {
    st.reject(Strategy::kCross, {br.anchor, join}, d);
    return;
  }
  ValueId other = j.inputs[0] == br.out ? j.inputs[1] : j.inputs[0];
  const bool broadcast = st.g.value(other).shape != out_shape;
  fuse_join(
      st, Strategy::kCross, GroupKind::kAnchorEpilogue, br.nodes, {br.group, st.group_of(join)}, join, post,
      std::string(broadcast ? "broadcast join into '" : "residual join into '") + st.node(br.anchor).name +
          "' epilogue; " + (broadcast ? "operand '" : "shortcut '") + st.g.value(other).name + "' " +
          (broadcast ? shape_str(st.g.value(other).shape) + " broadcast per output element" : std::string("read once")),
      0, false);
}

void cross_at_join(PlanState& st, int join) {
  const Node& j = st.node(join);
  const std::vector<int> post = post_chain(st, join);
  if (!post.empty() && post[0] == -1) return;
  Branch a, b;
  const bool ha = branch_of(st, j.inputs[0], &a), hb = branch_of(st, j.inputs[1], &b);
  if (!ha && !hb) {
    for (ValueId in : j.inputs) {  // every "no" carries a reason
      int anchor = -1;
      if (FusionDecision d = branch_refusal(st, in, &anchor); !d) st.reject(Strategy::kCross, {anchor, join}, d);
    }
    return;
  }
  if (!(ha && hb)) return host_join(st, join, ha ? a : b, post);
  if (fuse_both_branches(st, join, a, b, post)) return;
  // Refused or not stackable: fuse the join into the heavier branch that can host it.
  if (b.flops > a.flops) std::swap(a, b);
  if (st.g.value(a.out).shape != st.g.value(j.outputs[0]).shape) std::swap(a, b);
  host_join(st, join, a, post);
}

}  // namespace

bool stacked_conv(const Graph& g, const Node& c1, const Node& c2, StackedConv* out) {
  const Shape& w1 = g.value(c1.inputs[1]).shape;
  const Shape& w2 = g.value(c2.inputs[1]).shape;
  if (w1.size() != 4 || w2.size() != 4 || g.value(c1.outputs[0]).shape != g.value(c2.outputs[0]).shape) return false;
  out->kh = std::max(w1[2], w2[2]);
  out->kw = std::max(w1[3], w2[3]);
  const std::vector<int64_t>& d1 = c1.attr_ints("dilations");
  std::vector<int64_t> pads;
  for (const Node* c : {&c1, &c2}) {
    const Shape& w = g.value(c->inputs[1]).shape;
    if ((out->kh - w[2]) % 2 != 0 || (out->kw - w[3]) % 2 != 0) return false;
    // Zero taps added on each side move the window's first tap out by dilation * taps.
    const int64_t th = d1[0] * (out->kh - w[2]) / 2, tw = d1[1] * (out->kw - w[3]) / 2;
    const std::vector<int64_t>& p = c->attr_ints("pads");
    std::vector<int64_t> stacked = {p[0] + th, p[1] + tw, p[2] + th, p[3] + tw};
    if (pads.empty())
      pads = stacked;
    else if (pads != stacked)
      return false;
  }
  out->pads = pads;
  return true;
}

void run_cross(PlanState& st) {
  for (size_t i = 0; i < st.g.nodes.size(); ++i) {
    int ni = static_cast<int>(i);
    if (!is_join(st.g, ni) || st.node(ni).fuse_never) continue;
    int gid = st.group_of(ni);
    if (gid >= 0 && (st.groups[static_cast<size_t>(gid)].strategy != Strategy::kVertical ||
                     st.groups[static_cast<size_t>(gid)].nodes.front() != ni))
      continue;
    cross_at_join(st, ni);
  }
}

}  // namespace fusert
