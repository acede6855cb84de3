// Data-dependent ops and execution stages (graph/data_dependent.h).
#include "graph/data_dependent.h"

#include <algorithm>
#include <map>

namespace fusert {

bool is_data_dependent(const Graph& g, const Node& n) {
  switch (n.op) {
    case OpKind::kNonZero:
    case OpKind::kNonMaxSuppression:
    case OpKind::kUnique:
    case OpKind::kCompress:
      return true;
    case OpKind::kTopK:
      return n.inputs.size() > 1 && n.inputs[1] != kNoValue && g.value(n.inputs[1]).data.empty();
    default:
      return false;
  }
}

std::string dd_dim_name(const Node& n) { return n.name + ".n"; }

int64_t dd_count_bound(const Graph& g, const Node& n) {
  if (n.op != OpKind::kTopK) return -1;
  const Shape& x = g.value(n.inputs[0]).shape;
  int64_t axis = n.attr_i("axis");
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  return axis >= 0 && axis < static_cast<int64_t>(x.size()) ? x[static_cast<size_t>(axis)] : -1;
}

Stages split_stages(const Graph& g) {
  Stages st;
  std::vector<int> level(g.values.size(), 0);
  st.node_stage.assign(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    int l = 0;
    for (ValueId in : n.inputs)
      if (in != kNoValue) l = std::max(l, level[static_cast<size_t>(in)]);
    st.node_stage[i] = l;
    const bool dd = is_data_dependent(g, n);
    if (dd) st.dd_nodes.push_back(static_cast<int>(i));
    for (ValueId out : n.outputs) level[static_cast<size_t>(out)] = dd ? l + 1 : l;
    st.count = std::max(st.count, dd ? l + 2 : l + 1);
  }
  return st;
}

Graph cut_stage(const Graph& g, const Stages& st, int s) {
  Graph out;
  out.name = g.name + (s ? " (stage " + std::to_string(s + 1) + ")" : "");
  out.source_file = g.source_file;
  std::map<ValueId, ValueId> ids;
  std::vector<char> inside(g.values.size(), 0);  // produced by a node of this stage
  auto in_stage = [&](size_t i) { return st.node_stage[i] == s && !is_data_dependent(g, g.nodes[i]); };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!in_stage(i)) continue;
    for (ValueId o : g.nodes[i].outputs) inside[static_cast<size_t>(o)] = 1;
  }
  auto map_value = [&](ValueId id) -> ValueId {
    if (id == kNoValue) return kNoValue;
    auto it = ids.find(id);
    if (it != ids.end()) return it->second;
    const Value& src = g.value(id);
    const ValueId nid = out.add_value(src.name);
    Value& v = out.value(nid);
    v = src;
    v.consumers.clear();
    v.producer = -1;
    v.is_graph_output = false;
    if (!inside[static_cast<size_t>(id)] && !src.is_constant && !src.is_initializer) {  // read from outside
      v.is_graph_input = true;
      out.inputs.push_back(nid);
    } else {
      v.is_graph_input = false;
    }
    ids[id] = nid;
    return nid;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!in_stage(i)) continue;
    Node n = g.nodes[i];
    for (ValueId& in : n.inputs) in = map_value(in);
    for (ValueId& o : n.outputs) o = map_value(o);
    out.nodes.push_back(std::move(n));
  }
  // Outputs: what the graph outputs, or a node outside this stage reads.
  std::vector<char> read_outside(g.values.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (in_stage(i)) continue;
    for (ValueId in : g.nodes[i].inputs)
      if (in != kNoValue) read_outside[static_cast<size_t>(in)] = 1;
  }
  for (ValueId o : g.outputs) read_outside[static_cast<size_t>(o)] = 1;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!in_stage(i)) continue;
    for (ValueId o : g.nodes[i].outputs) {
      if (o == kNoValue || !read_outside[static_cast<size_t>(o)]) continue;
      const ValueId nid = ids.at(o);
      if (out.value(nid).is_graph_output) continue;
      out.value(nid).is_graph_output = true;
      out.outputs.push_back(nid);
    }
  }
  out.rebuild_links();
  return out;
}

}  // namespace fusert
