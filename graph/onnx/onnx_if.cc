// If imported inline (graph/onnx/onnx_if.h).
#include "graph/onnx/onnx_if.h"

#include <map>
#include <set>

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_subgraph.h"

namespace fusert::onnx_import {

Result<onnx::NodeProto> if_between_stages(const Graph& g, const onnx::NodeProto& np, const onnx::GraphProto& tg,
                                          const onnx::GraphProto& eg, const std::string& name, const SourceLoc& loc,
                                          int64_t opset) {
  std::vector<std::string> outer;
  std::set<std::string> seen;
  subgraph_reads(tg, &outer, &seen);
  subgraph_reads(eg, &outer, &seen);
  for (const std::string& v : outer) {
    if (g.find_value(v) == kNoValue)
      return error(StatusCode::kParseError) << loc.str() << ": a branch reads '" << v << "', which is not defined";
  }
  const std::string then_bytes = subgraph_model(g, tg, outer, opset, name + "/then");
  const std::string else_bytes = subgraph_model(g, eg, outer, opset, name + "/else");
  const std::map<std::string, Shape> shapes = outer_shapes(g, outer);
  auto t = subgraph_outputs(then_bytes, shapes, loc.str() + " then_branch");
  auto f = subgraph_outputs(else_bytes, shapes, loc.str() + " else_branch");
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
