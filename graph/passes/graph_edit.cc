// Graph-editing helpers shared by the passes.
#include "graph/passes/graph_edit.h"

namespace fusert {

void erase_nodes(Graph& g, const std::vector<bool>& erase) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!erase[i]) kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  g.rebuild_links();
}

std::string unique_value_name(const Graph& g, const std::string& base) {
  if (g.find_value(base) == kNoValue) return base;
  for (int k = 2;; ++k) {
    std::string s = base + "_" + std::to_string(k);
    if (g.find_value(s) == kNoValue) return s;
  }
}

ValueId add_initializer(Graph& g, const std::string& name, Tensor data, bool constant, const SourceLoc& loc) {
  FUSERT_CHECK(g.find_value(name) == kNoValue) << "value " << name << " already exists";
  ValueId id = g.add_value(name);
  Value& v = g.value(id);
  v.dtype = data.dtype();
  v.shape = data.shape();
  v.shape_known = true;
  v.is_initializer = true;
  v.is_constant = constant;
  v.data = std::move(data);
  v.loc = loc;
  return id;
}

const Tensor* bound_data(const Graph& g, ValueId v) {
  if (v == kNoValue) return nullptr;
  const Value& val = g.value(v);
  if (!val.is_initializer || val.is_graph_input || val.data.empty()) return nullptr;
  return &val.data;
}

const Tensor* fixed_data(const Graph& g, ValueId v) {
  return v == kNoValue || g.value(v).symbolic ? nullptr : bound_data(g, v);
}

bool scalar_constant(const Graph& g, ValueId v, double* out) {
  const Tensor* t = fixed_data(g, v);
  if (!t || t->dtype() != DType::kF32 || t->numel() != 1) return false;
  *out = t->f32()[0];
  return true;
}

Node make_node(OpKind op, const std::string& name, const SourceLoc& loc) {
  Node n;
  n.op = op;
  n.name = name;
  n.loc = loc;
  for (const AttrSchema& a : op_info(op).attrs) n.attrs[a.name] = a.default_value;
  return n;
}

}  // namespace fusert
