// ONNX Loop unrolled at import, or the op Loop run between stages (graph/onnx/onnx_loop.h).
#include "graph/onnx/onnx_loop.h"

#include <map>
#include <set>

#include "graph/data_dependent.h"
#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_subgraph.h"

namespace fusert::onnx_import {

namespace {

// The value of constant input `i` of `np` as an integer or bool scalar; false when it is not one.
bool constant_scalar(const Graph& g, const onnx::NodeProto& np, int i, int64_t* out) {
  if (i >= np.input_size() || np.input(i).empty()) return false;
  const ValueId v = g.find_value(np.input(i));
  if (v == kNoValue || !g.value(v).is_constant || g.value(v).data.numel() != 1) return false;
  const Tensor& t = g.value(v).data;
  if (t.dtype() == DType::kI64)
    *out = t.i64()[0];
  else if (t.dtype() == DType::kBool)
    *out = static_cast<const uint8_t*>(t.raw())[0];
  else if (t.dtype() == DType::kI32)
    *out = static_cast<const int32_t*>(t.raw())[0];
  else
    return false;
  return true;
}

// Whether body output 0 (cond_out) is body input 1 (cond_in), directly or through Identity nodes.
bool passes_condition(const onnx::GraphProto& body) {
  std::string v = body.output(0).name();
  for (int guard = 0; guard < body.node_size() + 1; ++guard) {
    if (v == body.input(1).name()) return true;
    const onnx::NodeProto* producer = nullptr;
    for (const auto& n : body.node())
      for (const auto& o : n.output())
        if (o == v) producer = &n;
    if (!producer || producer->op_type() != "Identity" || producer->input_size() != 1) return false;
    v = producer->input(0);
  }
  return false;
}

// Body input `in` typed as `elem` with `shape`'s rank, every dim symbolic ("<input>.<d>"); a
// scalar when `rank0`.
void set_input_type(onnx::ValueInfoProto* in, int elem, const Shape& shape) {
  auto* tt = in->mutable_type()->mutable_tensor_type();
  in->mutable_type()->clear_sequence_type();
  tt->set_elem_type(elem);
  tt->mutable_shape()->clear_dim();
  for (size_t d = 0; d < shape.size(); ++d)
    tt->mutable_shape()->add_dim()->set_dim_param(in->name() + "." + std::to_string(d));
}

void ints_attr(onnx::NodeProto* n, const char* key, const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// The op Loop (a trip count or condition known at run time only): inputs M, cond, the carried
// values and the outer values the body reads; the body a model of its own (body_model) whose
// inputs are the iteration number, the condition, the carried values and those outer values.
Result<onnx::NodeProto> loop_between_stages(const Graph& g, const onnx::NodeProto& np, const onnx::GraphProto& body,
                                            const std::string& name, const SourceLoc& loc, int64_t opset) {
  const int carried = np.input_size() - 2;
  std::vector<std::string> outer;
  std::set<std::string> seen;
  subgraph_reads(body, &outer, &seen);
  for (const std::string& v : outer) {
    if (g.find_value(v) == kNoValue)
      return error(StatusCode::kParseError) << loc.str() << ": the body reads '" << v << "', which is not defined";
  }
  onnx::GraphProto b = body;  // its inputs named as the session feeds them (loop_body_input)
  std::map<std::string, std::string> renamed;
  for (int k = 0; k < b.input_size(); ++k) renamed[b.input(k).name()] = loop_body_input(static_cast<size_t>(k));
  for (auto& node : *b.mutable_node()) rename_reads(&node, renamed);
  for (auto& o : *b.mutable_output())
    if (renamed.count(o.name())) o.set_name(renamed[o.name()]);
  for (int k = 0; k < b.input_size(); ++k) b.mutable_input(k)->set_name(loop_body_input(static_cast<size_t>(k)));
  std::map<std::string, Shape> shapes = outer_shapes(g, outer);
  set_input_type(b.mutable_input(0), onnx::TensorProto::INT64, {});
  set_input_type(b.mutable_input(1), onnx::TensorProto::BOOL, {});
  shapes[loop_body_input(0)] = {};
  shapes[loop_body_input(1)] = {};
  std::vector<std::pair<Shape, DType>> start;
  for (int j = 0; j < carried; ++j) {
    const Value& v = g.value(g.find_value(np.input(j + 2)));
    set_input_type(b.mutable_input(j + 2), onnx_elem_type(v.dtype), v.shape);
    shapes[loop_body_input(static_cast<size_t>(j + 2))] = v.shape;
    start.push_back({v.shape, v.dtype});
  }
  const std::string bytes = subgraph_model(g, b, outer, opset, name + "/body");
  bool counted = false;  // shapes at the planning count of a data-dependent op in the body: checked per run
  FUSERT_ASSIGN_OR_RETURN(auto outs, subgraph_outputs(bytes, shapes, loc.str() + " body", &counted));
  if (outs[0].second != DType::kBool || shape_numel(outs[0].first) != 1) {
    return error(StatusCode::kShapeMismatch)
           << loc.str() << ": the body's condition output is " << dtype_name(outs[0].second) << " "
           << shape_str(outs[0].first) << " (one bool)";
  }
  for (int j = 0; j < carried; ++j) {
    if (counted) outs[static_cast<size_t>(1 + j)] = start[static_cast<size_t>(j)];  // as they came in
    if (outs[static_cast<size_t>(1 + j)] == start[static_cast<size_t>(j)]) continue;
    const auto& [s1, t1] = outs[static_cast<size_t>(1 + j)];
    return error(StatusCode::kUnsupported)
           << loc.str() << ": carried value " << j << " ('" << np.input(j + 2) << "') enters the body as "
           << dtype_name(start[static_cast<size_t>(j)].second) << " " << shape_str(start[static_cast<size_t>(j)].first)
           << " and leaves it as " << dtype_name(t1) << " " << shape_str(s1)
           << "; fusert runs a Loop whose carried values keep their shape and dtype";
  }
  std::vector<std::string> inputs(np.input().begin(), np.input().end());
  for (const std::string& v : outer)
    if (g.value(g.find_value(v)).data.empty()) inputs.push_back(v);
  onnx::NodeProto n = make_node("Loop", name, inputs, std::vector<std::string>(np.output().begin(), np.output().end()));
  auto* a = n.add_attribute();
  a->set_name("body_model");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(bytes);
  auto* c = n.add_attribute();
  c->set_name("carried");
  c->set_type(onnx::AttributeProto::INT);
  c->set_i(carried);
  std::vector<int64_t> trips_from;  // a Scan's: (input, axis) pairs whose lengths M is, checked equal per run
  const auto* si = find_attr(np, "fusert_scan_inputs");
  const auto* sx = find_attr(np, "fusert_scan_axes");
  for (int k = 0; si && sx && k < si->strings_size() && k < sx->ints_size(); ++k) {
    for (size_t i = 2; i < inputs.size(); ++i)
      if (inputs[i] == si->strings(k)) trips_from.insert(trips_from.end(), {static_cast<int64_t>(i), sx->ints(k)});
  }
  ints_attr(&n, "trips_from", trips_from);
  std::vector<int64_t> ranks, dims, dtypes;  // the carried values', then the scan outputs' per iteration
  for (size_t k = 0; k + 1 < outs.size() && k < static_cast<size_t>(np.output_size()); ++k) {
    ranks.push_back(static_cast<int64_t>(outs[k + 1].first.size()));
    dims.insert(dims.end(), outs[k + 1].first.begin(), outs[k + 1].first.end());
    dtypes.push_back(static_cast<int64_t>(outs[k + 1].second));
  }
  ints_attr(&n, "out_ranks", ranks);
  ints_attr(&n, "out_dims", dims);
  ints_attr(&n, "out_dtypes", dtypes);
  return n;
}

}  // namespace

Result<Expansion> loop_expanded(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                const SourceLoc& loc, int64_t opset) {
  const auto* b = find_attr(np, "body");
  if (!b || !b->has_g()) return error(StatusCode::kParseError) << loc.str() << ": Loop needs the graph 'body'";
  const onnx::GraphProto& body = b->g();
  const int carried = np.input_size() - 2;
  if (carried < 0 || body.input_size() != carried + 2 || body.output_size() < carried + 1 ||
      np.output_size() > body.output_size() - 1) {
    return error(StatusCode::kParseError)
           << loc.str() << ": Loop has " << np.input_size() << " inputs and " << np.output_size()
           << " outputs, its body " << body.input_size() << " and " << body.output_size();
  }
  int64_t trips = -1, cond = 1;
  const bool has_trips = !np.input(0).empty(), has_cond = !np.input(1).empty();
  const bool constant =
      (!has_trips || constant_scalar(g, np, 0, &trips)) && (!has_cond || constant_scalar(g, np, 1, &cond));
  const int64_t iterations = cond ? std::max<int64_t>(trips, 0) : 0;
  const int scans = body.output_size() - 1 - carried;
  bool float_scans = true;  // the unrolled scans are stacked by Concat, which takes f32 (and 64 inputs)
  for (int k = 0; k < scans; ++k)
    float_scans &= body.output(1 + carried + k).type().tensor_type().elem_type() == onnx::TensorProto::FLOAT;
  if (!constant || find_attr(np, "fusert_at_run_time") || (!has_trips && cond) || !passes_condition(body) ||
      iterations > kMaxUnrolled || (scans > 0 && (iterations == 0 || iterations > kMaxStacked || !float_scans))) {
    Expansion e;
    e.opset = 0;
    FUSERT_ASSIGN_OR_RETURN(onnx::NodeProto n, loop_between_stages(g, np, body, name, loc, opset));
    e.nodes.push_back(std::move(n));
    return e;
  }
  Expansion e;
  e.opset = 0;
  std::vector<std::string> v(np.input().begin() + 2, np.input().end());
  std::vector<std::vector<std::string>> scanned(static_cast<size_t>(scans));
  const std::string cond_name = has_cond ? np.input(1) : fresh_name(g, e, name + "/cond");
  if (!has_cond) {
    Tensor t(DType::kBool, {});
    static_cast<uint8_t*>(t.raw())[0] = 1;
    e.constants.emplace_back(cond_name, std::move(t));
  }
  for (int64_t i = 0; i < iterations; ++i) {
    const std::string prefix = name + "/iter" + std::to_string(i) + "/", count = fresh_name(g, e, prefix + "count");
    Tensor c(DType::kI64, {});
    c.i64()[0] = i;
    e.constants.emplace_back(count, std::move(c));
    std::map<std::string, std::string> names = {{body.input(0).name(), count}, {body.input(1).name(), cond_name}};
    for (int j = 0; j < carried; ++j) names[body.input(j + 2).name()] = v[static_cast<size_t>(j)];
    const std::vector<std::string> outs = inline_graph(g, body, prefix, &e, names);
    for (int j = 0; j < carried; ++j) v[static_cast<size_t>(j)] = outs[static_cast<size_t>(1 + j)];
    for (int k = 0; k < scans; ++k) {  // each iteration's value with a new first axis
      const std::string axes = fresh_name(g, e, prefix + "scan_axes"), u = fresh_name(g, e, prefix + "scan");
      e.constants.emplace_back(axes, i64_tensor({0}));
      e.nodes.push_back(make_node("Unsqueeze", prefix + "scan" + std::to_string(k),
                                  {outs[static_cast<size_t>(1 + carried + k)], axes}, {u}));
      scanned[static_cast<size_t>(k)].push_back(u);
    }
  }
  for (int j = 0; j < carried && j < np.output_size(); ++j) {
    if (!np.output(j).empty())
      e.nodes.push_back(
          make_node("Identity", name + "/out" + std::to_string(j), {v[static_cast<size_t>(j)]}, {np.output(j)}));
  }
  for (int k = 0; k < scans && carried + k < np.output_size(); ++k) {
    if (np.output(carried + k).empty()) continue;
    onnx::NodeProto cat = make_node("Concat", name + "/scan" + std::to_string(k), scanned[static_cast<size_t>(k)],
                                    {np.output(carried + k)});
    auto* a = cat.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(0);
    e.nodes.push_back(cat);
  }
  return e;
}

}  // namespace fusert::onnx_import
