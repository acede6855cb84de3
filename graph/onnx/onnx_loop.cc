// ONNX Loop unrolled at import (graph/onnx/onnx_loop.h).
#include "graph/onnx/onnx_loop.h"

#include <map>

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_if.h"

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

}  // namespace

Result<Expansion> loop_unrolled(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                const SourceLoc& loc) {
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
  if (has_trips && !constant_scalar(g, np, 0, &trips))
    return error(StatusCode::kUnsupported) << loc.str() << ": Loop trip count '" << np.input(0)
                                           << "' must be a constant (fusert unrolls loops at import)";
  if (has_cond && !constant_scalar(g, np, 1, &cond))
    return error(StatusCode::kUnsupported) << loc.str() << ": Loop condition '" << np.input(1)
                                           << "' must be a constant (fusert unrolls loops at import)";
  if (!has_trips && cond)
    return error(StatusCode::kUnsupported) << loc.str() << ": a Loop without a trip count runs until a condition "
                                           << "computed at run time (fusert unrolls loops at import)";
  if (!passes_condition(body))
    return error(StatusCode::kUnsupported) << loc.str() << ": the Loop body computes its condition (fusert "
                                           << "unrolls loops whose condition stays constant)";
  const int64_t iterations = cond ? std::max<int64_t>(trips, 0) : 0;
  if (iterations > kMaxUnrolled)
    return error(StatusCode::kUnsupported) << loc.str() << ": Loop of " << iterations << " iterations (fusert "
                                           << "unrolls at most " << kMaxUnrolled << ")";
  const int scans = body.output_size() - 1 - carried;
  if (iterations == 0 && scans > 0)
    return error(StatusCode::kUnsupported) << loc.str() << ": Loop of 0 iterations with scan outputs (zero-size)";
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
