// If imported inline (graph/onnx/onnx_if.h).
#include "graph/onnx/onnx_if.h"

#include <map>
#include <set>

#include "graph/onnx/onnx_import.h"

#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

namespace {

// Renames the references of node `n` (and of the graphs nested in it) to values of `names`.
void rename_refs(onnx::NodeProto* n, const std::map<std::string, std::string>& names) {
  for (auto& in : *n->mutable_input()) {
    auto it = names.find(in);
    if (it != names.end()) in = it->second;
  }
  for (auto& a : *n->mutable_attribute()) {
    auto nested = [&](onnx::GraphProto* gp) {
      for (auto& m : *gp->mutable_node()) rename_refs(&m, names);
    };
    if (a.has_g()) nested(a.mutable_g());
    for (auto& sub : *a.mutable_graphs()) nested(&sub);
  }
}

// The names `gp` reads from outside it (nested graphs' too), in order of first use, into `out`.
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

int elem_type_of(DType t) {
  switch (t) {
    case DType::kI64:
      return onnx::TensorProto::INT64;
    case DType::kI32:
      return onnx::TensorProto::INT32;
    case DType::kBool:
      return onnx::TensorProto::BOOL;
    default:
      return onnx::TensorProto::FLOAT;
  }
}

// Branch `gp` as a model of its own: the outer values it reads are its inputs (every dim
// symbolic, bound per run), the outer constants its initializers.
std::string branch_model(const Graph& g, const onnx::GraphProto& gp, const std::vector<std::string>& outer,
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
      t->set_data_type(elem_type_of(val.dtype));
      for (int64_t d : val.shape) t->add_dims(d);
      t->set_raw_data(std::string(static_cast<const char*>(val.data.raw()), val.data.nbytes()));
      continue;
    }
    onnx::ValueInfoProto* in = b->add_input();
    in->set_name(v);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type_of(val.dtype));
    for (size_t d = 0; d < val.shape.size(); ++d)
      tt->mutable_shape()->add_dim()->set_dim_param(v + "." + std::to_string(d));
  }
  return m.SerializeAsString();
}

// The outputs' shapes and dtypes of a branch model at the outer values' current shapes.
Result<std::vector<std::pair<Shape, DType>>> branch_outputs(const Graph& g, const std::string& bytes,
                                                            const std::vector<std::string>& outer,
                                                            const std::string& where) {
  std::map<std::string, Shape> shapes;
  for (const std::string& v : outer) {
    const Value& val = g.value(g.find_value(v));
    if (val.data.empty()) shapes[v] = val.shape;
  }
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_onnx_bytes(bytes, where, shapes));
  std::vector<std::pair<Shape, DType>> out;
  for (ValueId id : spec.graph.outputs) out.push_back({spec.graph.value(id).shape, spec.graph.value(id).dtype});
  return out;
}

}  // namespace

Result<onnx::NodeProto> if_between_stages(const Graph& g, const onnx::NodeProto& np, const onnx::GraphProto& tg,
                                          const onnx::GraphProto& eg, const std::string& name, const SourceLoc& loc,
                                          int64_t opset) {
  std::vector<std::string> outer;
  std::set<std::string> seen;
  outer_refs(tg, {}, &outer, &seen);
  outer_refs(eg, {}, &outer, &seen);
  for (const std::string& v : outer) {
    if (g.find_value(v) == kNoValue)
      return error(StatusCode::kParseError) << loc.str() << ": a branch reads '" << v << "', which is not defined";
  }
  const std::string then_bytes = branch_model(g, tg, outer, opset, name + "/then");
  const std::string else_bytes = branch_model(g, eg, outer, opset, name + "/else");
  auto t = branch_outputs(g, then_bytes, outer, loc.str() + " then_branch");
  auto f = branch_outputs(g, else_bytes, outer, loc.str() + " else_branch");
  if (!t.ok() && !f.ok()) return t.status();  // neither branch has valid shapes here
  if (t.ok() && f.ok()) {
    for (size_t k = 0; k < t->size(); ++k) {
      if ((*t)[k] == (*f)[k]) continue;
      return error(StatusCode::kUnsupported)
             << loc.str() << ": the branches give " << dtype_name((*t)[k].second) << " " << shape_str((*t)[k].first)
             << " and " << dtype_name((*f)[k].second) << " " << shape_str((*f)[k].first) << " for output " << k
             << "; fusert runs an If whose condition is known at run time only with one shape and dtype per output";
    }
  }
  const std::vector<std::pair<Shape, DType>>& outs = t.ok() ? *t : *f;
  std::vector<std::string> inputs = {np.input(0)};
  for (const std::string& v : outer)
    if (g.value(g.find_value(v)).data.empty()) inputs.push_back(v);
  std::vector<std::string> outputs(np.output().begin(), np.output().end());
  onnx::NodeProto n = make_node("If", name, inputs, outputs);
  auto str_attr = [&](const char* key, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  };
  auto ints_attr = [&](const char* key, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  };
  str_attr("then_model", then_bytes);
  str_attr("else_model", else_bytes);
  std::vector<int64_t> ranks, dims, dtypes;
  for (size_t k = 0; k < outs.size() && k < outputs.size(); ++k) {
    ranks.push_back(static_cast<int64_t>(outs[k].first.size()));
    dims.insert(dims.end(), outs[k].first.begin(), outs[k].first.end());
    dtypes.push_back(static_cast<int64_t>(outs[k].second));
  }
  ints_attr("out_ranks", ranks);
  ints_attr("out_dims", dims);
  ints_attr("out_dtypes", dtypes);
  return n;
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
    rename_refs(&n, names);
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

Result<Expansion> if_inlined(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc,
                             int64_t opset) {
  const auto* then_g = find_attr(np, "then_branch");
  const auto* else_g = find_attr(np, "else_branch");
  if (!then_g || !else_g || !then_g->has_g() || !else_g->has_g())
    return error(StatusCode::kParseError) << loc.str() << ": If needs the graphs then_branch and else_branch";
  const onnx::GraphProto &tg = then_g->g(), &eg = else_g->g();
  if (tg.output_size() != np.output_size() || eg.output_size() != np.output_size()) {
    return error(StatusCode::kParseError) << loc.str() << ": If has " << np.output_size() << " outputs, its branches "
                                          << tg.output_size() << " and " << eg.output_size();
  }
  const Value& cond = g.value(g.find_value(np.input(0)));
  if (cond.dtype != DType::kBool || shape_numel(cond.shape) != 1) {
    return error(StatusCode::kShapeMismatch) << loc.str() << ": condition '" << np.input(0) << "' is "
                                             << dtype_name(cond.dtype) << " " << shape_str(cond.shape) << " (one bool)";
  }
  Expansion e;
  e.opset = 0;  // the branches' nodes are in the model's opset
  if (cond.is_constant && !cond.data.empty()) {
    const bool c = static_cast<const uint8_t*>(cond.data.raw())[0] != 0;
    const std::vector<std::string> outs = inline_graph(g, c ? tg : eg, name + (c ? "/then/" : "/else/"), &e);
    for (int k = 0; k < np.output_size(); ++k) {
      if (!np.output(k).empty())
        e.nodes.push_back(make_node("Identity", name + "/out" + std::to_string(k), {outs[k]}, {np.output(k)}));
    }
    return e;
  }
  FUSERT_ASSIGN_OR_RETURN(onnx::NodeProto lazy, if_between_stages(g, np, tg, eg, name, loc, opset));
  e.nodes.push_back(std::move(lazy));
  return e;
}

}  // namespace fusert::onnx_import
