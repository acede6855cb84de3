// Text dump and DOT export of a graph.
#include "graph/printer.h"

#include <sstream>

namespace fusert {

std::string attr_to_string(const AttrValue& a) {
  std::ostringstream os;
  switch (a.type) {
    case AttrType::kInt:
      os << a.i;
      break;
    case AttrType::kFloat:
      os << a.f;
      break;
    case AttrType::kString:
      os << '"' << a.s << '"';
      break;
    case AttrType::kInts:
      os << shape_str(a.ints);
      break;
    case AttrType::kFloats:
      os << "[";
      for (size_t i = 0; i < a.floats.size(); ++i) os << (i ? ", " : "") << a.floats[i];
      os << "]";
      break;
  }
  return os.str();
}

static std::string value_ref(const Graph& g, ValueId id) {
  if (id == kNoValue) return "<none>";
  const Value& v = g.value(id);
  return v.name + (v.shape_known ? shape_str(v.shape) : std::string("[?]"));
}

std::string dump_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph " << g.name << " (" << g.nodes.size() << " nodes)\n";
  for (ValueId id : g.inputs) os << "  input  " << value_ref(g, id) << " " << dtype_name(g.value(id).dtype) << "\n";
  for (ValueId id : g.initializers()) {
    const Value& v = g.value(id);
    os << "  " << (v.is_constant ? "const  " : "weight ") << v.name << shape_str(v.shape);
    if (!v.is_constant) os << " init=" << init_kind_name(v.init);
    os << "\n";
  }
  for (const Node& n : g.nodes) {
    os << "  node   " << n.name << " = " << op_name(n.op) << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << value_ref(g, n.inputs[i]);
    os << ") -> ";
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : "") << value_ref(g, n.outputs[i]);
    const OpInfo& info = op_info(n.op);
    std::string attrs;
    for (const auto& [name, a] : n.attrs) {
      const AttrSchema* s = info.find_attr(name);
      if (s && !s->required && attr_to_string(s->default_value) == attr_to_string(a)) continue;
      attrs += (attrs.empty() ? "" : ", ") + name + "=" + attr_to_string(a);
    }
    if (!attrs.empty()) os << " {" << attrs << "}";
    if (n.fuse_never) os << " fuse=never";
    os << "\n";
  }
  for (ValueId id : g.outputs) os << "  output " << value_ref(g, id) << "\n";
  return os.str();
}

static std::string dot_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

std::string graph_to_dot(const Graph& g) {
  std::ostringstream os;
  os << "digraph \"" << dot_escape(g.name) << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n";
  for (ValueId id : g.inputs)
    os << "  \"v:" << dot_escape(g.value(id).name) << "\" [shape=ellipse, label=\"" << dot_escape(g.value(id).name)
       << "\"];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    os << "  n" << i << " [label=\"" << dot_escape(n.name) << "\\n" << op_name(n.op) << "\"];\n";
  }
  for (ValueId id : g.outputs)
    os << "  \"v:" << dot_escape(g.value(id).name) << "\" [shape=ellipse, label=\"" << dot_escape(g.value(id).name)
       << "\"];\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ValueId in : g.nodes[i].inputs) {
      if (in == kNoValue || g.value(in).is_initializer) continue;
      const Value& v = g.value(in);
      std::string from = v.producer >= 0 ? "n" + std::to_string(v.producer) : "\"v:" + dot_escape(v.name) + "\"";
      os << "  " << from << " -> n" << i << " [label=\"" << dot_escape(shape_str(v.shape)) << "\"];\n";
    }
  }
  for (ValueId id : g.outputs) {
    const Value& v = g.value(id);
    if (v.producer >= 0) os << "  n" << v.producer << " -> \"v:" << dot_escape(v.name) << "\";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace fusert
