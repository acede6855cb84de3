// Legality predicates and the planner state's bookkeeping.
#include "graph/fusion/legality.h"

#include <algorithm>

#include "graph/fusion/cost_model.h"

namespace fusert {

int PlanState::add_group(Strategy s, GroupKind kind, std::vector<int> nodes, const std::string& note) {
  std::sort(nodes.begin(), nodes.end());
  FusionGroup grp;
  grp.id = static_cast<int>(groups.size());
  grp.strategy = s;
  grp.kind = kind;
  grp.nodes = nodes;
  grp.outputs = group_outputs(g, nodes);
  grp.bytes_saved = bytes_saved(g, nodes, grp.outputs);
  int kernels_before = 0;
  for (int ni : nodes) kernels_before += is_alias_op(node(ni).op) ? 0 : 1;
  grp.launches_saved = std::max(0, kernels_before - 1);
  grp.register_estimate = register_estimate(g, nodes);
  if (kind == GroupKind::kHorizontalGemm || kind == GroupKind::kGroupedGemm || kind == GroupKind::kGroupedRowNorm) {
    // Members run one after another per tile: pressure is the largest member's, and a shared
    // input is read once instead of once per member.
    int anchors = 0;
    for (int ni : nodes)
      anchors +=
          op_info(node(ni).op).pattern == PatternKind::kAnchor || node(ni).op == OpKind::kLayerNormalization ? 1 : 0;
    grp.register_estimate /= std::max(anchors, 1);
    if (kind == GroupKind::kHorizontalGemm && anchors > 1)
      grp.bytes_saved += (anchors - 1) * value_bytes(g, node(nodes.front()).inputs[0]);
  }
  grp.note = note;
  grp.name = std::string(strategy_name(s)) + ":" + node(nodes.front()).name;
  if (nodes.size() > 1) grp.name += "+" + std::to_string(nodes.size() - 1);
  for (int ni : nodes) claim[static_cast<size_t>(ni)] = grp.id;
  groups.push_back(std::move(grp));
  return groups.back().id;
}

void PlanState::dissolve(int id) {
  FusionGroup& grp = groups[static_cast<size_t>(id)];
  for (int ni : grp.nodes)
    if (claim[static_cast<size_t>(ni)] == id) claim[static_cast<size_t>(ni)] = -1;
  grp.nodes.clear();
  grp.outputs.clear();
}

void PlanState::reject(Strategy s, std::vector<int> nodes, const FusionDecision& d) {
  Rejection r;
  r.strategy = s;
  r.nodes = std::move(nodes);
  r.key = d.key();
  r.reason = "not fused: " + d.reason();
  rejected.push_back(std::move(r));
}

FusionDecision check_single_use(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.is_graph_output) return refuse("graph_output") << "'" << val.name << "' is a graph output";
  if (val.consumers.size() != 1)
    return refuse("multi_use") << "'" << val.name << "' has " << val.consumers.size() << " consumers";
  return FusionDecision::yes();
}

FusionDecision check_no_cycle(const Graph& g, const std::vector<int>& nodes) {
  std::set<int> members(nodes.begin(), nodes.end());
  std::vector<int> stack;
  std::vector<bool> seen(g.nodes.size(), false);
  auto push_consumers = [&](int ni) {
    for (ValueId v : g.nodes[static_cast<size_t>(ni)].outputs) {
      for (int c : g.value(v).consumers) {
        if (!members.count(c) && !seen[static_cast<size_t>(c)]) {
          seen[static_cast<size_t>(c)] = true;
          stack.push_back(c);
        }
      }
    }
  };
  for (int ni : nodes) push_consumers(ni);
  while (!stack.empty()) {
    int x = stack.back();
    stack.pop_back();
    for (ValueId v : g.nodes[static_cast<size_t>(x)].outputs) {
      for (int c : g.value(v).consumers) {
        if (members.count(c)) {
          return refuse("cycle") << "merging would create a cycle through '" << g.nodes[static_cast<size_t>(x)].name
                                 << "'";
        }
      }
    }
    push_consumers(x);
  }
  return FusionDecision::yes();
}

FusionDecision check_fusible(const PlanState& st, int ni) {
  const Node& n = st.node(ni);
  if (n.fuse_never) return refuse("hint") << "'" << n.name << "' has the hint fuse: never";
  if (st.group_of(ni) >= 0)
    return refuse("claimed") << "'" << n.name << "' is already in "
                             << st.groups[static_cast<size_t>(st.group_of(ni))].name;
  return FusionDecision::yes();
}

bool is_epilogue_op(const Graph& g, int ni, ValueId running) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  PatternKind p = op_info(n.op).pattern;
  if (p != PatternKind::kElementwise && p != PatternKind::kBroadcast) return false;
  if (n.op == OpKind::kBatchNormalization || n.op == OpKind::kCast || n.op == OpKind::kWhere || is_alias_op(n.op))
    return false;
  const Value& out = g.value(n.outputs[0]);
  if (out.dtype != DType::kF32) return false;
  // The running value keeps its shape through the chain: an operand that broadcasts the result
  // up to a larger shape is not an epilogue (the kernel writes one value per running element).
  if (running != kNoValue) return g.value(running).shape == out.shape && g.value(running).dtype == DType::kF32;
  for (ValueId in : n.inputs)
    if (in != kNoValue && g.value(in).shape == out.shape) return true;
  return false;
}

bool is_join(const Graph& g, int ni) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  if (op_info(n.op).pattern != PatternKind::kBroadcast || n.inputs.size() != 2) return false;
  if (n.op == OpKind::kBatchNormalization) return false;
  for (ValueId in : n.inputs) {
    if (in == kNoValue || g.value(in).producer < 0) return false;
  }
  return true;
}

FusionGroup candidate_group(const Graph& g, GroupKind kind, std::vector<int> nodes, int join) {
  std::sort(nodes.begin(), nodes.end());
  FusionGroup grp;
  grp.kind = kind;
  grp.nodes = std::move(nodes);
  grp.outputs = group_outputs(g, grp.nodes);
  grp.join = join;
  grp.name = "candidate";
  return grp;
}

FusionDecision backend_supports(const FusionOptions& opt, const Graph& g, GroupKind kind, const std::vector<int>& nodes,
                                int join) {
  if (!opt.supports) return FusionDecision::yes();
  return backend_supports(opt, g, candidate_group(g, kind, nodes, join));
}

FusionDecision backend_supports(const FusionOptions& opt, const Graph& g, const FusionGroup& candidate) {
  if (!opt.supports) return FusionDecision::yes();
  FusionDecision d = opt.supports(g, candidate);
  if (d) return d;
  return refuse("backend") << opt.backend << " cannot run this " << group_kind_name(candidate.kind)
                           << " group as one launch: " << d.reason();
}

}  // namespace fusert
