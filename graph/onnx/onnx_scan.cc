// ONNX Scan as a Loop (graph/onnx/onnx_scan.h).
#include "graph/onnx/onnx_scan.h"

#include <limits>

#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

namespace {

std::vector<int64_t> ints_or(const onnx::NodeProto& np, const char* key, size_t count, int64_t fill) {
  const auto* a = find_attr(np, key);
  if (!a || a->ints_size() == 0) return std::vector<int64_t>(count, fill);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void int_attr(onnx::NodeProto* n, const char* key, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

}  // namespace

Result<Expansion> scan_as_loop(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc,
                               int64_t opset) {
  if (opset < 9) return error(StatusCode::kUnsupported) << loc.str() << ": Scan of opset 8 (batch axis, sequence_lens)";
  const auto* b = find_attr(np, "body");
  const auto* ns = find_attr(np, "num_scan_inputs");
  if (!b || !b->has_g() || !ns)
    return error(StatusCode::kParseError) << loc.str() << ": Scan needs body and num_scan_inputs";
  const onnx::GraphProto& body = b->g();
  const int m = static_cast<int>(ns->i()), states = np.input_size() - m;
  const int scans_out = body.output_size() - states;
  if (m < 1 || states < 0 || body.input_size() != np.input_size() || scans_out < 0 ||
      np.output_size() > body.output_size())
    return error(StatusCode::kParseError)
           << loc.str() << ": Scan has " << np.input_size() << " inputs (" << m << " scanned) and " << np.output_size()
           << " outputs, its body " << body.input_size() << " and " << body.output_size();
  const std::vector<int64_t> in_axes = ints_or(np, "scan_input_axes", static_cast<size_t>(m), 0);
  const std::vector<int64_t> in_dirs = ints_or(np, "scan_input_directions", static_cast<size_t>(m), 0);
  const std::vector<int64_t> out_axes = ints_or(np, "scan_output_axes", static_cast<size_t>(scans_out), 0);
  const std::vector<int64_t> out_dirs = ints_or(np, "scan_output_directions", static_cast<size_t>(scans_out), 0);
  if (in_axes.size() != static_cast<size_t>(m) || in_dirs.size() != static_cast<size_t>(m) ||
      out_axes.size() != static_cast<size_t>(scans_out) || out_dirs.size() != static_cast<size_t>(scans_out))
    return error(StatusCode::kParseError)
           << loc.str() << ": Scan's axes and directions do not match its inputs and outputs";
  Expansion e;
  e.opset = 0;
  onnx::GraphProto lb;  // the Loop body: iteration, condition, the states; reads the scan inputs
  lb.set_name(name + "/body");
  const std::string iter = fresh_name(g, e, name + "/i"), cond = fresh_name(g, e, name + "/cond");
  *lb.add_input() = onnx::ValueInfoProto();
  lb.mutable_input(0)->set_name(iter);
  *lb.add_input() = onnx::ValueInfoProto();
  lb.mutable_input(1)->set_name(cond);
  for (int j = 0; j < states; ++j) *lb.add_input() = body.input(j);
  int64_t fixed_length = -1;      // the length of the constant scan inputs, if any
  std::vector<std::string> read;  // the scan inputs as the body reads them (reversed ones first reversed)
  std::vector<int64_t> axes;
  for (int k = 0; k < m; ++k) {
    const std::string& xs = np.input(states + k);
    const ValueId xv = g.find_value(xs);
    if (xv == kNoValue) return error(StatusCode::kParseError) << loc.str() << ": input '" << xs << "' is not computed";
    const int64_t rank = static_cast<int64_t>(g.value(xv).shape.size());
    int64_t axis = in_axes[static_cast<size_t>(k)];
    if (axis < -rank || axis >= rank)
      return error(StatusCode::kShapeMismatch) << loc.str() << ": scan_input_axes " << axis << " for rank " << rank;
    if (axis < 0) axis += rank;
    if (!g.value(xv).data.empty()) {  // a constant: its length is the loop's; the others are checked per run
      const int64_t len = g.value(xv).shape[static_cast<size_t>(axis)];
      if (fixed_length >= 0 && len != fixed_length)
        return error(StatusCode::kShapeMismatch)
               << loc.str() << ": scan inputs of lengths " << fixed_length << " and " << len;
      fixed_length = len;
    }
    std::string x = xs;
    if (in_dirs[static_cast<size_t>(k)] != 0) {  // reversed along its axis before the loop (Slice, step -1)
      const std::string s0 = fresh_name(g, e, name + "/rev_in" + std::to_string(k));
      x = fresh_name(g, e, name + "/reversed" + std::to_string(k));
      e.constants.emplace_back(s0 + "_start", i64_tensor({-1}));
      e.constants.emplace_back(s0 + "_end", i64_tensor({std::numeric_limits<int64_t>::min()}));
      e.constants.emplace_back(s0 + "_axes", i64_tensor({axis}));
      e.constants.emplace_back(s0 + "_step", i64_tensor({-1}));
      e.nodes.push_back(make_node("Slice", s0, {xs, s0 + "_start", s0 + "_end", s0 + "_axes", s0 + "_step"}, {x}));
    }
    read.push_back(x);
    axes.push_back(axis);
    onnx::NodeProto gather =
        make_node("Gather", name + "/slice" + std::to_string(k), {x, iter}, {body.input(states + k).name()});
    int_attr(&gather, "axis", axis);
    *lb.add_node() = gather;
  }
  for (const auto& n : body.node()) *lb.add_node() = n;
  for (const auto& t : body.initializer()) *lb.add_initializer() = t;
  onnx::ValueInfoProto cond_out;
  cond_out.set_name(cond);
  *lb.add_output() = cond_out;
  for (const auto& o : body.output()) *lb.add_output() = o;
  // M: the length at the import's shapes (so that what the body computes from it follows the dims);
  // a run takes the scan inputs' actual common length (trips_from, runtime/staged_loop.cc).
  const Value& x0 = g.value(g.find_value(np.input(states)));
  const int64_t length = fixed_length >= 0 ? fixed_length : x0.shape[static_cast<size_t>(axes[0])];
  const std::string trips = fresh_name(g, e, name + "/M");
  e.constants.emplace_back(trips, i64_tensor({length}).reshaped({}));
  std::vector<std::string> loop_in = {trips, ""};
  for (int j = 0; j < states; ++j) loop_in.push_back(np.input(j));
  std::vector<std::string> loop_out;
  for (int j = 0; j < states; ++j) loop_out.push_back(j < np.output_size() ? np.output(j) : "");
  std::vector<std::pair<std::string, int>> stacked;  // (the Loop's output, k) needing a reverse or transpose
  for (int k = 0; k < scans_out && states + k < np.output_size(); ++k) {
    const std::string& out = np.output(states + k);
    const bool moved = out_dirs[static_cast<size_t>(k)] != 0 || out_axes[static_cast<size_t>(k)] != 0;
    const std::string v = moved ? fresh_name(g, e, name + "/stacked" + std::to_string(k)) : out;
    loop_out.push_back(v);
    if (moved && !out.empty()) stacked.push_back({v, k});
  }
  onnx::NodeProto loop = make_node("Loop", name + "/loop", loop_in, loop_out);
  int_attr(&loop, "fusert_at_run_time", 1);  // a length that follows a dim must not change the graph
  auto* sa = loop.add_attribute();           // the scan inputs and axes whose lengths M is, per run
  sa->set_name("fusert_scan_inputs");
  sa->set_type(onnx::AttributeProto::STRINGS);
  for (const std::string& r : read) sa->add_strings(r);
  auto* ax = loop.add_attribute();
  ax->set_name("fusert_scan_axes");
  ax->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : axes) ax->add_ints(v);
  auto* a = loop.add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = lb;
  e.nodes.push_back(loop);
  for (const auto& [v, k] : stacked) {
    std::string cur = v;
    const std::string& out = np.output(states + k);
    const int64_t axis = out_axes[static_cast<size_t>(k)];
    if (out_dirs[static_cast<size_t>(k)] != 0) {  // reversed along the stacked axis 0
      const std::string s = fresh_name(g, e, name + "/rs" + std::to_string(k)), en = s + "_end", ax = s + "_axes",
                        st = s + "_step",
                        rev = axis != 0 ? fresh_name(g, e, name + "/rev_out" + std::to_string(k)) : out;
      e.constants.emplace_back(s, i64_tensor({-1}));
      e.constants.emplace_back(en, i64_tensor({std::numeric_limits<int64_t>::min()}));
      e.constants.emplace_back(ax, i64_tensor({0}));
      e.constants.emplace_back(st, i64_tensor({-1}));
      e.nodes.push_back(make_node("Slice", name + "/reverse" + std::to_string(k), {cur, s, en, ax, st}, {rev}));
      cur = rev;
    }
    if (axis != 0) {  // [L, e...] with L moved to `axis`: the element's rank from the body's output
      const auto& type = body.output(states + k).type().tensor_type();
      if (!type.has_shape())
        return error(StatusCode::kUnsupported) << loc.str() << ": scan_output_axes " << axis << " of output '" << out
                                               << "' needs the rank of the body's output (no shape declared)";
      const int64_t r = type.shape().dim_size() + 1, at = axis < 0 ? axis + r : axis;
      if (at < 0 || at >= r)
        return error(StatusCode::kShapeMismatch) << loc.str() << ": scan_output_axes " << axis << " for rank " << r;
      std::vector<int64_t> perm;
      for (int64_t d = 1; d <= at; ++d) perm.push_back(d);
      perm.push_back(0);
      for (int64_t d = at + 1; d < r; ++d) perm.push_back(d);
      onnx::NodeProto t = make_node("Transpose", name + "/axis" + std::to_string(k), {cur}, {out});
      auto* pa = t.add_attribute();
      pa->set_name("perm");
      pa->set_type(onnx::AttributeProto::INTS);
      for (int64_t d : perm) pa->add_ints(d);
      e.nodes.push_back(t);
    }
  }
  return e;
}

}  // namespace fusert::onnx_import
