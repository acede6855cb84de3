// ONNX op types and attributes onto the op table. Most ONNX ops are fusert ops of the same name
// and attributes (the table follows opset 17); the rest are rewritten here:
//   Constant, Shape, Size          -> a constant value (shapes are static once inputs are bound)
//   ConstantOfShape, Range         -> a constant value (their inputs must be constants)
//   EyeLike                        -> a constant value (of the input's static shape)
//   HannWindow, HammingWindow,     -> a constant value (the size must be a constant)
//     BlackmanWindow
//   Upsample, Resize < 11          -> Resize with (X, roi, scales), coordinate transformation
//                                     asymmetric and nearest_mode floor, as ONNX Runtime does
//   Dropout                        -> Identity (inference; its mask output unsupported)
//   Squeeze                        -> Reshape to the squeezed shape
//   attribute axes/split/starts/k  -> constant inputs (Unsqueeze < 13, ReduceSum < 13, Split < 13,
//                                     Slice < 10, TopK < 10), and input axes -> attribute (the
//                                     other reductions, opset >= 18)
//   Sum, Mean of one input         -> Identity; Sum of two -> Add (an epilogue step)
//   CastLike                       -> Cast to input 1's dtype; Scatter (opset 9-10) -> ScatterElements
//   Softmax, LogSoftmax, Hardmax   -> the same op when its axis is the last (else unsupported: the
//     < 13                            old operators normalise over all dims from axis on)
#include "graph/onnx/onnx_ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert::onnx_import {

// ONNX op types imported as the fusert op of the same name: every row of the op table
// (graph/ops.def) but the ones its FUSERT_INTERNAL_OP list names.
const std::set<std::string>& direct_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> names;
    for (int k = 0; k < static_cast<int>(OpKind::kCount); ++k) names.insert(op_info(static_cast<OpKind>(k)).name);
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc)
#define FUSERT_INTERNAL_OP(name) names.erase(#name);
#include "graph/ops.def"
#undef FUSERT_INTERNAL_OP
#undef FUSERT_OP
    return names;
  }();
  return ops;
}

const std::set<std::string>& rewritten_ops() {
  static const std::set<std::string> ops = {"Constant", "Shape",           "Size",          "Dropout",       "Squeeze",
                                            "Upsample", "ConstantOfShape", "Range",         "CastLike",      "Scatter",
                                            "EyeLike",  "HannWindow",      "HammingWindow", "BlackmanWindow"};
  return ops;
}

// Attributes the rewrites consume (not in the op table's schema), per op type.
bool consumed_attr(const std::string& op, const std::string& a, int64_t opset) {
  if (opset < 6 && a == "consumed_inputs") return true;  // opsets 1-5: an optimisation hint
  if (op == "Constant") return a.rfind("value", 0) == 0;
  if (op == "Shape") return a == "start" || a == "end";
  if (op == "Dropout") return a == "ratio" || a == "seed" || a == "is_test";
  if (op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") return a == "axes";
  if (op == "Split") return a == "split" || a == "num_outputs";
  if (op == "TopK") return opset < 10 && a == "k";
  if (op == "Slice") return opset < 10 && (a == "starts" || a == "ends" || a == "axes");
  if (op == "BatchNormalization") return a == "spatial" || a == "is_test" || a == "consumed_inputs";
  if (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") return opset < 13 && a == "axis";
  if (op == "Upsample") return a == "scales" || a == "mode";
  if (op == "ConstantOfShape") return a == "value";
  if (op == "EyeLike") return a == "dtype" || a == "k";
  if (op.size() > 6 && op.compare(op.size() - 6, 6, "Window") == 0) return a == "periodic" || a == "output_datatype";
  if (op == "RNN" || op == "GRU" || op == "LSTM") return a == "activations";  // a list: rewrite_attrs joins it
  if (op == "Cast" || op == "CastLike") return a == "saturate";               // opset 19: only float8 targets saturate
  return false;
}

namespace {

// Adds a constant input for a rewrite, named after the node.
ValueId add_const(Graph& g, const std::string& name, Tensor data, const SourceLoc& loc) {
  std::string n = name;
  for (int k = 1; g.find_value(n) != kNoValue; ++k) n = name + "_" + std::to_string(k);
  Value& v = g.value(g.add_value(n));
  v.dtype = data.dtype();
  v.shape = data.shape();
  v.shape_known = true;
  v.is_initializer = v.is_constant = true;
  v.data = std::move(data);
  v.loc = loc;
  return g.find_value(n);
}

Result<AttrValue> convert_attr(const onnx::AttributeProto& a, const AttrSchema& s, const SourceLoc& loc) {
  AttrValue v;
  v.type = s.type;
  const auto mismatch = [&]() -> Status {
    return error(StatusCode::kUnsupported)
           << loc.str() << ": attribute '" << a.name() << "' is not of type " << attr_type_name(s.type);
  };
  switch (s.type) {
    case AttrType::kInt:
      if (a.type() != onnx::AttributeProto::INT) return mismatch();
      v.i = a.i();
      break;
    case AttrType::kFloat:
      if (a.type() == onnx::AttributeProto::FLOAT) {
        v.f = a.f();
      } else if (a.type() == onnx::AttributeProto::INT) {
        v.f = static_cast<double>(a.i());
      } else {
        return mismatch();
      }
      break;
    case AttrType::kInts:
      if (a.type() != onnx::AttributeProto::INTS) return mismatch();
      v.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case AttrType::kFloats:
      if (a.type() != onnx::AttributeProto::FLOATS) return mismatch();
      v.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AttrType::kString:
      if (a.type() != onnx::AttributeProto::STRING) return mismatch();
      v.s = a.s();
      break;
  }
  return v;
}

std::vector<int64_t> ints_attr(const onnx::NodeProto& np, const std::string& name) {
  const onnx::AttributeProto* a = find_attr(np, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

// TensorProto type code of a dtype Cast converts to (0: none): the inverse of dtype_of over
// Cast's targets.
int64_t like_code(DType t) {
  for (int code :
       {onnx::TensorProto::FLOAT, onnx::TensorProto::INT32, onnx::TensorProto::INT64, onnx::TensorProto::BOOL}) {
    DType d;
    if (dtype_of(code, &d) && d == t) return code;
  }
  return 0;
}

// Squeeze's output shape: the axes (attribute, or constant input 1) dropped, or every 1.
Result<std::vector<int64_t>> squeezed_shape(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                                            const SourceLoc& loc) {
  const Shape& x = g.value(ins.at(0)).shape;
  std::vector<int64_t> axes = ints_attr(np, "axes");
  if (ins.size() > 1) {
    const Value& a = g.value(ins[1]);
    if (!a.is_constant || a.data.dtype() != DType::kI64) {
      return error(StatusCode::kUnsupported) << loc.str() << ": Squeeze axes must be a constant";
    }
    axes.assign(a.data.i64(), a.data.i64() + a.data.numel());
  }
  std::vector<bool> drop(x.size(), axes.empty());
  for (int64_t a : axes) {
    const int64_t k = a < 0 ? a + static_cast<int64_t>(x.size()) : a;
    if (k < 0 || k >= static_cast<int64_t>(x.size()) || x[static_cast<size_t>(k)] != 1) {
      return error(StatusCode::kShapeMismatch)
             << loc.str() << ": Squeeze axis " << a << " of " << shape_str(x) << " is not a dimension of size 1";
    }
    drop[static_cast<size_t>(k)] = true;
  }
  std::vector<int64_t> shape;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!drop[d] || (axes.empty() && x[d] != 1)) shape.push_back(x[d]);
  }
  return shape;
}

// Attributes that later opsets take as inputs, as constant inputs: axes (Unsqueeze < 13,
// ReduceSum < 13), split (Split < 13), starts/ends/axes (Slice < 10), k (TopK < 10).
void attrs_as_inputs(Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name, const SourceLoc& loc,
                     std::vector<ValueId>* inputs) {
  const std::string& op = np.op_type();
  std::vector<ValueId>& ins = *inputs;
  if ((op == "Unsqueeze" || op == "ReduceSum") && find_attr(np, "axes")) {
    ins.resize(1);
    ins.push_back(add_const(g, name + ".axes", i64_tensor(ints_attr(np, "axes")), loc));
  }
  if (op == "TopK" && opset < 10 && find_attr(np, "k")) {
    ins.resize(1);
    ins.push_back(add_const(g, name + ".k", i64_tensor({find_attr(np, "k")->i()}), loc));
  }
  if (op == "Split" && find_attr(np, "split")) {
    ins.resize(1);
    ins.push_back(add_const(g, name + ".split", i64_tensor(ints_attr(np, "split")), loc));
  }
  if (op == "Slice" && opset < 10) {
    ins.resize(1);
    ins.push_back(add_const(g, name + ".starts", i64_tensor(ints_attr(np, "starts")), loc));
    ins.push_back(add_const(g, name + ".ends", i64_tensor(ints_attr(np, "ends")), loc));
    if (find_attr(np, "axes")) ins.push_back(add_const(g, name + ".axes", i64_tensor(ints_attr(np, "axes")), loc));
  }
}

// Softmax, LogSoftmax and Hardmax below opset 13 normalise over every dim from `axis` on:
// fusert runs them when that is the last dim only.
Status check_last_axis(const Graph& g, const onnx::NodeProto& np, int64_t opset, const std::vector<ValueId>& ins,
                       const SourceLoc& loc) {
  const std::string& op = np.op_type();
  const int64_t r = static_cast<int64_t>(g.value(ins.at(0)).shape.size());
  const auto* a = find_attr(np, "axis");
  const int64_t axis = a ? (a->i() < 0 ? a->i() + r : a->i()) : 1;
  if (axis < 0 || axis >= r) {
    return error(StatusCode::kShapeMismatch)
           << loc.str() << ": axis " << (a ? a->i() : 1) << " out of range for a rank-" << r << " input";
  }
  if (axis != r - 1) {
    return error(StatusCode::kUnsupported)
           << loc.str() << ": " << op << " (opset " << opset << ") over dims " << axis << ".." << r - 1 << " of a rank-"
           << r << " input (fusert's " << op << " runs over one axis, the last here)";
  }
  return Status();
}

// ONNX Add, Sub, Mul, Div, Pow and Neg on integer tensors (i32 or i64) computed at run time:
// IntegerArithmetic (the fused kernels compute in f32). On i64 constants the first four stay
// themselves and fold at import (shape arithmetic); Neg of one becomes 0 - x, which folds too.
bool integer_arithmetic(const Graph& g, const std::string& op, const std::vector<ValueId>& ins) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Neg"};
  if (!ops.count(op)) return false;
  bool all_const = true;
  for (ValueId v : ins) {
    if (v == kNoValue) return false;
    const DType t = g.value(v).dtype;
    if (t != DType::kI32 && t != DType::kI64) return false;
    all_const &= g.value(v).is_constant;
  }
  return !(all_const && g.value(ins[0]).dtype == DType::kI64 && op != "Pow");
}

// The rewrites of the header comment: `*inputs` adjusted (constant axes added, inputs dropped);
// returns the fusert op to build.
Result<std::string> rewrite(Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name,
                            const SourceLoc& loc, size_t n_outs, std::vector<ValueId>* inputs) {
  const std::string& op = np.op_type();
  std::vector<ValueId>& ins = *inputs;
  std::string fop = op;
  if (ins.empty()) return error(StatusCode::kParseError) << loc.str() << ": " << op << " has no inputs";
  if (op == "Dropout") {
    if (n_outs > 1) return error(StatusCode::kUnsupported) << loc.str() << ": Dropout's mask output";
    // Inference: the identity, unless training_mode (input 2, opset 12) is on or not constant.
    if (ins.size() > 2) {
      const Value& t = g.value(ins[2]);
      if (!t.is_constant || t.data.numel() != 1 || static_cast<const uint8_t*>(t.data.raw())[0] != 0) {
        return error(StatusCode::kUnsupported) << loc.str() << ": Dropout in training mode (training_mode input "
                                               << (t.is_constant ? "true" : "not a constant") << ")";
      }
    }
    fop = "Identity";
    ins.resize(1);
  }
  if (integer_arithmetic(g, op, ins)) return std::string("IntegerArithmetic");  // rewrite_attrs sets `op`
  if (op == "Neg" && g.value(ins[0]).dtype == DType::kI64) {                    // an i64 constant: 0 - x, folded
    ins.insert(ins.begin(), add_const(g, name + ".zero", Tensor(DType::kI64, {}), loc));
    fop = "Sub";
  }
  if (op == "Slice" && opset >= 10 && ins.size() >= 3) {  // starts, ends or steps computed at run time,
    bool computed = false, one_axis = true;               // on one constant axis: DynamicSlice
    for (size_t i : {size_t{1}, size_t{2}, size_t{4}}) {
      if (i >= ins.size() || ins[i] == kNoValue) continue;
      computed |= g.value(ins[i]).data.empty();
      one_axis &= shape_numel(g.value(ins[i]).shape) == 1;
    }
    if (ins.size() > 3 && ins[3] != kNoValue)
      one_axis &= !g.value(ins[3]).data.empty() && g.value(ins[3]).data.numel() == 1;
    if (computed && one_axis) fop = "DynamicSlice";  // rewrite_attrs sets its axis; else Slice names the inputs
  }
  if ((op == "Reshape" || op == "Expand") && ins.size() == 2 && ins[1] != kNoValue && g.value(ins[1]).data.empty())
    fop = "Dynamic" + op;  // a shape computed at run time: one count per output dim (graph/data_dependent.h)
  if (op == "MaxPool" && n_outs > 1) fop = "MaxPoolWithIndices";  // the indices: a kernel of their own
  if ((op == "Conv" || op == "ConvTranspose" || op == "MaxPool" || op == "AveragePool") && fop == op &&
      g.value(ins[0]).shape.size() == 5)
    fop = op + "3D";  // NCDHW: the volumetric ops (kernels/cpu/volume.h)
  if ((op == "Sum" || op == "Mean") && ins.size() == 1) fop = "Identity";
  if (op == "Sum" && ins.size() == 2) fop = "Add";  // an epilogue step, where Sum's kernel is opaque
  if (op == "Scatter") fop = "ScatterElements";     // opset 9-10's name
  if (op == "CastLike") {                           // -> Cast to input 1's dtype (map_node sets `to`)
    if (ins.size() != 2) return error(StatusCode::kParseError) << loc.str() << ": CastLike takes 2 inputs";
    fop = "Cast";
    ins.resize(1);
  }
  if (op == "Squeeze") {  // -> Reshape to the squeezed shape
    FUSERT_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, squeezed_shape(g, np, ins, loc));
    fop = "Reshape";
    ins.resize(1);
    ins.push_back(add_const(g, name + ".shape", i64_tensor(shape), loc));
  }
  attrs_as_inputs(g, np, opset, name, loc, &ins);
  if (op == "Upsample" || (op == "Resize" && opset < 11)) {  // (X, scales) -> (X, roi, scales)
    if (op == "Upsample" && find_attr(np, "scales")) {
      const auto* a = find_attr(np, "scales");
      Tensor sc(DType::kF32, {static_cast<int64_t>(a->floats_size())});
      std::copy(a->floats().begin(), a->floats().end(), sc.f32());
      ins.resize(1);
      ins.push_back(add_const(g, name + ".scales", std::move(sc), loc));
    }
    if (ins.size() != 2) return error(StatusCode::kParseError) << loc.str() << ": " << op << " takes X and scales";
    ins.insert(ins.begin() + 1, kNoValue);
    fop = "Resize";
  }
  if (op == "PRelu" && opset < 7 && ins.size() == 2) {  // PRelu-6: a [C] slope is per channel (axis 1)
    const Value& x = g.value(ins[0]);
    const Value& sl = g.value(ins[1]);
    if (sl.shape.size() == 1 && x.shape.size() > 2 && sl.shape[0] == x.shape[1] && sl.shape[0] != 1) {
      if (!sl.is_constant || sl.data.empty())
        return error(StatusCode::kUnsupported)
               << loc.str() << ": PRelu (opset " << opset << ") slope must be a constant";
      Shape s(x.shape.size() - 1, 1);
      s[0] = sl.shape[0];
      ins[1] = add_const(g, name + ".slope", sl.data.clone().reshaped(s), loc);
    }
  }
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) {
    FUSERT_RETURN_IF_ERROR(check_last_axis(g, np, opset, ins, loc));
  }
  return fop;
}

// The attributes a rewrite sets on the fusert node: CastLike's `to` (input 1's dtype),
// Upsample's / Resize-10's mode and coordinate transformation.
Status rewrite_attrs(const Graph& g, const onnx::NodeProto& np, int64_t opset, const SourceLoc& loc, Node* node) {
  const std::string& op = np.op_type();
  Node& n = *node;
  if (op == "RNN" || op == "GRU" || op == "LSTM") {  // the activations list, joined by commas
    n.attrs["activations"].type = AttrType::kString;
    if (const auto* a = find_attr(np, "activations"))
      for (const std::string& f : a->strings())
        n.attrs["activations"].s += (n.attrs["activations"].s.empty() ? "" : ",") + f;
  }
  if (op == "RoiAlign" && opset < 16) {  // opset 10 has no coordinate_transformation_mode: its regions start at
    n.attrs["coordinate_transformation_mode"].type = AttrType::kString;  // the pixel corner
    n.attrs["coordinate_transformation_mode"].s = "output_half_pixel";
  }
  if (n.op == OpKind::kDynamicSlice) {  // one axis, a constant (input 3; absent: 0)
    const ValueId a = n.inputs.size() > 3 ? n.inputs[3] : kNoValue;
    const Tensor* t = a == kNoValue ? nullptr : &g.value(a).data;
    n.attrs["axis"].type = AttrType::kInt;
    n.attrs["axis"].i = !t ? 0 : t->dtype() == DType::kI32 ? static_cast<const int32_t*>(t->raw())[0] : t->i64()[0];
    if (n.inputs.size() > 3) n.inputs[3] = kNoValue;
  }
  if (n.op == OpKind::kIntegerArithmetic) {  // ONNX's op name, lower case
    n.attrs["op"].type = AttrType::kString;
    for (char ch : op) n.attrs["op"].s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  if (op == "CastLike") {
    const int64_t code = like_code(g.value(g.find_value(np.input(1))).dtype);
    if (code == 0)
      return error(StatusCode::kUnsupported)
             << loc.str() << ": CastLike to " << dtype_name(g.value(g.find_value(np.input(1))).dtype);
    n.attrs["to"].type = AttrType::kInt;
    n.attrs["to"].i = code;
  }
  if (op == "Upsample" || (op == "Resize" && opset < 11)) {
    std::string mode = "nearest";
    if (const auto* a = find_attr(np, "mode")) mode = a->s();
    if (mode == "bilinear") mode = "linear";  // Upsample-7's spelling
    n.attrs["mode"] = AttrValue{};
    n.attrs["mode"].type = AttrType::kString;
    n.attrs["mode"].s = mode;
    for (const auto& [k, v] : {std::pair<const char*, const char*>{"coordinate_transformation_mode", "asymmetric"},
                               {"nearest_mode", "floor"}}) {
      n.attrs[k].type = AttrType::kString;
      n.attrs[k].s = v;
    }
  }
  return Status();
}

// Opset 18's reductions (all but ReduceSum, whose table row takes the input) give axes as a
// constant input 1: it becomes the `axes` attribute.
Status axes_input_as_attr(const Graph& g, const std::string& op, const SourceLoc& loc, std::vector<ValueId>* ins,
                          Node* n) {
  const Value& a = g.value((*ins)[1]);
  if (!a.is_constant || a.data.dtype() != DType::kI64) {
    return error(StatusCode::kUnsupported) << loc.str() << ": " << op << " axes must be a constant";
  }
  AttrValue v;
  v.type = AttrType::kInts;
  v.ints.assign(a.data.i64(), a.data.i64() + a.data.numel());
  n->attrs["axes"] = v;
  ins->resize(1);
  return Status();
}

}  // namespace

Status map_node(Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name, const SourceLoc& loc,
                const std::string& base_dir, Mapped* out) {
  const std::string& op = np.op_type();
  std::vector<ValueId> ins;
  for (const std::string& in : np.input()) {
    if (in.empty()) {
      ins.push_back(kNoValue);
      continue;
    }
    const ValueId id = g.find_value(in);
    if (id == kNoValue || !g.value(id).shape_known) {
      return error(StatusCode::kParseError) << loc.str() << ": input '" << in << "' is not computed before this node";
    }
    ins.push_back(id);
  }
  while (!ins.empty() && ins.back() == kNoValue) ins.pop_back();
  std::vector<std::string> outs(np.output().begin(), np.output().end());
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  if (outs.empty()) return error(StatusCode::kParseError) << loc.str() << ": no outputs";

  if (op == "Constant") {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, constant_value(np, base_dir, loc));
    out->constant = std::move(t);
    return Status();
  }
  if ((op == "Shape" || op == "Size") && !ins.empty()) {
    FUSERT_ASSIGN_OR_RETURN(out->constant, shape_value(g, np, g.value(ins[0]).shape));
    return Status();
  }
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow") {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, window_value(g, np, ins, loc));
    out->constant = std::move(t);
    return Status();
  }
  if (op == "EyeLike") {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, eye_like_value(g, np, ins, loc));
    out->constant = std::move(t);
    return Status();
  }
  bool constant_inputs = true;  // Range of values known at run time only: the data-dependent op Range
  for (ValueId v : ins) constant_inputs &= v != kNoValue && g.value(v).is_constant && !g.value(v).data.empty();
  if (op == "ConstantOfShape" || (op == "Range" && (constant_inputs || ins.size() != 3))) {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, generated_value(g, np, ins, base_dir, loc));
    out->constant = std::move(t);
    return Status();
  }
  FUSERT_ASSIGN_OR_RETURN(const std::string fop, rewrite(g, np, opset, name, loc, outs.size(), &ins));
  Node& n = out->node;
  if (!find_op(fop, &n.op)) return error(StatusCode::kUnsupported) << loc.str() << ": op " << op;
  const OpInfo& info = op_info(n.op);
  if (op.rfind("Reduce", 0) == 0 && op != "ReduceSum" && ins.size() > 1) {  // opset 18: axes input
    FUSERT_RETURN_IF_ERROR(axes_input_as_attr(g, op, loc, &ins, &n));
  }
  if (static_cast<int>(ins.size()) < info.min_inputs || static_cast<int>(ins.size()) > info.max_inputs) {
    return error(StatusCode::kUnsupported) << loc.str() << ": " << ins.size() << " inputs (fusert's " << info.name
                                           << " takes " << info.min_inputs << ".." << info.max_inputs << ")";
  }
  if (static_cast<int>(outs.size()) > info.max_outputs) {
    return error(StatusCode::kUnsupported) << loc.str() << ": " << outs.size() << " outputs (fusert's " << info.name
                                           << " computes " << info.max_outputs << ")";
  }
  n.inputs = ins;
  for (size_t k = 0; k < outs.size(); ++k) {  // an output left unnamed before a named one: a name of its own
    std::string o = outs[k];
    for (int j = 0; o.empty() || (outs[k].empty() && g.find_value(o) != kNoValue); ++j)
      o = name + ".output" + std::to_string(k) + (j ? "_" + std::to_string(j) : "");
    n.outputs.push_back(g.add_value(o));
  }
  for (const auto& a : np.attribute()) {
    if (consumed_attr(op, a.name(), opset)) continue;
    const AttrSchema* s = info.find_attr(a.name());
    if (!s) return error(StatusCode::kUnsupported) << loc.str() << ": attribute '" << a.name() << "'";
    FUSERT_ASSIGN_OR_RETURN(n.attrs[a.name()], convert_attr(a, *s, loc));
  }
  FUSERT_RETURN_IF_ERROR(rewrite_attrs(g, np, opset, loc, &n));
  for (const AttrSchema& s : info.attrs) {
    if (n.attrs.count(s.name)) continue;
    if (s.required) return error(StatusCode::kParseError) << loc.str() << ": attribute '" << s.name << "' is required";
    n.attrs[s.name] = s.default_value;
  }
  return Status();
}

}  // namespace fusert::onnx_import
