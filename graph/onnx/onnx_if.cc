// If imported inline (graph/onnx/onnx_if.h).
#include "graph/onnx/onnx_if.h"

#include <map>

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

}  // namespace

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

Result<Expansion> if_inlined(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc) {
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
  const std::vector<std::string> t = inline_graph(g, tg, name + "/then/", &e);
  const std::vector<std::string> f = inline_graph(g, eg, name + "/else/", &e);
  const std::string scalar = fresh_name(g, e, name + "/cond.shape"), c = fresh_name(g, e, name + "/cond");
  e.constants.emplace_back(scalar, Tensor(DType::kI64, {0}));
  e.nodes.push_back(make_node("Reshape", name + "/cond", {np.input(0), scalar}, {c}));
  for (int k = 0; k < np.output_size(); ++k) {
    if (np.output(k).empty()) continue;
    e.nodes.push_back(make_node("Where", name + "/select" + std::to_string(k), {c, t[k], f[k]}, {np.output(k)}));
    e.same_shape.push_back({t[k], f[k]});
  }
  return e;
}

}  // namespace fusert::onnx_import
