// Shape functions for elementwise, broadcast, shape-manipulation and GEMM ops (ONNX opset 17).
// Spatial ops (Conv, pooling) live in shape_functions_spatial.cc.
#include <algorithm>
#include <cmath>

#include "graph/base/target_shape.h"
#include "graph/shape_inference.h"

namespace fusert {

static Status same_as_input(ShapeContext& c) {
  c.set_out(0, c.in(0), c.in_dtype(0));
  return Status();
}

Status shape_Relu(ShapeContext& c) { return same_as_input(c); }
Status shape_Sigmoid(ShapeContext& c) { return same_as_input(c); }
Status shape_HardSigmoid(ShapeContext& c) { return same_as_input(c); }
Status shape_HardSwish(ShapeContext& c) { return same_as_input(c); }
Status shape_Softplus(ShapeContext& c) { return same_as_input(c); }
Status shape_FakeQuantize(ShapeContext& c) {
  const double s = c.node.attr_f("scale");
  if (!(s > 0) || !std::isfinite(s)) return c.fail() << "scale " << s << " (a positive finite number)";
  return same_as_input(c);
}
Status shape_Neg(ShapeContext& c) { return same_as_input(c); }
Status shape_Exp(ShapeContext& c) { return same_as_input(c); }
Status shape_Abs(ShapeContext& c) { return same_as_input(c); }
Status shape_Log(ShapeContext& c) { return same_as_input(c); }
Status shape_Reciprocal(ShapeContext& c) { return same_as_input(c); }
Status shape_LeakyRelu(ShapeContext& c) { return same_as_input(c); }
Status shape_Swish(ShapeContext& c) { return same_as_input(c); }
Status shape_Identity(ShapeContext& c) { return same_as_input(c); }
Status shape_Elu(ShapeContext& c) { return same_as_input(c); }
Status shape_Selu(ShapeContext& c) { return same_as_input(c); }
Status shape_Celu(ShapeContext& c) { return same_as_input(c); }
Status shape_ThresholdedRelu(ShapeContext& c) { return same_as_input(c); }
Status shape_Shrink(ShapeContext& c) { return same_as_input(c); }
Status shape_Softsign(ShapeContext& c) { return same_as_input(c); }
Status shape_Sign(ShapeContext& c) { return same_as_input(c); }
Status shape_Floor(ShapeContext& c) { return same_as_input(c); }
Status shape_Ceil(ShapeContext& c) { return same_as_input(c); }
Status shape_Round(ShapeContext& c) { return same_as_input(c); }
Status shape_Sin(ShapeContext& c) { return same_as_input(c); }
Status shape_Cos(ShapeContext& c) { return same_as_input(c); }
Status shape_Tan(ShapeContext& c) { return same_as_input(c); }
Status shape_Asin(ShapeContext& c) { return same_as_input(c); }
Status shape_Acos(ShapeContext& c) { return same_as_input(c); }
Status shape_Atan(ShapeContext& c) { return same_as_input(c); }
Status shape_Sinh(ShapeContext& c) { return same_as_input(c); }
Status shape_Cosh(ShapeContext& c) { return same_as_input(c); }
Status shape_Asinh(ShapeContext& c) { return same_as_input(c); }
Status shape_Acosh(ShapeContext& c) { return same_as_input(c); }
Status shape_Atanh(ShapeContext& c) { return same_as_input(c); }

Status shape_Clip(ShapeContext& c) {
  // Opset 17 takes min/max as optional scalar inputs; they must be constants here.
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    const Tensor* t = c.constant(i);
    // A value computed at run time is valid ONNX that fusert does not run (static attributes).
    if (!t) return c.unsupported() << "input " << i << " (min/max) must be a constant";
    if (t->numel() != 1) return c.fail() << "input " << i << " (min/max) must be a scalar constant";
  }
  return same_as_input(c);
}

static Status broadcast_binary(ShapeContext& c) {
  // Integer arithmetic only on constants (folded by graph/passes); kernels are f32.
  if ((c.in_dtype(0) != DType::kF32 || c.in_dtype(1) != DType::kF32) &&
      !(c.constant_derived(0) && c.constant_derived(1))) {
    return c.unsupported() << "inputs must be f32 (got " << dtype_name(c.in_dtype(0)) << " and "
                           << dtype_name(c.in_dtype(1))
                           << "); integer arithmetic is only supported on constants; Cast to: 1 first";
  }
  Shape out;
  if (!broadcast_shapes(c.in(0), c.in(1), &out)) {
    return c.fail() << "cannot broadcast " << shape_str(c.in(0)) << " with " << shape_str(c.in(1));
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}
Status shape_Add(ShapeContext& c) { return broadcast_binary(c); }
Status shape_Sub(ShapeContext& c) { return broadcast_binary(c); }
Status shape_Mul(ShapeContext& c) { return broadcast_binary(c); }
Status shape_Div(ShapeContext& c) { return broadcast_binary(c); }

// Inputs [from, to) are per-channel vectors [C] of input 0 [N, C, ...].
static Status per_channel(ShapeContext& c, size_t from, size_t to) {
  const int64_t ch = c.in(0)[1];
  for (size_t i = from; i < to; ++i) {
    if (c.in(i) != Shape{ch}) {
      return c.fail() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name << "') expected shape [" << ch
                      << "], got " << shape_str(c.in(i));
    }
  }
  return Status();
}

Status shape_BatchNormalization(ShapeContext& c) {
  const Shape& x = c.in(0);
  if (x.size() < 2) return c.fail() << "input must have rank >= 2, got " << shape_str(x);
  FUSERT_RETURN_IF_ERROR(per_channel(c, 1, 5));
  if (c.node.attr_i("training_mode") != 0) return c.unsupported() << "training_mode=1 is not supported";
  return same_as_input(c);
}

Status shape_InstanceNormalization(ShapeContext& c) {
  const Shape& x = c.in(0);
  if (x.size() < 3) return c.fail() << "input must be [N, C, spatial...], got " << shape_str(x);
  FUSERT_RETURN_IF_ERROR(per_channel(c, 1, 3));
  return same_as_input(c);
}

static int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

Status shape_Flatten(ShapeContext& c) {
  const Shape& x = c.in(0);
  int64_t axis = norm_axis(c.node.attr_i("axis"), x.size());
  if (axis < 0 || axis > static_cast<int64_t>(x.size())) return c.fail() << "axis out of range for " << shape_str(x);
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) (i < axis ? a : b) *= x[static_cast<size_t>(i)];
  c.set_out(0, {a, b}, c.in_dtype(0));
  return Status();
}

Status shape_Reshape(ShapeContext& c) {
  std::vector<int64_t> target = c.node.attr_ints("shape");
  if (c.has_input(1)) {
    const Tensor* t = c.constant(1);
    if (!t) return c.unsupported() << "input 1 (shape) must be a constant (fusert's shapes are static)";
    if (t->dtype() != DType::kI64) return c.fail() << "input 1 (shape) must be an i64 constant";
    target.assign(t->i64(), t->i64() + t->numel());
  }
  Shape out;
  const Status fit = reshape_to(c.in(0), target, c.node.attr_i("allowzero") != 0, &out);
  if (!fit.ok()) return c.fail() << fit.message();
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Transpose(ShapeContext& c) {
  const Shape& x = c.in(0);
  std::vector<int64_t> perm = c.node.attr_ints("perm");
  if (perm.empty()) {
    for (size_t i = 0; i < x.size(); ++i) perm.push_back(static_cast<int64_t>(x.size() - 1 - i));
    c.node.attrs["perm"].ints = perm;
  }
  if (perm.size() != x.size()) return c.fail() << "perm has " << perm.size() << " entries for rank " << x.size();
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < perm.size(); ++i) {  // the whole perm is validated before it indexes x
    if (sorted[i] != static_cast<int64_t>(i)) return c.fail() << "perm " << shape_str(perm) << " is not a permutation";
  }
  Shape out;
  for (int64_t p : perm) out.push_back(x[static_cast<size_t>(p)]);
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Concat(ShapeContext& c) {
  Shape out = c.in(0);
  int64_t axis = norm_axis(c.node.attr_i("axis"), out.size());
  if (axis < 0 || axis >= static_cast<int64_t>(out.size()))
    return c.fail() << "axis out of range for " << shape_str(out);
  c.node.attrs["axis"].i = axis;
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    const Shape& s = c.in(i);
    bool ok = s.size() == out.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = static_cast<int64_t>(d) == axis || s[d] == out[d];
    if (!ok)
      return c.fail() << "input " << i << " shape " << shape_str(s) << " does not match " << shape_str(c.in(0))
                      << " outside axis " << axis;
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Gemm(ShapeContext& c) {
  const Shape& a = c.in(0);
  const Shape& b = c.in(1);
  if (a.size() != 2 || b.size() != 2)
    return c.fail() << "A and B must be 2-D, got " << shape_str(a) << " and " << shape_str(b);
  bool ta = c.node.attr_i("transA") != 0, tb = c.node.attr_i("transB") != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb)
    return c.fail() << "inner dimensions differ: A' is [" << m << ", " << k << "], B' is [" << kb << ", " << n << "]";
  if (c.has_input(2)) {
    Shape out;
    if (c.in(2).size() > 2 || !broadcast_shapes(Shape{m, n}, c.in(2), &out) || out != Shape{m, n}) {
      return c.fail() << "C shape " << shape_str(c.in(2)) << " does not broadcast to [" << m << ", " << n << "]";
    }
  }
  c.set_out(0, {m, n});
  return Status();
}

Status shape_MatMul(ShapeContext& c) {
  Shape a = c.in(0), b = c.in(1);
  if (a.empty() || b.empty()) return c.fail() << "inputs must have rank >= 1";
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb) return c.fail() << "inner dimensions differ: " << shape_str(c.in(0)) << " @ " << shape_str(c.in(1));
  Shape batch;
  if (!broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), &batch)) {
    return c.fail() << "batch dimensions do not broadcast: " << shape_str(c.in(0)) << " @ " << shape_str(c.in(1));
  }
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  c.set_out(0, out);
  return Status();
}

Status shape_Softmax(ShapeContext& c) {
  int64_t axis = norm_axis(c.node.attr_i("axis"), c.in(0).size());
  if (axis < 0 || axis >= static_cast<int64_t>(c.in(0).size()))
    return c.fail() << "axis out of range for " << shape_str(c.in(0));
  c.node.attrs["axis"].i = axis;
  return same_as_input(c);
}

Status shape_LogSoftmax(ShapeContext& c) { return shape_Softmax(c); }
Status shape_Hardmax(ShapeContext& c) { return shape_Softmax(c); }

Status shape_GlobalAveragePool(ShapeContext& c) {
  Shape x = c.in(0);
  if (x.size() < 3) return c.fail() << "input must be [N, C, spatial...], got " << shape_str(x);
  for (size_t i = 2; i < x.size(); ++i) x[i] = 1;
  c.set_out(0, x);
  return Status();
}

}  // namespace fusert
