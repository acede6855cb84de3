// The planner pipeline: family detection, the strategy stages in order, single-op groups for
// the rest, and a topological order of the kernel groups.
#include "graph/fusion/planner.h"

#include "graph/fusion/attention_pattern.h"

#include <chrono>
#include <queue>

#include "graph/fusion/compound.h"
#include "graph/fusion/cross.h"
#include "graph/fusion/horizontal.h"
#include "graph/fusion/legality.h"
#include "graph/fusion/vertical.h"

namespace fusert {

namespace {

struct Stage {
  Strategy strategy;
  void (*run)(PlanState&);
};

std::vector<Stage> stages_for(const std::string& family) {
  const Stage v{Strategy::kVertical, run_vertical}, h{Strategy::kHorizontal, run_horizontal},
      c{Strategy::kCross, run_cross}, k{Strategy::kCompound, run_compound};
  if (family == "transformer") return {h, v, c, k};
  if (family == "cnn-mobile" || family == "cnn-residual") return {v, c, h, k};
  return {v, h, c, k};
}

// Kernel groups in an order where every group runs after the producers of its inputs.
Status order_groups(PlanState& st, FusionPlan* plan) {
  const Graph& g = st.g;
  std::vector<int> kernel;
  for (const FusionGroup& grp : st.groups)
    if (grp.children.empty() && !grp.nodes.empty()) kernel.push_back(grp.id);
  std::vector<int> indeg(st.groups.size(), 0);
  std::vector<std::vector<int>> succ(st.groups.size());
  for (int gid : kernel) {
    std::set<int> preds;
    for (int n : st.groups[static_cast<size_t>(gid)].nodes) {
      for (ValueId in : g.nodes[static_cast<size_t>(n)].inputs) {
        if (in == kNoValue || g.value(in).producer < 0) continue;
        int p = st.group_of(g.value(in).producer);
        if (p != gid) preds.insert(p);
      }
    }
    for (int p : preds) succ[static_cast<size_t>(p)].push_back(gid);
    indeg[static_cast<size_t>(gid)] = static_cast<int>(preds.size());
  }
  auto first_node = [&](int gid) { return st.groups[static_cast<size_t>(gid)].nodes.front(); };
  auto later = [&](int a, int b) { return first_node(a) > first_node(b); };
  std::priority_queue<int, std::vector<int>, decltype(later)> ready(later);
  for (int gid : kernel)
    if (indeg[static_cast<size_t>(gid)] == 0) ready.push(gid);
  std::vector<int> order;
  while (!ready.empty()) {
    int gid = ready.top();
    ready.pop();
    order.push_back(gid);
    for (int s : succ[static_cast<size_t>(gid)])
      if (--indeg[static_cast<size_t>(s)] == 0) ready.push(s);
  }
  if (order.size() != kernel.size()) return error(StatusCode::kInternal) << "fusion plan has a cycle between groups";
  // Renumber: kernel groups in execution order first, then compound regions.
  std::vector<int> new_id(st.groups.size(), -1);
  for (int gid : order) {
    new_id[static_cast<size_t>(gid)] = static_cast<int>(plan->groups.size());
    plan->groups.push_back(st.groups[static_cast<size_t>(gid)]);
  }
  for (const FusionGroup& grp : st.groups) {
    if (grp.children.empty()) continue;
    new_id[static_cast<size_t>(grp.id)] = static_cast<int>(plan->groups.size());
    plan->groups.push_back(grp);
  }
  for (FusionGroup& grp : plan->groups) {
    grp.id = new_id[static_cast<size_t>(grp.id)];
    if (grp.parent >= 0) grp.parent = new_id[static_cast<size_t>(grp.parent)];
    for (int& c : grp.children) c = new_id[static_cast<size_t>(c)];
  }
  plan->group_of_node.assign(g.nodes.size(), -1);
  for (const FusionGroup& grp : plan->groups) {
    if (!grp.children.empty()) continue;
    for (int n : grp.nodes) plan->group_of_node[static_cast<size_t>(n)] = grp.id;
  }
  return Status();
}

}  // namespace

std::string detect_family(const Graph& g) {
  bool attention = false, depthwise = false, conv = false, join = false;
  for (const Node& n : g.nodes) {
    if (n.op == OpKind::kSoftmax) {
      ValueId in = n.inputs[0];
      for (int hops = 0; hops < 3 && in != kNoValue && g.value(in).producer >= 0; ++hops) {
        const Node& p = g.nodes[static_cast<size_t>(g.value(in).producer)];
        // Attention scores are a product of two activations (Q K^T); a classifier head's
        // MatMul (+ Add) -> Softmax multiplies by a weight, as ONNX exports of CNNs have it.
        if (p.op == OpKind::kMatMul) {
          attention |= !g.value(p.inputs[0]).is_initializer && !g.value(p.inputs[1]).is_initializer;
          break;
        }
        in = p.inputs[0];
      }
    }
    if (n.op == OpKind::kConv) {
      conv = true;
      const Shape& x = g.value(n.inputs[0]).shape;
      depthwise |= n.attr_i("group") > 1 && n.attr_i("group") == x[1];
    }
    if (n.op == OpKind::kAdd && n.inputs.size() == 2 && g.value(n.inputs[0]).producer >= 0 &&
        g.value(n.inputs[1]).producer >= 0)
      join = true;
  }
  if (attention) return "transformer";
  if (depthwise) return "cnn-mobile";
  if (conv && join) return "cnn-residual";
  return "generic";
}

Result<FusionPlan> plan_fusion(const Graph& g, const FusionOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  FusionPlan plan;
  plan.family = detect_family(g);
  PlanState st(g, opt);
  for (const Stage& s : stages_for(plan.family)) {
    if (!st.enabled(s.strategy)) continue;
    size_t before = st.rejected.size();
    s.run(st);
    int groups = 0;
    for (const FusionGroup& grp : st.groups) groups += grp.strategy == s.strategy && !grp.nodes.empty() ? 1 : 0;
    plan.stage_log.push_back(std::string(strategy_name(s.strategy)) + ": " + std::to_string(groups) + " groups, " +
                             std::to_string(st.rejected.size() - before) + " refusals");
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (st.group_of(static_cast<int>(i)) >= 0) continue;
    const int id = st.add_group(Strategy::kNone, GroupKind::kSingle, {static_cast<int>(i)});
    // Capability for single ops: one the backend cannot run is planned on the host, up front.
    if (opt.supports && !is_alias_op(g.nodes[i].op)) {
      if (FusionDecision d = opt.supports(g, candidate_group(g, GroupKind::kSingle, {static_cast<int>(i)})); !d)
        st.groups[static_cast<size_t>(id)].host_reason = d.reason();
    }
  }
  FUSERT_RETURN_IF_ERROR(order_groups(st, &plan));
  plan.rejected = st.rejected;
  plan.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

Status rebind_plan(const Graph& g, FusionPlan* plan) {
  for (FusionGroup& grp : plan->groups) {
    if (!grp.attention) continue;
    int softmax = -1;
    for (int n : grp.nodes) softmax = g.nodes[static_cast<size_t>(n)].op == OpKind::kSoftmax ? n : softmax;
    AttentionMatch m;
    if (softmax < 0 || !match_attention(g, softmax, &m) || m.nodes != grp.attention->nodes) {
      return error(StatusCode::kUnsupported) << "attention group " << grp.name << " does not match at these shapes";
    }
    grp.attention = std::make_shared<const AttentionMatch>(m);
  }
  return Status();
}

}  // namespace fusert
