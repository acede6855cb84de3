// Vertical fusion: greedy chains from heads in topological (or profile-hotness) order.
#include "graph/fusion/vertical.h"

#include <algorithm>

#include "graph/fusion/cost_model.h"
#include "graph/fusion/register_pressure.h"

namespace fusert {

namespace {

enum class Phase { kEpilogue, kAfterNorm, kDone };

bool is_row_norm(const Graph& g, int ni) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  if (n.op != OpKind::kLayerNormalization && n.op != OpKind::kSoftmax) return false;
  size_t rank = g.value(n.inputs[0]).shape.size();
  return n.attr_i("axis") == static_cast<int64_t>(rank) - 1;
}

// Kind of the group a chain head starts, or false if `ni` cannot head a chain.
bool head_kind(const Graph& g, int ni, GroupKind* kind) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  if (op_info(n.op).pattern == PatternKind::kAnchor)
    *kind = GroupKind::kAnchorEpilogue;
  else if (is_row_norm(g, ni))
    *kind = GroupKind::kRowNorm;
  else if (is_epilogue_op(g, ni) || (is_join(g, ni) && g.value(n.outputs[0]).dtype == DType::kF32))
    *kind = GroupKind::kElementwise;
  else
    return false;
  return true;
}

// A join that continues an elementwise chain: its other input is one the chain's head reads
// (computed before the chain), as in the gated residual x + x * gate(x) of squeeze-and-excitation
// FPNs, where x is also read by the gate and so joins no anchor's epilogue.
bool joins_head_input(const Graph& g, int c, ValueId cur, const Node& head, GroupKind kind) {
  if (kind != GroupKind::kElementwise) return false;
  const Node& n = g.nodes[static_cast<size_t>(c)];
  const ValueId other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
  if (n.inputs[0] != cur && n.inputs[1] != cur) return false;
  if (g.value(other).shape != g.value(n.outputs[0]).shape) return false;
  return std::find(head.inputs.begin(), head.inputs.end(), other) != head.inputs.end();
}

// Can `c` extend a chain of `kind` in `phase`? Updates kind/phase when it does.
bool accepts(const Graph& g, int c, ValueId cur, int anchor_op_conv, const Node& head, GroupKind* kind, Phase* phase) {
  const Node& n = g.nodes[static_cast<size_t>(c)];
  if (*phase == Phase::kDone) return false;
  if (is_join(g, c)) return *phase == Phase::kEpilogue && joins_head_input(g, c, cur, head, *kind);
  if (is_epilogue_op(g, c, cur)) return true;
  if (*phase != Phase::kEpilogue) return false;
  if (n.op == OpKind::kGlobalAveragePool && *kind == GroupKind::kAnchorEpilogue && anchor_op_conv) {
    *phase = Phase::kDone;
    return true;
  }
  if (is_row_norm(g, c) && n.op == OpKind::kLayerNormalization &&
      (*kind == GroupKind::kAnchorEpilogue && !anchor_op_conv)) {
    *kind = GroupKind::kGemmLayerNorm;
    *phase = Phase::kAfterNorm;
    return true;
  }
  if (is_row_norm(g, c) && *kind == GroupKind::kElementwise) {
    *kind = GroupKind::kRowNorm;
    *phase = Phase::kAfterNorm;
    return true;
  }
  return false;
}

// A row-norm kernel indexes its prologue/post operands per element of the normalised tensor:
// each must have the running value's shape or be a scalar (a broadcast operand is left out by
// cutting the chain before the norm).
void cut_row_norm_chain(PlanState& st, std::vector<int>* chain, GroupKind* kind) {
  const Graph& g = st.g;
  size_t norm = 0;
  while (norm < chain->size() && st.node((*chain)[norm]).op != OpKind::kLayerNormalization &&
         st.node((*chain)[norm]).op != OpKind::kSoftmax)
    ++norm;
  for (size_t i = 0; i < chain->size(); ++i) {
    const Node& n = st.node((*chain)[i]);
    if (op_info(n.op).pattern == PatternKind::kAnchor || n.op == OpKind::kLayerNormalization ||
        n.op == OpKind::kSoftmax)
      continue;
    if (op_info(n.op).pattern != PatternKind::kBroadcast) continue;
    const Shape& out = g.value(n.outputs[0]).shape;
    for (ValueId in : n.inputs) {
      if (in == kNoValue || g.value(in).shape == out || shape_numel(g.value(in).shape) == 1) continue;
      st.reject(Strategy::kVertical, *chain,
                refuse("broadcast_operand")
                    << "'" << n.name << "' broadcasts '" << g.value(in).name << "' " << shape_str(g.value(in).shape)
                    << " inside a row-norm kernel; chain cut before '" << st.node((*chain)[norm]).name << "'");
      chain->resize(norm);
      *kind = op_info(st.node(chain->front()).op).pattern == PatternKind::kAnchor ? GroupKind::kAnchorEpilogue
                                                                                  : GroupKind::kElementwise;
      return;
    }
  }
}

// The rules a chain grown by one op (grown.back()) into a group of `next_kind` must pass, in
// order: register pressure (estimated), no cycle, the backend's capability, measured registers.
FusionDecision check_grow(PlanState& st, const std::vector<int>& grown, GroupKind next_kind, GroupKind kind) {
  return first_refusal([&] { return check_register_estimate(st.opt, st.g, grown); },
                       [&] { return check_no_cycle(st.g, grown); },
                       [&] { return backend_supports(st.opt, st.g, next_kind, grown); },
                       [&] { return check_measured_registers(st.opt, st.g, grown, next_kind, kind); });
}

void grow_chain(PlanState& st, int head) {
  const Graph& g = st.g;
  GroupKind kind;
  if (!head_kind(g, head, &kind)) return;
  Phase phase = kind == GroupKind::kRowNorm ? Phase::kAfterNorm : Phase::kEpilogue;
  const bool conv = st.node(head).op == OpKind::kConv;
  if (conv && g.value(st.node(head).inputs[1]).shape[0] == 0) return;
  std::vector<int> chain = {head};
  ValueId cur = st.node(head).outputs[0];
  for (;;) {
    const Value& v = g.value(cur);
    if (v.consumers.empty()) break;
    int c = v.consumers[0];
    GroupKind next_kind = kind;
    Phase next_phase = phase;
    bool candidate = v.consumers.size() == 1 && accepts(g, c, cur, conv, st.node(head), &next_kind, &next_phase);
    FusionDecision d = check_single_use(g, cur);
    if (!d) {
      // Only a refusal worth reporting when the consumer would otherwise have been fused.
      for (int other : v.consumers) {
        GroupKind k2 = kind;
        Phase p2 = phase;
        if (accepts(g, other, cur, conv, st.node(head), &k2, &p2) && st.group_of(other) < 0) {
          st.reject(Strategy::kVertical, {chain.back(), other}, d);
          break;
        }
      }
      break;
    }
    if (!candidate) break;
    if (FusionDecision f = check_fusible(st, c); !f) {
      st.reject(Strategy::kVertical, {chain.back(), c}, f);
      break;
    }
    std::vector<int> grown = chain;
    grown.push_back(c);
    if (FusionDecision f = check_grow(st, grown, next_kind, kind); !f) {
      st.reject(Strategy::kVertical, grown, f);
      break;
    }
    chain = grown;
    kind = next_kind;
    phase = next_phase;
    cur = st.node(c).outputs[0];
  }
  if (kind == GroupKind::kRowNorm || kind == GroupKind::kGemmLayerNorm) cut_row_norm_chain(st, &chain, &kind);
  if (chain.size() < 2) return;
  // The cut may leave a chain of another kind than the one the backend was asked about.
  if (FusionDecision f = backend_supports(st.opt, g, kind, chain); !f) {
    st.reject(Strategy::kVertical, chain, f);
    return;
  }
  st.add_group(Strategy::kVertical, kind, chain);
}

// A Conv node that is a pointwise (1x1, stride 1, no pads, group 1) or a depthwise (one group
// per input channel, as many outputs) convolution with constant weights.
bool conv_of(const Graph& g, const Node& n, bool pointwise) {
  if (n.op != OpKind::kConv || n.inputs.size() < 2 || g.value(n.inputs[1]).data.empty()) return false;
  const Shape& w = g.value(n.inputs[1]).shape;
  const int64_t group = n.attr_i("group");
  if (!pointwise) return group > 1 && group == g.value(n.inputs[0]).shape[1] && w[0] == group && w[1] == 1;
  auto all = [&](const char* a, int64_t v) {
    for (int64_t x : n.attr_ints(a))
      if (x != v) return false;
    return true;
  };
  return group == 1 && w.size() == 4 && w[2] == 1 && w[3] == 1 && all("strides", 1) && all("pads", 0);
}

// The nodes of the vertical part headed by `head`: its group (an anchor+epilogue chain without
// a pooling tail) or the unclaimed conv alone; empty when it is neither.
std::vector<int> part_of(const PlanState& st, int head, int* gid) {
  *gid = st.group_of(head);
  if (*gid < 0) return st.node(head).fuse_never ? std::vector<int>{} : std::vector<int>{head};
  const FusionGroup& grp = st.groups[static_cast<size_t>(*gid)];
  if (grp.kind != GroupKind::kAnchorEpilogue || grp.nodes.front() != head) return {};
  for (int n : grp.nodes)
    if (st.node(n).op == OpKind::kGlobalAveragePool) return {};
  return grp.nodes;
}

// Block fusion of inverted residuals (MobileNetV2, EfficientNet): the 1x1 expansion with its
// chain and the depthwise conv that alone consumes it, with its chain, become one vertical
// group: the expanded [N, 6C, H, W] map is no activation buffer of the plan (the kernel keeps it
// in registers and cache, or in its own scratch). A backend without such a kernel refuses it
// (capability) and the two groups stay.
void merge_pointwise_depthwise(PlanState& st) {
  const Graph& g = st.g;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!conv_of(g, g.nodes[i], true)) continue;
    int ga = -1, gb = -1;
    std::vector<int> a = part_of(st, static_cast<int>(i), &ga);
    if (a.empty()) continue;
    const ValueId mid = st.node(a.back()).outputs[0];
    if (g.value(mid).consumers.size() != 1) continue;
    const int dw = g.value(mid).consumers[0];
    if (!conv_of(g, st.node(dw), false) || st.node(dw).inputs[0] != mid) continue;
    std::vector<int> b = part_of(st, dw, &gb);
    if (b.empty()) continue;
    std::vector<int> block = a;
    block.insert(block.end(), b.begin(), b.end());
    FusionDecision d = check_single_use(g, mid);
    if (d) d = check_no_cycle(g, block);
    const int regs = register_estimate(g, block);
    if (d && !st.opt.measure_registers && block.size() >= 5 && regs > st.opt.register_budget) {
      d = refuse("register_pressure") << "register pressure: block of depth " << block.size() << " needs ~" << regs
                                      << " registers > budget " << st.opt.register_budget;
    }
    if (d) d = backend_supports(st.opt, g, GroupKind::kPointwiseDepthwise, block);
    if (!d) {
      st.reject(Strategy::kVertical, block, d);
      continue;
    }
    if (ga >= 0) st.dissolve(ga);
    if (gb >= 0) st.dissolve(gb);
    st.add_group(Strategy::kVertical, GroupKind::kPointwiseDepthwise, block,
                 "1x1 + depthwise block: the expanded map is no activation buffer");
  }
}

}  // namespace

void run_vertical(PlanState& st) {
  std::vector<int> order(st.g.nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (!st.opt.profile_ms.empty()) {  // profile-guided: hot ops drive vertical fusion first
    auto ms = [&](int i) {
      auto it = st.opt.profile_ms.find(st.node(i).name);
      return it == st.opt.profile_ms.end() ? 0.0 : it->second;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return ms(a) > ms(b); });
  }
  for (int ni : order) {
    if (st.group_of(ni) >= 0 || st.node(ni).fuse_never) continue;
    grow_chain(st, ni);
  }
  merge_pointwise_depthwise(st);
}

}  // namespace fusert
