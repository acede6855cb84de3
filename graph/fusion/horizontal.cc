// Horizontal fusion: shared-input siblings and same-level grouped launches.
#include "graph/fusion/horizontal.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "graph/fusion/cost_model.h"
#include "graph/printer.h"

namespace fusert {

namespace {

bool weight_is_initializer(const Graph& g, const Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue && g.value(n.inputs[i]).is_initializer;
}

// Refusal if merging `members` raises peak activation bytes beyond the option's fraction.
FusionDecision check_peak(const PlanState& st, const std::vector<int>& members) {
  int first = *std::min_element(members.begin(), members.end());
  std::vector<ValueId> early;
  std::vector<int> at;
  for (int m : members) {
    early.push_back(st.node(m).outputs[0]);
    at.push_back(first);
  }
  int64_t base = peak_live_bytes(st.g, {}, {});
  int64_t merged = peak_live_bytes(st.g, early, at);
  if (base > 0 && static_cast<double>(merged - base) > st.opt.max_peak_growth * static_cast<double>(base)) {
    return refuse("peak_memory") << "peak activation memory would grow from " << base << " to " << merged
                                 << " bytes (> " << static_cast<int>(st.opt.max_peak_growth * 100) << "%)";
  }
  return FusionDecision::yes();
}

bool hot(const PlanState& st, int ni) {
  if (st.opt.profile_ms.empty()) return false;
  std::vector<double> all;
  for (const auto& kv : st.opt.profile_ms) all.push_back(kv.second);
  std::sort(all.begin(), all.end());
  double p90 = all[static_cast<size_t>(0.9 * static_cast<double>(all.size() - 1))];
  auto it = st.opt.profile_ms.find(st.node(ni).name);
  return it != st.opt.profile_ms.end() && it->second > p90;
}

std::string names(const PlanState& st, const std::vector<int>& nodes) {
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ", ") + st.node(n).name;
  return s;
}

// Tries one candidate set; forms the group or records why not.
void try_merge(PlanState& st, std::vector<int> members, GroupKind kind, const std::string& note) {
  if (members.size() < 2) return;
  std::vector<int> cold;
  for (int m : members) {
    if (hot(st, m))
      st.reject(Strategy::kHorizontal, {m},
                refuse("profile_hot") << "'" << st.node(m).name << "' is a hot op (profile), left to vertical fusion");
    else
      cold.push_back(m);
  }
  members = cold;
  if (members.size() < 2) return;
  if (FusionDecision d =
          first_refusal([&] { return check_no_cycle(st.g, members); }, [&] { return check_peak(st, members); },
                        [&] { return backend_supports(st.opt, st.g, kind, members); });
      !d) {
    st.reject(Strategy::kHorizontal, members, d);
    return;
  }
  st.add_group(Strategy::kHorizontal, kind, members, note + " (" + names(st, members) + ")");
}

}  // namespace

std::string horizontal_signature(const Graph& g, int ni, bool include_input_shape) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  std::ostringstream os;
  if (n.op == OpKind::kGemm) {
    if (!weight_is_initializer(g, n, 1) || (n.inputs.size() > 2 && !weight_is_initializer(g, n, 2))) return "";
    if (n.attr_i("transA") != 0) return "";
    // transB and alpha fold into each member's [N, K] weights, beta and a per-column C into the
    // concatenated bias, any other C ([M,1], [M,N]) into the member's epilogue: only K must agree.
    os << "Gemm K=" << g.value(n.inputs[1]).shape[n.attr_i("transB") ? 1 : 0];
  } else if (n.op == OpKind::kConv) {
    const Shape& w = g.value(n.inputs[1]).shape;
    if (!weight_is_initializer(g, n, 1) || w[2] != 1 || w[3] != 1 || n.attr_i("group") != 1) return "";
    os << "Conv1x1 s=" << shape_str(n.attr_ints("strides")) << " p=" << shape_str(n.attr_ints("pads"))
       << " d=" << shape_str(n.attr_ints("dilations")) << " bias=" << (n.inputs.size() > 2) << " C=" << w[1];
  } else if (n.op == OpKind::kLayerNormalization && !include_input_shape) {
    return "";  // shared-input LayerNorms are not a pattern
  } else if (n.op == OpKind::kLayerNormalization) {
    os << "LN axis=" << n.attr_i("axis") << " eps=" << n.attr_f("epsilon") << " bias=" << (n.inputs.size() > 2);
  } else {
    return "";
  }
  if (include_input_shape) {
    os << " in=" << shape_str(g.value(n.inputs[0]).shape);
    if (n.op == OpKind::kGemm) os << " w=" << shape_str(g.value(n.inputs[1]).shape);
  }
  return os.str();
}

std::vector<int> node_levels(const Graph& g) {
  std::vector<int> level(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ValueId in : g.nodes[i].inputs) {
      if (in == kNoValue || g.value(in).producer < 0) continue;
      level[i] = std::max(level[i], level[static_cast<size_t>(g.value(in).producer)] +
                                        (is_alias_op(g.nodes[static_cast<size_t>(g.value(in).producer)].op) ? 0 : 1));
    }
  }
  return level;
}

void run_horizontal(PlanState& st) {
  const Graph& g = st.g;
  // 1. Siblings reading the same tensor as operand 0: one launch on concatenated weights.
  for (size_t v = 0; v < g.values.size(); ++v) {
    std::map<std::string, std::vector<int>> by_sig;
    for (int c : g.values[v].consumers) {
      const Node& n = st.node(c);
      if (n.inputs[0] != static_cast<ValueId>(v) || st.group_of(c) >= 0 || n.fuse_never) continue;
      std::string sig = horizontal_signature(g, c, false);
      if (!sig.empty() && std::find(by_sig[sig].begin(), by_sig[sig].end(), c) == by_sig[sig].end())
        by_sig[sig].push_back(c);
    }
    for (auto& [sig, members] : by_sig) {
      try_merge(st, members, GroupKind::kHorizontalGemm,
                "shared input '" + g.values[v].name + "', concatenated weights");
    }
  }
  // 2. Same-level, same-shape ops on different inputs: one grouped launch.
  std::vector<int> level = node_levels(g);
  std::map<std::string, std::vector<int>> by_sig;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int ni = static_cast<int>(i);
    if (st.group_of(ni) >= 0 || g.nodes[i].fuse_never) continue;
    std::string sig = horizontal_signature(g, ni, true);
    if (!sig.empty()) by_sig[sig + " level=" + std::to_string(level[i])].push_back(ni);
  }
  for (auto& [sig, members] : by_sig) {
    bool ln = st.node(members[0]).op == OpKind::kLayerNormalization;
    if (st.node(members[0]).op == OpKind::kConv) continue;  // grouped convs: not a pattern here
    try_merge(st, members, ln ? GroupKind::kGroupedRowNorm : GroupKind::kGroupedGemm,
              "same-level same-shape, grouped launch");
  }
}

}  // namespace fusert
