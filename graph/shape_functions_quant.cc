// Shape functions of the quantisation ops (graph/ops.def, ONNX opset 10-21): QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, ConvInteger. Each checks the dtypes
// ONNX allows that fusert runs (i8 and u8 values, an i32 accumulator for DequantizeLinear) and
// that a scale or zero point is a scalar or 1-D along its axis.
#include "graph/shape_inference.h"

namespace fusert {

Status shape_MatMul(ShapeContext& c);
Status shape_Conv(ShapeContext& c);

namespace {

bool int8_type(DType t) { return t == DType::kI8 || t == DType::kU8; }

// Scale (input 1) and zero point (input 2, optional) of X (input 0): scalars, or 1-D with the
// size of X's dim `axis` (normalised into the node's attribute); per-axis only when that size > 1.
Status check_scale(ShapeContext& c, DType zp_type) {
  if (c.node.attr_i("block_size") != 0)
    return c.unsupported() << "blocked quantisation (block_size " << c.node.attr_i("block_size") << ")";
  const Shape& x = c.in(0);
  const Shape& s = c.in(1);
  if (c.in_dtype(1) != DType::kF32) return c.fail() << "scale is " << dtype_name(c.in_dtype(1)) << ", not float";
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = c.node.attr_i("axis");
  if (s.size() > 1 || (s.size() == 1 && s[0] != 1)) {
    if (axis < -r || axis >= r)
      return c.fail() << "axis " << axis << " out of range for input " << shape_str(x) << " (per-axis scale)";
    if (axis < 0) axis += r;
    if (s.size() != 1 || s[0] != x[static_cast<size_t>(axis)])
      return c.fail() << "scale " << shape_str(s) << " must be a scalar or [" << x[static_cast<size_t>(axis)]
                      << "] (input dim " << axis << " of " << shape_str(x) << ")";
    c.node.attrs["axis"].i = axis;
  }
  if (c.has_input(2)) {
    if (c.in(2) != s && shape_numel(c.in(2)) != shape_numel(s))
      return c.fail() << "zero_point " << shape_str(c.in(2)) << " and scale " << shape_str(s) << " differ";
    if (c.in_dtype(2) != zp_type)
      return c.fail() << "zero_point is " << dtype_name(c.in_dtype(2)) << ", expected " << dtype_name(zp_type);
  }
  return Status();
}

// A zero point of MatMulInteger / ConvInteger: absent, a scalar, or 1-D of `n` (per row, column
// or output channel) of the operand's dtype.
Status check_zero_point(ShapeContext& c, size_t i, int64_t n, const char* what) {
  if (!c.has_input(i)) return Status();
  if (c.in_dtype(i) != c.in_dtype(i - 2))
    return c.fail() << what << " zero point is " << dtype_name(c.in_dtype(i)) << ", its operand "
                    << dtype_name(c.in_dtype(i - 2));
  const int64_t k = shape_numel(c.in(i));
  if (k != 1 && !(c.in(i).size() == 1 && k == n))
    return c.fail() << what << " zero point " << shape_str(c.in(i)) << " must be a scalar or [" << n << "]";
  return Status();
}

Status check_int8_operands(ShapeContext& c) {
  for (size_t i = 0; i < 2; ++i)
    if (!int8_type(c.in_dtype(i)))
      return c.unsupported() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name << "') is "
                             << dtype_name(c.in_dtype(i)) << " (int8 or uint8)";
  return Status();
}

}  // namespace

Status shape_QuantizeLinear(ShapeContext& c) {
  if (c.in_dtype(0) != DType::kF32)
    return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (fusert quantises float)";
  DType t = DType::kU8;
  const int64_t od = c.node.attr_i("output_dtype");
  if (c.has_input(2)) {
    t = c.in_dtype(2);
    if (od != 0 && od != (t == DType::kI8 ? 3 : 2))
      return c.fail() << "output_dtype " << od << " disagrees with the zero point's " << dtype_name(t);
  } else if (od == 3) {
    t = DType::kI8;
  } else if (od != 0 && od != 2) {
    return c.unsupported() << "output_dtype " << od << " (fusert quantises to int8 (3) and uint8 (2))";
  }
  if (!int8_type(t)) return c.unsupported() << "quantising to " << dtype_name(t) << " (int8 or uint8)";
  FUSERT_RETURN_IF_ERROR(check_scale(c, t));
  c.set_out(0, c.in(0), t);
  return Status();
}

Status shape_DequantizeLinear(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  if (!int8_type(t) && t != DType::kI32)
    return c.unsupported() << "input is " << dtype_name(t) << " (int8, uint8 or int32)";
  const int64_t od = c.node.attr_i("output_dtype");
  if (od != 0 && od != 1) return c.unsupported() << "output_dtype " << od << " (fusert dequantises to float, 1)";
  FUSERT_RETURN_IF_ERROR(check_scale(c, t));
  c.set_out(0, c.in(0), DType::kF32);
  return Status();
}

Status shape_DynamicQuantizeLinear(ShapeContext& c) {
  if (c.in_dtype(0) != DType::kF32) return c.fail() << "input is " << dtype_name(c.in_dtype(0)) << ", not float";
  if (c.node.outputs.size() != 3)
    return c.fail() << "has " << c.node.outputs.size() << " outputs (y, y_scale, y_zero_point: 3)";
  c.set_out(0, c.in(0), DType::kU8);
  c.set_out(1, {}, DType::kF32);
  c.set_out(2, {}, DType::kU8);
  return Status();
}

Status shape_MatMulInteger(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(check_int8_operands(c));
  const Shape& a = c.in(0);
  const Shape& b = c.in(1);
  if (a.size() < 2 || b.size() < 2)
    return c.unsupported() << "rank-1 operands " << shape_str(a) << " @ " << shape_str(b) << " (rank >= 2)";
  Node tmp = c.node;
  tmp.inputs.resize(2);
  ShapeContext t{c.graph, tmp};
  FUSERT_RETURN_IF_ERROR(shape_MatMul(t));
  FUSERT_RETURN_IF_ERROR(check_zero_point(c, 2, a[a.size() - 2], "A's"));
  FUSERT_RETURN_IF_ERROR(check_zero_point(c, 3, b.back(), "B's"));
  c.set_out(0, c.graph.value(c.node.outputs[0]).shape, DType::kI32);
  return Status();
}

Status shape_ConvInteger(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(check_int8_operands(c));
  Node tmp = c.node;
  tmp.inputs.resize(2);
  ShapeContext t{c.graph, tmp};
  FUSERT_RETURN_IF_ERROR(shape_Conv(t));
  c.node.attrs = tmp.attrs;  // kernel_shape and pads resolved
  FUSERT_RETURN_IF_ERROR(check_zero_point(c, 2, 1, "X's"));
  FUSERT_RETURN_IF_ERROR(check_zero_point(c, 3, c.in(1)[0], "W's"));
  c.set_out(0, c.graph.value(c.node.outputs[0]).shape, DType::kI32);
  return Status();
}

}  // namespace fusert

namespace fusert {

Status shape_QLinearConv(ShapeContext& c) {
  for (size_t i : {size_t{0}, size_t{3}})
    if (c.in_dtype(i) != DType::kI8 && c.in_dtype(i) != DType::kU8)
      return c.unsupported() << "input " << i << " is " << dtype_name(c.in_dtype(i)) << " (int8 or uint8)";
  for (size_t i = 1; i < 8; ++i) {
    if (!c.has_input(i)) return c.fail() << "input " << i << " is empty";
    if (!c.constant(i))
      return c.unsupported() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name
                             << "') is computed at run time (scales and zero points must be constants)";
  }
  Node tmp = c.node;
  tmp.inputs = {c.node.inputs[0], c.node.inputs[3]};
  ShapeContext t{c.graph, tmp};
  FUSERT_RETURN_IF_ERROR(shape_Conv(t));
  c.node.attrs = tmp.attrs;
  const int64_t m = c.in(3)[0];
  for (size_t i : {size_t{1}, size_t{6}})
    if (shape_numel(c.in(i)) != 1) return c.fail() << "input " << i << " (a scale) must be a scalar";
  if (shape_numel(c.in(4)) != 1 && shape_numel(c.in(4)) != m)
    return c.fail() << "w_scale " << shape_str(c.in(4)) << " must be a scalar or [" << m << "]";
  if (c.in_dtype(2) != c.in_dtype(0) || c.in_dtype(5) != c.in_dtype(3) || !int8_type(c.in_dtype(7)))
    return c.fail() << "zero points must have their operand's dtype (x " << dtype_name(c.in_dtype(0)) << ", w "
                    << dtype_name(c.in_dtype(3)) << ") and y's be int8 or uint8";
  if (shape_numel(c.in(5)) != 1 && shape_numel(c.in(5)) != m)
    return c.fail() << "w_zero_point " << shape_str(c.in(5)) << " must be a scalar or [" << m << "]";
  if (c.has_input(8) && (c.in_dtype(8) != DType::kI32 || shape_numel(c.in(8)) != m))
    return c.fail() << "B must be int32 [" << m << "], got " << dtype_name(c.in_dtype(8)) << " " << shape_str(c.in(8));
  c.set_out(0, c.graph.value(c.node.outputs[0]).shape, c.in_dtype(7));
  return Status();
}

Status shape_QLinearAdd(ShapeContext& c) {
  for (size_t i : {size_t{0}, size_t{3}})
    if (!int8_type(c.in_dtype(i)))
      return c.unsupported() << "input " << i << " is " << dtype_name(c.in_dtype(i)) << " (int8 or uint8)";
  if (c.in(0) != c.in(3)) return c.fail() << "A " << shape_str(c.in(0)) << " and B " << shape_str(c.in(3)) << " differ";
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}, size_t{6}, size_t{7}}) {
    if (!c.constant(i) || shape_numel(c.in(i)) != 1)
      return c.fail() << "input " << i << " must be a one-value constant (a scale or zero point)";
  }
  if (c.in_dtype(2) != c.in_dtype(0) || c.in_dtype(5) != c.in_dtype(3) || !int8_type(c.in_dtype(7)))
    return c.fail() << "zero points must have their operand's dtype";
  c.set_out(0, c.in(0), c.in_dtype(7));
  return Status();
}

}  // namespace fusert
