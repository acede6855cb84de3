// Rules of shapes, axes and the forms the importer picks from a node's inputs: integer shape
// arithmetic, Reshape/Expand/Slice of computed shapes (the Dynamic ops), MaxPool's indices, 5-D
// convolutions and pools, Squeeze, and the axes, split, k and starts/ends that earlier opsets
// give as attributes and later ones as inputs.
#include <set>

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_rules.h"

namespace fusert::onnx_import {

namespace {

// ONNX Add, Sub, Mul, Div, Pow and Neg on integer tensors (i32 or i64) computed at run time:
// IntegerArithmetic (the fused kernels compute in f32). On i64 constants the first four stay
// themselves and fold at import (shape arithmetic); Neg of one becomes 0 - x, which folds too.
Status integer_arithmetic(RuleCtx& c) {
  bool all_const = true;
  for (ValueId v : c.ins) {
    if (v == kNoValue) return Status();
    const DType t = c.g.value(v).dtype;
    if (t != DType::kI32 && t != DType::kI64) return Status();
    all_const &= c.g.value(v).is_constant;
  }
  if (all_const && c.g.value(c.ins[0]).dtype == DType::kI64 && c.op() != "Pow") return Status();
  c.fop = "IntegerArithmetic";
  c.done = true;
  return Status();
}

// Its `op`: ONNX's op name, lower case.
Status integer_arithmetic_attrs(RuleCtx& c, Node* n) {
  if (n->op != OpKind::kIntegerArithmetic) return Status();
  n->attrs["op"].type = AttrType::kString;
  for (char ch : c.op()) n->attrs["op"].s += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return Status();
}

Status neg_of_i64(RuleCtx& c) {  // an i64 constant: 0 - x, folded
  if (c.g.value(c.ins[0]).dtype != DType::kI64) return Status();
  c.ins.insert(c.ins.begin(), add_rule_const(c.g, c.name + ".zero", Tensor(DType::kI64, {}), c.loc));
  c.fop = "Sub";
  return Status();
}

// Starts, ends or steps computed at run time, on one constant axis: DynamicSlice (else Slice
// names the inputs).
Status dynamic_slice(RuleCtx& c) {
  if (c.ins.size() < 3) return Status();
  bool computed = false, one_axis = true;
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}}) {
    if (i >= c.ins.size() || c.ins[i] == kNoValue) continue;
    computed |= c.g.value(c.ins[i]).data.empty();
    one_axis &= shape_numel(c.g.value(c.ins[i]).shape) == 1;
  }
  if (c.ins.size() > 3 && c.ins[3] != kNoValue)
    one_axis &= !c.g.value(c.ins[3]).data.empty() && c.g.value(c.ins[3]).data.numel() == 1;
  if (computed && one_axis) c.fop = "DynamicSlice";
  return Status();
}

// DynamicSlice's axis: a constant (input 3; absent: 0).
Status dynamic_slice_attrs(RuleCtx& c, Node* n) {
  if (n->op != OpKind::kDynamicSlice) return Status();
  const ValueId a = n->inputs.size() > 3 ? n->inputs[3] : kNoValue;
  const Tensor* t = a == kNoValue ? nullptr : &c.g.value(a).data;
  n->attrs["axis"].type = AttrType::kInt;
  n->attrs["axis"].i = !t ? 0 : t->dtype() == DType::kI32 ? static_cast<const int32_t*>(t->raw())[0] : t->i64()[0];
  if (n->inputs.size() > 3) n->inputs[3] = kNoValue;
  return Status();
}

// A shape computed at run time: one count per output dim (graph/data_dependent.h).
Status dynamic_shape(RuleCtx& c) {
  if (c.ins.size() == 2 && c.ins[1] != kNoValue && c.g.value(c.ins[1]).data.empty()) c.fop = "Dynamic" + c.op();
  return Status();
}

Status max_pool_indices(RuleCtx& c) {  // the indices: a kernel of their own
  if (c.n_outs > 1) c.fop = "MaxPoolWithIndices";
  return Status();
}

Status volumetric(RuleCtx& c) {  // NCDHW: the volumetric ops (kernels/cpu/volume.h)
  if (c.fop == c.op() && c.g.value(c.ins[0]).shape.size() == 5) c.fop = c.op() + "3D";
  return Status();
}

// Squeeze's output shape: the axes (attribute, or constant input 1) dropped, or every 1.
Result<std::vector<int64_t>> squeezed_shape(const RuleCtx& c) {
  const Shape& x = c.g.value(c.ins.at(0)).shape;
  std::vector<int64_t> axes = ints_attr(c.np, "axes");
  if (c.ins.size() > 1) {
    const Value& a = c.g.value(c.ins[1]);
    if (!a.is_constant || a.data.dtype() != DType::kI64) {
      return error(StatusCode::kUnsupported) << c.loc.str() << ": Squeeze axes must be a constant";
    }
    axes.assign(a.data.i64(), a.data.i64() + a.data.numel());
  }
  std::vector<bool> drop(x.size(), axes.empty());
  for (int64_t a : axes) {
    const int64_t k = a < 0 ? a + static_cast<int64_t>(x.size()) : a;
    if (k < 0 || k >= static_cast<int64_t>(x.size()) || x[static_cast<size_t>(k)] != 1) {
      return error(StatusCode::kShapeMismatch)
             << c.loc.str() << ": Squeeze axis " << a << " of " << shape_str(x) << " is not a dimension of size 1";
    }
    drop[static_cast<size_t>(k)] = true;
  }
  std::vector<int64_t> shape;
  for (size_t d = 0; d < x.size(); ++d) {
    if (!drop[d] || (axes.empty() && x[d] != 1)) shape.push_back(x[d]);
  }
  return shape;
}

Status squeeze_as_reshape(RuleCtx& c) {  // -> Reshape to the squeezed shape
  FUSERT_ASSIGN_OR_RETURN(const std::vector<int64_t> shape, squeezed_shape(c));
  c.fop = "Reshape";
  c.ins.resize(1);
  c.ins.push_back(add_rule_const(c.g, c.name + ".shape", i64_tensor(shape), c.loc));
  return Status();
}

// An attribute that later opsets take as input 1: the attribute's ints as that constant input.
Status attr_as_input(RuleCtx& c, const char* attr) {
  if (!find_attr(c.np, attr)) return Status();
  c.ins.resize(1);
  c.ins.push_back(add_rule_const(c.g, c.name + "." + attr, i64_tensor(ints_attr(c.np, attr)), c.loc));
  return Status();
}

Status axes_as_input(RuleCtx& c) { return attr_as_input(c, "axes"); }
Status split_as_input(RuleCtx& c) { return attr_as_input(c, "split"); }

Status k_as_input(RuleCtx& c) {  // TopK-1's k
  if (!find_attr(c.np, "k")) return Status();
  c.ins.resize(1);
  c.ins.push_back(add_rule_const(c.g, c.name + ".k", i64_tensor({find_attr(c.np, "k")->i()}), c.loc));
  return Status();
}

Status slice_attrs_as_inputs(RuleCtx& c) {  // Slice-1: starts, ends, axes
  c.ins.resize(1);
  c.ins.push_back(add_rule_const(c.g, c.name + ".starts", i64_tensor(ints_attr(c.np, "starts")), c.loc));
  c.ins.push_back(add_rule_const(c.g, c.name + ".ends", i64_tensor(ints_attr(c.np, "ends")), c.loc));
  if (find_attr(c.np, "axes"))
    c.ins.push_back(add_rule_const(c.g, c.name + ".axes", i64_tensor(ints_attr(c.np, "axes")), c.loc));
  return Status();
}

// Opset 18's reductions (all but ReduceSum, whose table row takes the input) give axes as a
// constant input 1: it becomes the `axes` attribute.
Status axes_input_as_attr(RuleCtx& c) {
  if (c.ins.size() < 2 || c.ins[1] == kNoValue) return Status();
  const Value& a = c.g.value(c.ins[1]);
  if (!a.is_constant || a.data.dtype() != DType::kI64) {
    return error(StatusCode::kUnsupported) << c.loc.str() << ": " << c.op() << " axes must be a constant";
  }
  AttrValue v;
  v.type = AttrType::kInts;
  v.ints.assign(a.data.i64(), a.data.i64() + a.data.numel());
  c.preset["axes"] = v;
  c.ins.resize(1);
  return Status();
}

}  // namespace

std::vector<OnnxRule> shape_rules() {
  std::vector<OnnxRule> r;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Neg"})
    r.push_back({op, 1, 0, {}, nullptr, integer_arithmetic, integer_arithmetic_attrs});
  r.push_back({"Neg", 1, 0, {}, nullptr, neg_of_i64});
  r.push_back({"Slice", 10, 0, {}, nullptr, dynamic_slice, dynamic_slice_attrs});
  r.push_back({"Slice", 1, 9, {"starts", "ends", "axes"}, nullptr, slice_attrs_as_inputs});
  r.push_back({"Reshape", 1, 0, {}, nullptr, dynamic_shape});
  r.push_back({"Expand", 1, 0, {}, nullptr, dynamic_shape});
  r.push_back({"MaxPool", 1, 0, {}, nullptr, max_pool_indices});
  for (const char* op : {"Conv", "ConvTranspose", "MaxPool", "AveragePool"})
    r.push_back({op, 1, 0, {}, nullptr, volumetric});
  r.push_back({"Squeeze", 1, 0, {"axes"}, nullptr, squeeze_as_reshape});
  r.push_back({"Unsqueeze", 1, 0, {"axes"}, nullptr, axes_as_input});
  r.push_back({"ReduceSum", 1, 0, {"axes"}, nullptr, axes_as_input});
  r.push_back({"Split", 1, 0, {"split", "num_outputs"}, nullptr, split_as_input});
  r.push_back({"TopK", 1, 9, {"k"}, nullptr, k_as_input});
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    r.push_back({op, 1, 0, {}, nullptr, axes_input_as_attr});
  return r;
}

}  // namespace fusert::onnx_import
