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
    case OpKind::kRange:  // a Range of constants folds at import: this one reads run-time values
    case OpKind::kDynamicSlice:
    case OpKind::kDynamicReshape:
    case OpKind::kDynamicExpand:
      return true;
    case OpKind::kTopK:
      return n.inputs.size() > 1 && n.inputs[1] != kNoValue && g.value(n.inputs[1]).data.empty();
    case OpKind::kLoop:  // its scan outputs' first dim is the iteration count
      return static_cast<int64_t>(n.outputs.size()) > n.attr_i("carried");
    default:
      return false;
  }
}

bool is_stage_boundary(const Graph& g, const Node& n) {
  return n.op == OpKind::kIf || n.op == OpKind::kLoop || is_data_dependent(g, n);
}

std::string loop_body_input(size_t k) {
  return k == 0 ? "#loop.iteration" : k == 1 ? "#loop.condition" : "#loop.carried" + std::to_string(k - 2);
}

bool is_shape_computed(const Node& n) { return n.op == OpKind::kDynamicReshape || n.op == OpKind::kDynamicExpand; }

namespace {

// The rank of a computed shape's output: its shape input's length (Expand: at least X's rank).
size_t computed_rank(const Graph& g, const Node& n) {
  const Shape& s = g.value(n.inputs[1]).shape;
  const size_t r = s.size() == 1 && s[0] >= 0 ? static_cast<size_t>(s[0]) : 0;
  return n.op == OpKind::kDynamicExpand ? std::max(r, g.value(n.inputs[0]).shape.size()) : r;
}

}  // namespace

std::vector<std::string> dd_dim_names(const Graph& g, const Node& n) {
  if (!is_shape_computed(n)) return {n.name + ".n"};
  std::vector<std::string> out;
  for (size_t i = 0; i < computed_rank(g, n); ++i) out.push_back(n.name + ".n" + std::to_string(i));
  return out;
}

int64_t dd_count_bound(const Graph& g, const Node& n) {
  constexpr int64_t kNoAxis = 2147483647;                                   // Unique / Compress without `axis`
  if (n.op == OpKind::kRange || n.op == OpKind::kDynamicExpand) return -1;  // no bound the shapes give
  if (n.op == OpKind::kDynamicReshape)  // each dim at most X's size (with allowzero, a 0 elsewhere lifts it)
    return n.attr_i("allowzero") ? -1 : shape_numel(g.value(n.inputs[0]).shape);
  if (n.op == OpKind::kLoop) {  // a constant trip count M
    const Value* m = n.inputs.empty() || n.inputs[0] == kNoValue ? nullptr : &g.value(n.inputs[0]);
    return m && !m->data.empty() && m->data.numel() == 1 && m->data.dtype() == DType::kI64
               ? std::max<int64_t>(0, m->data.i64()[0])
               : -1;
  }
  const Shape& x = g.value(n.inputs[0]).shape;
  int64_t axis = n.op == OpKind::kNonZero || n.op == OpKind::kNonMaxSuppression ? 0 : n.attr_i("axis");
  if (axis != kNoAxis && axis < 0) axis += static_cast<int64_t>(x.size());
  const bool whole = axis == kNoAxis || axis < 0 || axis >= static_cast<int64_t>(x.size());
  const int64_t len = whole ? shape_numel(x) : x[static_cast<size_t>(axis)];
  switch (n.op) {
    case OpKind::kNonZero:
      return shape_numel(x);
    case OpKind::kNonMaxSuppression: {  // batches x classes x boxes, or x the per-class limit
      const Shape& sc = g.value(n.inputs[1]).shape;
      if (x.size() != 3 || sc.size() != 3) return -1;
      int64_t per = x[1];
      const Value* lim = n.inputs.size() > 2 && n.inputs[2] != kNoValue ? &g.value(n.inputs[2]) : nullptr;
      if (lim && lim->data.numel() == 1 && lim->data.dtype() == DType::kI64)
        per = std::max<int64_t>(0, std::min(per, lim->data.i64()[0]));
      return x[0] * sc[1] * per;
    }
    case OpKind::kCompress: {
      const Shape& c = g.value(n.inputs[1]).shape;
      return c.size() == 1 ? std::min(c[0], len) : len;
    }
    case OpKind::kUnique:
    case OpKind::kTopK:
    case OpKind::kDynamicSlice:
      return len;
    default:
      return -1;
  }
}

namespace {

// The values a node whose shape is computed is shaped at by default: X's shape where the ranks
// agree; a Reshape to fewer dims keeps X's last ones and merges the leading ones into the first
// ([2, 3, 4] -> [6, 4]); to more dims (and Expand) X's dims right-aligned, 1 before them.
std::vector<int64_t> computed_defaults(const Graph& g, const Node& n) {
  const Shape& x = g.value(n.inputs[0]).shape;
  const size_t r = computed_rank(g, n);
  std::vector<int64_t> out(r, 1);
  if (r == 0) return out;
  if (n.op == OpKind::kDynamicReshape && r < x.size()) {
    const size_t lead = x.size() - r + 1;
    for (size_t i = 0; i < lead; ++i) out[0] *= x[i];
    for (size_t i = 1; i < r; ++i) out[i] = x[lead + i - 1];
    return out;
  }
  for (size_t i = 0; i < x.size() && i < r; ++i) out[r - 1 - i] = x[x.size() - 1 - i];
  return out;
}

}  // namespace

std::vector<SymbolicDim> shape_counts(const Graph& g, Node& n, const DimValues* at) {
  constexpr int64_t kDefault = 16;
  const std::vector<std::string> names = dd_dim_names(g, n);
  const std::vector<int64_t> dflt = is_shape_computed(n) ? computed_defaults(g, n) : std::vector<int64_t>{kDefault};
  const int64_t bound = dd_count_bound(g, n);
  // A bound of 0 (an empty X) bounds nothing: a Reshape of no elements takes any other dims.
  auto clamp = [bound](int64_t v) { return std::max<int64_t>(1, bound > 0 ? std::min(v, bound) : v); };
  std::vector<SymbolicDim> dims;
  std::vector<int64_t> values;
  for (size_t i = 0; i < names.size(); ++i) {
    SymbolicDim d;
    d.name = names[i];
    d.producer = n.name;
    d.data_dependent = d.open = true;
    d.min = 0;
    d.max = kMaxTensorElements;
    d.opt = clamp(dflt[i]);
    d.probe = d.opt > 1 ? d.opt - 1 : d.opt;  // a second value, for the constants folded from the count
    // A count of 0 asked for explicitly is kept: the empty shapes that follow it (runtime/staged.h).
    const bool asked = at && at->count(d.name);
    values.push_back(asked && at->at(d.name) == 0 ? 0 : asked ? clamp(at->at(d.name)) : d.opt);
    dims.push_back(d);
  }
  if (is_shape_computed(n)) {
    n.attrs["counts"].type = AttrType::kInts;
    n.attrs["counts"].ints = values;
  } else {
    n.attrs["count"].i = values[0];
  }
  return dims;
}

Stages split_stages(const Graph& g, const CountConstants& consts) {
  Stages st;
  st.node_stage.assign(g.nodes.size(), 0);
  std::map<std::string, int> dd_of;  // count dim -> its node
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!is_stage_boundary(g, g.nodes[i])) continue;
    st.dd_nodes.push_back(static_cast<int>(i));
    for (const std::string& d : dd_dim_names(g, g.nodes[i])) dd_of[d] = static_cast<int>(i);
  }
  // A node reading a constant folded from a count may precede that count's node in graph order
  // (nothing else links them): repeat until no stage moves (each pass can only push stages up).
  bool moved = true;
  for (size_t pass = 0; moved && pass < st.dd_nodes.size() + 2; ++pass) {
    moved = false;
    std::vector<int> level(g.values.size(), 0);
    for (const auto& [v, dims] : consts) {
      for (const std::string& d : dims) {
        auto it = dd_of.find(d);
        if (it != dd_of.end())
          level[static_cast<size_t>(v)] =
              std::max(level[static_cast<size_t>(v)], st.node_stage[static_cast<size_t>(it->second)] + 1);
      }
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      int l = 0;
      for (ValueId in : n.inputs)
        if (in != kNoValue) l = std::max(l, level[static_cast<size_t>(in)]);
      moved |= l != st.node_stage[i];
      st.node_stage[i] = l;
      for (ValueId out : n.outputs) level[static_cast<size_t>(out)] = is_stage_boundary(g, n) ? l + 1 : l;
    }
  }
  st.settled = !moved;  // a count read before its own op: no order of stages (a cycle)
  for (size_t i = 0; i < g.nodes.size(); ++i)
    st.count = std::max(st.count, st.node_stage[i] + (is_stage_boundary(g, g.nodes[i]) ? 2 : 1));
  return st;
}

Graph cut_stage(const Graph& g, const Stages& st, int s) {
  Graph out;
  out.name = g.name + (s ? " (stage " + std::to_string(s + 1) + ")" : "");
  out.source_file = g.source_file;
  std::map<ValueId, ValueId> ids;
  std::vector<char> inside(g.values.size(), 0);  // produced by a node of this stage
  auto in_stage = [&](size_t i) { return st.node_stage[i] == s && !is_stage_boundary(g, g.nodes[i]); };
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
