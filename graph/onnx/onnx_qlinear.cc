// QLinearConv and QLinearMatMul as ConvInteger / MatMulInteger and a requantisation
// (graph/onnx/onnx_qlinear.h).
#include "graph/onnx/onnx_qlinear.h"

#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

bool qlinear_conv_direct(const Graph& g, const onnx::NodeProto& np) {
  if (np.input_size() < 8) return false;
  for (int i = 0; i < np.input_size(); ++i) {
    const ValueId v = np.input(i).empty() ? kNoValue : g.find_value(np.input(i));
    if (v == kNoValue) return false;
    if (i == 0 && g.value(v).shape.size() != 4) return false;
    if (i != 0 && g.value(v).data.empty()) return false;  // weights computed at run time: the expansion
  }
  return true;
}

bool is_qlinear_op(const std::string& op) { return op == "QLinearConv" || op == "QLinearMatMul"; }

Result<Expansion> qlinear(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc) {
  const bool conv = np.op_type() == "QLinearConv";
  if (np.input_size() < 8)
    return error(StatusCode::kParseError) << loc.str() << ": " << np.op_type() << " takes 8 inputs"
                                          << (conv ? " (9 with B)" : "") << ", got " << np.input_size();
  for (int i = 0; i < 8; ++i)
    if (np.input(i).empty() || g.find_value(np.input(i)) == kNoValue)
      return error(StatusCode::kParseError) << loc.str() << ": input " << i << " of " << np.op_type() << " is "
                                            << (np.input(i).empty() ? "empty" : "not computed before this node");
  if (!conv && shape_numel(g.value(g.find_value(np.input(1))).shape) != 1)
    return error(StatusCode::kUnsupported) << loc.str() << ": QLinearMatMul with a per-row scale of A";
  Expansion e;
  e.opset = 21;
  const std::string acc = fresh_name(g, e, name + "/acc");
  onnx::NodeProto integer = make_node(conv ? "ConvInteger" : "MatMulInteger", name + "/integer",
                                      {np.input(0), np.input(3), np.input(2), np.input(5)}, {acc});
  if (conv)
    for (const auto& a : np.attribute()) *integer.add_attribute() = a;  // kernel_shape, strides, pads, ...
  e.nodes.push_back(integer);
  std::string sum = acc;
  if (conv && np.input_size() > 8 && !np.input(8).empty()) {  // the i32 bias, at scale sx * sw
    const std::string axes = fresh_name(g, e, name + "/bias_axes"), bias = fresh_name(g, e, name + "/bias_chw");
    e.constants.emplace_back(axes, i64_tensor({1, 2}));  // B [M] -> [M, 1, 1], along the output channels
    e.nodes.push_back(make_node("Unsqueeze", name + "/bias_chw", {np.input(8), axes}, {bias}));
    sum = fresh_name(g, e, name + "/biased");
    e.nodes.push_back(make_node("Add", name + "/bias", {acc, bias}, {sum}));
  }
  const std::string sxw = fresh_name(g, e, name + "/sx_sw");
  e.nodes.push_back(make_node("Mul", name + "/sx_sw", {np.input(1), np.input(4)}, {sxw}));
  const std::string m = fresh_name(g, e, name + "/multiplier");
  e.nodes.push_back(make_node("Div", name + "/multiplier", {sxw, np.input(6)}, {m}));
  const std::string real = fresh_name(g, e, name + "/real");
  onnx::NodeProto dq = make_node("DequantizeLinear", name + "/dequantize", {sum, m}, {real});
  auto* axis = dq.add_attribute();  // a per-channel multiplier runs along the output channels (conv)
  axis->set_name("axis");           // or the columns (matmul)
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(conv ? 1 : -1);
  e.nodes.push_back(dq);
  const std::string one = fresh_name(g, e, name + "/one");
  Tensor t(DType::kF32, {});
  t.f32()[0] = 1.f;
  e.constants.emplace_back(one, std::move(t));
  e.nodes.push_back(make_node("QuantizeLinear", name + "/quantize", {real, one, np.input(7)}, {np.output(0)}));
  return e;
}

}  // namespace fusert::onnx_import
