// ONNX subgraphs inlined or made models of their own (graph/onnx/onnx_subgraph.h).
#include "graph/onnx/onnx_subgraph.h"

#include <map>
#include <set>

#include "graph/onnx/onnx_import.h"

namespace fusert::onnx_import {

void rename_reads(onnx::NodeProto* n, const std::map<std::string, std::string>& names) {
  for (auto& in : *n->mutable_input()) {
    auto it = names.find(in);
    if (it != names.end()) in = it->second;
  }
  for (auto& a : *n->mutable_attribute()) {
    auto nested = [&](onnx::GraphProto* gp) {  // a name the nested graph defines shadows the outer one
      std::map<std::string, std::string> outer = names;
      for (const auto& i : gp->input()) outer.erase(i.name());
      for (const auto& t : gp->initializer()) outer.erase(t.name());
      for (const auto& m : gp->node())
        for (const std::string& o : m.output()) outer.erase(o);
      for (auto& m : *gp->mutable_node()) rename_reads(&m, outer);
    };
    if (a.has_g()) nested(a.mutable_g());
    for (auto& sub : *a.mutable_graphs()) nested(&sub);
  }
}

namespace {

void outer_refs(const onnx::GraphProto& gp, std::set<std::string> local, std::vector<std::string>* out,
                std::set<std::string>* seen) {
  for (const auto& t : gp.initializer()) local.insert(t.name());
  for (const auto& i : gp.input()) local.insert(i.name());
  for (const auto& n : gp.node()) {
    for (const std::string& in : n.input()) {
      if (!in.empty() && !local.count(in) && seen->insert(in).second) out->push_back(in);
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) outer_refs(a.g(), local, out, seen);
      for (const auto& sub : a.graphs()) outer_refs(sub, local, out, seen);
    }
    for (const std::string& o : n.output()) local.insert(o);
  }
}

}  // namespace

void subgraph_reads(const onnx::GraphProto& gp, std::vector<std::string>* out, std::set<std::string>* seen) {
  outer_refs(gp, {}, out, seen);
}

int onnx_elem_type(DType t) {
  switch (t) {
    case DType::kI64:
      return onnx::TensorProto::INT64;
    case DType::kI32:
      return onnx::TensorProto::INT32;
    case DType::kBool:
      return onnx::TensorProto::BOOL;
    case DType::kI8:
      return onnx::TensorProto::INT8;
    case DType::kU8:
      return onnx::TensorProto::UINT8;
    default:
      return onnx::TensorProto::FLOAT;
  }
}

std::string subgraph_model(const Graph& g, const onnx::GraphProto& gp, const std::vector<std::string>& outer,
                           int64_t opset, const std::string& name) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  onnx::GraphProto* b = m.mutable_graph();
  *b = gp;
  b->set_name(name);
  for (const std::string& v : outer) {
    const Value& val = g.value(g.find_value(v));
    if (!val.data.empty()) {
      onnx::TensorProto* t = b->add_initializer();
      t->set_name(v);
      t->set_data_type(onnx_elem_type(val.dtype));
      for (int64_t d : val.shape) t->add_dims(d);
      t->set_raw_data(std::string(static_cast<const char*>(val.data.raw()), val.data.nbytes()));
      continue;
    }
    onnx::ValueInfoProto* in = b->add_input();
    in->set_name(v);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_elem_type(val.dtype));
    for (size_t d = 0; d < val.shape.size(); ++d)
      tt->mutable_shape()->add_dim()->set_dim_param(v + "." + std::to_string(d));
  }
  return m.SerializeAsString();
}

std::map<std::string, Shape> outer_shapes(const Graph& g, const std::vector<std::string>& outer) {
  std::map<std::string, Shape> shapes;
  for (const std::string& v : outer) {
    const Value& val = g.value(g.find_value(v));
    if (val.data.empty()) shapes[v] = val.shape;
  }
  return shapes;
}

Result<std::vector<std::pair<Shape, DType>>> subgraph_outputs(const std::string& bytes,
                                                              const std::map<std::string, Shape>& shapes,
                                                              const std::string& where, bool* data_dependent) {
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_onnx_bytes(bytes, where, shapes));
  if (data_dependent) {
    *data_dependent = false;
    for (const SymbolicDim& d : spec.dims) *data_dependent |= d.data_dependent;
  }
  std::vector<std::pair<Shape, DType>> out;
  for (ValueId id : spec.graph.outputs) out.push_back({spec.graph.value(id).shape, spec.graph.value(id).dtype});
  return out;
}

std::vector<std::string> inline_graph(const Graph& g, const onnx::GraphProto& gp, const std::string& prefix,
                                      Expansion* e, std::map<std::string, std::string> names) {
  const auto rename = [&](const std::string& v) {
    if (!v.empty() && !names.count(v)) names[v] = fresh_name(g, *e, prefix + v);
    return v.empty() ? v : names[v];
  };
  for (const auto& t : gp.initializer()) {
    onnx::NodeProto c = make_node("Constant", prefix + t.name(), {}, {rename(t.name())});
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = t;
    e->nodes.push_back(c);
  }
  for (const auto& np : gp.node()) {
    onnx::NodeProto n = np;
    rename_reads(&n, names);
    for (auto& out : *n.mutable_output()) out = rename(out);
    n.set_name(prefix + (np.name().empty() ? np.op_type() : np.name()));
    e->nodes.push_back(n);
  }
  std::vector<std::string> outs;
  for (const auto& o : gp.output()) {
    auto it = names.find(o.name());
    outs.push_back(it != names.end() ? it->second : o.name());  // an outer value passed through
  }
  return outs;
}

}  // namespace fusert::onnx_import
