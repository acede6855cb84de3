// The softmax family below opset 13 over more than the last dim, as an expansion (onnx_expand.h).
#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

// Softmax, LogSoftmax and Hardmax below opset 13 normalise the input coerced to 2-D at `axis`
// ([prod(d < axis), prod(d >= axis)]). Over a non-last axis: Flatten at `axis`, the op over the
// last axis (opset 13), and a Reshape back to the input's shape (Shape of the input, so that
// symbolic dims follow). nullopt for the last axis (the op itself) and an axis out of range
// (map_node's rule reports it).
std::optional<Expansion> legacy_softmax(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  const int64_t r = static_cast<int64_t>(g.value(g.find_value(np.input(0))).shape.size());
  const auto* a = find_attr(np, "axis");
  const int64_t axis = a ? (a->i() < 0 ? a->i() + r : a->i()) : 1;
  if (axis < 0 || axis >= r - 1) return std::nullopt;
  Expansion e;
  e.opset = 13;
  const std::string flat = fresh_name(g, e, name + "/flat"), two_d = fresh_name(g, e, name + "/2d"),
                    shape = fresh_name(g, e, name + "/shape");
  onnx::NodeProto f = make_node("Flatten", name + "/flatten", {np.input(0)}, {flat});
  auto* fa = f.add_attribute();
  fa->set_name("axis");
  fa->set_type(onnx::AttributeProto::INT);
  fa->set_i(axis);
  onnx::NodeProto s = make_node(np.op_type(), name + "/last_axis", {flat}, {two_d});
  auto* sa = s.add_attribute();
  sa->set_name("axis");
  sa->set_type(onnx::AttributeProto::INT);
  sa->set_i(-1);
  e.nodes.push_back(f);
  e.nodes.push_back(s);
  e.nodes.push_back(make_node("Shape", name + "/shape", {np.input(0)}, {shape}));
  e.nodes.push_back(make_node("Reshape", name + "/reshape", {two_d, shape}, {np.output(0)}));
  return e;
}

}  // namespace fusert::onnx_import
