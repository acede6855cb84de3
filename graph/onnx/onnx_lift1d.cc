// 1-D convolutions and pooling as their 2-D ops (graph/onnx/onnx_lift1d.h).
#include "graph/onnx/onnx_lift1d.h"

#include <algorithm>

#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

namespace {

// The 2-D value of a 1-D spatial attribute: an H entry before the value (pads: before each
// half, [b, e] -> [0, b, 0, e]). A spatial attribute of another length is an error.
Status lift_attr(onnx::AttributeProto* a, const std::string& where) {
  const std::string& n = a->name();
  const bool pads = n == "pads", zero = n == "output_padding";
  if (!pads && !zero && n != "kernel_shape" && n != "strides" && n != "dilations" && n != "output_shape")
    return Status();
  std::vector<int64_t> v(a->ints().begin(), a->ints().end()), out;
  if (v.size() != (pads ? 2u : 1u)) {
    return error(StatusCode::kShapeMismatch)
           << where << ": " << n << " has " << v.size() << " values; a 1-D op (input ["
           << "N, C, L]) takes " << (pads ? 2 : 1);
  }
  out = pads ? std::vector<int64_t>{0, v[0], 0, v[1]} : std::vector<int64_t>{zero ? 0 : 1, v[0]};
  a->clear_ints();
  for (int64_t x : out) a->add_ints(x);
  return Status();
}

onnx::NodeProto reshape(const std::string& name, const std::string& x, const std::string& shape, const std::string& y) {
  return make_node("Reshape", name, {x, shape}, {y});
}

}  // namespace

bool is_1d_spatial(const Graph& g, const onnx::NodeProto& np) {
  const std::string& op = np.op_type();
  if (op != "Conv" && op != "ConvTranspose" && op != "MaxPool" && op != "AveragePool") return false;
  if (!np.domain().empty() && np.domain() != "ai.onnx") return false;
  if (np.input_size() < 1 || np.output_size() < 1) return false;
  const ValueId x = g.find_value(np.input(0));
  return x != kNoValue && g.value(x).shape_known && g.value(x).shape.size() == 3;
}

Result<Expansion> lift_1d(const Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name,
                          const SourceLoc& loc) {
  const bool conv = np.op_type() == "Conv" || np.op_type() == "ConvTranspose";
  if (conv && np.input_size() > 1) {  // the weight of a 1-D op: [M, C/group, k] (ConvTranspose [C, M/group, k])
    const ValueId w = g.find_value(np.input(1));
    if (w != kNoValue && g.value(w).shape_known) {
      const Shape& ws = g.value(w).shape;
      if (ws.size() != 3 || std::find(ws.begin(), ws.end(), 0) != ws.end()) {
        return error(StatusCode::kShapeMismatch)
               << loc.str() << ": weight '" << np.input(1) << "' is " << shape_str(ws) << "; a 1-D " << np.op_type()
               << " (input [N, C, L]) takes a rank-3 weight with no empty dim";
      }
    }
  }
  Expansion l;
  l.opset = opset;
  const std::string to4 = fresh_name(g, l, name + "/1d.shape4"), to3 = fresh_name(g, l, name + "/1d.shape3");
  l.constants.emplace_back(to4, i64_tensor({0, 0, 1, -1}));
  l.constants.emplace_back(to3, i64_tensor({0, 0, -1}));
  const std::string x4 = fresh_name(g, l, name + "/1d.x"), y4 = fresh_name(g, l, name + "/1d.y");
  l.nodes.push_back(reshape(name + "/1d.x", np.input(0), to4, x4));
  onnx::NodeProto op = np;
  op.set_name(name + "/2d");
  op.set_input(0, x4);
  if (conv && np.input_size() > 1 && !np.input(1).empty()) {
    const std::string w4 = fresh_name(g, l, name + "/1d.w");
    l.nodes.push_back(reshape(name + "/1d.w", np.input(1), to4, w4));
    op.set_input(1, w4);
  }
  op.set_output(0, y4);
  const bool indices = np.output_size() > 1 && !np.output(1).empty();  // MaxPool's: [N, C, 1, L'] too
  const std::string i4 = indices ? fresh_name(g, l, name + "/1d.indices") : "";
  if (indices) op.set_output(1, i4);
  for (auto& a : *op.mutable_attribute()) FUSERT_RETURN_IF_ERROR(lift_attr(&a, loc.str()));
  l.nodes.push_back(op);
  l.nodes.push_back(reshape(name + "/1d.y", y4, to3, np.output(0)));
  if (indices) l.nodes.push_back(reshape(name + "/1d.indices", i4, to3, np.output(1)));
  return l;
}

}  // namespace fusert::onnx_import
