// Shape functions for sequence-model ops: LayerNormalization, Gelu, unary math, reductions,
// Split, Slice, Gather, Unsqueeze, Where, Cast (ONNX opset 17; Gelu as opset 20).
#include <algorithm>

#include "graph/shape_inference.h"

namespace fusert {

namespace {

Status same_as_input(ShapeContext& c) {
  c.set_out(0, c.in(0), c.in_dtype(0));
  return Status();
}

int64_t norm_axis(int64_t axis, size_t rank) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; }

// Reads an i64 constant input; `what` names it in errors.
Status const_ints(ShapeContext& c, size_t i, const char* what, std::vector<int64_t>* out) {
  const Tensor* t = c.constant(i);
  if (!t) {
    return c.unsupported() << "input " << i << " (" << what << ") must be a constant (fusert's shapes are static)";
  }
  if (t->dtype() != DType::kI64) return c.fail() << "input " << i << " (" << what << ") must be an i64 constant";
  out->assign(t->i64(), t->i64() + t->numel());
  return Status();
}

Status check_f32(ShapeContext& c, size_t i) {
  if (c.in_dtype(i) != DType::kF32)
    return c.fail() << "input " << i << " must be f32, got " << dtype_name(c.in_dtype(i));
  return Status();
}

// Normalises reduction axes against `rank`, sorted and unique; empty = all axes.
Status reduce_shape(ShapeContext& c, std::vector<int64_t> axes) {
  const Shape& x = c.in(0);
  if (axes.empty()) {
    if (c.node.attr_i("noop_with_empty_axes") != 0) {
      // Canonical even here: ReduceSum's lowering reads `axes` (empty: a copy), which its
      // schema lacks (axes come as input 1).
      c.node.attrs["axes"].type = AttrType::kInts;
      c.node.attrs["axes"].ints.clear();
      return same_as_input(c);
    }
    for (size_t i = 0; i < x.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  for (int64_t& a : axes) {
    a = norm_axis(a, x.size());
    if (a < 0 || a >= static_cast<int64_t>(x.size())) return c.fail() << "axis out of range for " << shape_str(x);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  c.node.attrs["axes"].type = AttrType::kInts;
  c.node.attrs["axes"].ints = axes;  // canonical: lowering reads normalised axes here
  Shape out;
  bool keep = c.node.attr_i("keepdims") != 0;
  for (size_t i = 0; i < x.size(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
    if (!reduced)
      out.push_back(x[i]);
    else if (keep)
      out.push_back(1);
  }
  c.set_out(0, out);
  return check_f32(c, 0);
}

}  // namespace

Status shape_LayerNormalization(ShapeContext& c) {
  const Shape& x = c.in(0);
  int64_t axis = norm_axis(c.node.attr_i("axis"), x.size());
  if (axis < 0 || axis >= static_cast<int64_t>(x.size())) return c.fail() << "axis out of range for " << shape_str(x);
  c.node.attrs["axis"].i = axis;
  Shape norm(x.begin() + axis, x.end());
  for (size_t i = 1; i < 3; ++i) {
    if (!c.has_input(i)) continue;
    if (c.in(i) != norm) {
      return c.fail() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name << "') expected shape "
                      << shape_str(norm) << ", got " << shape_str(c.in(i));
    }
  }
  FUSERT_RETURN_IF_ERROR(check_f32(c, 0));
  return same_as_input(c);
}

Status shape_Gelu(ShapeContext& c) {
  const std::string& a = c.node.attr_s("approximate");
  if (a != "none" && a != "tanh") return c.fail() << "approximate must be 'none' or 'tanh', got '" << a << "'";
  FUSERT_RETURN_IF_ERROR(check_f32(c, 0));
  return same_as_input(c);
}
Status shape_Erf(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(check_f32(c, 0));
  return same_as_input(c);
}
Status shape_Tanh(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(check_f32(c, 0));
  return same_as_input(c);
}
Status shape_Sqrt(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(check_f32(c, 0));
  return same_as_input(c);
}

Status shape_Pow(ShapeContext& c) {
  Shape out;
  if (!broadcast_shapes(c.in(0), c.in(1), &out))
    return c.fail() << "cannot broadcast " << shape_str(c.in(0)) << " with " << shape_str(c.in(1));
  c.set_out(0, out);
  return check_f32(c, 0);
}

Status shape_ReduceMean(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceMax(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceMin(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceProd(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceL1(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceL2(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceSumSquare(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceLogSum(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }
Status shape_ReduceLogSumExp(ShapeContext& c) { return reduce_shape(c, c.node.attr_ints("axes")); }

Status shape_ReduceSum(ShapeContext& c) {
  std::vector<int64_t> axes;
  if (c.has_input(1)) FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "axes", &axes));
  return reduce_shape(c, axes);
}

Status shape_Split(ShapeContext& c) {
  const Shape& x = c.in(0);
  int64_t axis = norm_axis(c.node.attr_i("axis"), x.size());
  if (axis < 0 || axis >= static_cast<int64_t>(x.size())) return c.fail() << "axis out of range for " << shape_str(x);
  c.node.attrs["axis"].i = axis;
  const int64_t n = static_cast<int64_t>(c.node.outputs.size()), len = x[static_cast<size_t>(axis)];
  std::vector<int64_t> split;
  if (c.has_input(1)) {
    FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "split", &split));
    int64_t total = 0;
    for (int64_t v : split) {
      if (v < 0) return c.fail() << "split sizes must be >= 0, got " << shape_str(split);
      total += v;
    }
    if (static_cast<int64_t>(split.size()) != n || total != len) {
      return c.fail() << "split " << shape_str(split) << " must have " << n << " entries summing to " << len;
    }
  } else {
    if (len % n != 0) return c.fail() << "axis length " << len << " does not split into " << n << " equal parts";
    split.assign(static_cast<size_t>(n), len / n);
  }
  for (int64_t i = 0; i < n; ++i) {
    Shape s = x;
    s[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
    c.set_out(static_cast<size_t>(i), s, c.in_dtype(0));
  }
  return Status();
}

Status shape_Slice(ShapeContext& c) {
  const Shape& x = c.in(0);
  std::vector<int64_t> starts, ends, axes, steps;
  FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "starts", &starts));
  FUSERT_RETURN_IF_ERROR(const_ints(c, 2, "ends", &ends));
  if (c.has_input(3))
    FUSERT_RETURN_IF_ERROR(const_ints(c, 3, "axes", &axes));
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (c.has_input(4))
    FUSERT_RETURN_IF_ERROR(const_ints(c, 4, "steps", &steps));
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return c.fail() << "starts, ends, axes and steps must have the same length";
  }
  Shape out = x;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = norm_axis(axes[i], x.size());
    if (a < 0 || a >= static_cast<int64_t>(x.size()))
      return c.fail() << "axis " << axes[i] << " out of range for " << shape_str(x);
    int64_t d = x[static_cast<size_t>(a)], st = steps[i];
    if (st == 0) return c.fail() << "steps must be non-zero";
    auto clampi = [&](int64_t v, int64_t lo, int64_t hi) {
      v = v < 0 ? v + d : v;
      return std::min(std::max(v, lo), hi);
    };
    // ONNX: starts clamp into [0, d - 1] for negative steps, ends into [-1, d - 1].
    int64_t b = st > 0 ? clampi(starts[i], 0, d) : clampi(starts[i], 0, d - 1);
    int64_t e = st > 0 ? clampi(ends[i], 0, d) : clampi(ends[i], -1, d - 1);
    int64_t len = st > 0 ? std::max<int64_t>(0, (e - b + st - 1) / st) : std::max<int64_t>(0, (b - e - st - 1) / -st);
    out[static_cast<size_t>(a)] = len;
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Gather(ShapeContext& c) {
  const Shape& x = c.in(0);
  const Shape& idx = c.in(1);
  int64_t axis = norm_axis(c.node.attr_i("axis"), x.size());
  if (axis < 0 || axis >= static_cast<int64_t>(x.size())) return c.fail() << "axis out of range for " << shape_str(x);
  c.node.attrs["axis"].i = axis;
  if (c.in_dtype(1) != DType::kI64 && c.in_dtype(1) != DType::kI32) {
    return c.fail() << "indices must be i64 or i32, got " << dtype_name(c.in_dtype(1));
  }
  if (const Tensor* t = c.constant(1)) {  // constant indices are range-checked now
    for (int64_t i = 0; t->dtype() == DType::kI64 && i < t->numel(); ++i) {
      int64_t v = t->i64()[i];
      if (v < -x[static_cast<size_t>(axis)] || v >= x[static_cast<size_t>(axis)])
        return c.fail() << "index " << v << " out of range";
    }
  }
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Unsqueeze(ShapeContext& c) {
  std::vector<int64_t> axes;
  FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "axes", &axes));
  const Shape& x = c.in(0);
  size_t rank = x.size() + axes.size();
  for (int64_t& a : axes) {
    a = norm_axis(a, rank);
    if (a < 0 || a >= static_cast<int64_t>(rank)) return c.fail() << "axis out of range for output rank " << rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return c.fail() << "repeated axis";
  Shape out;
  size_t k = 0;
  for (size_t i = 0; i < rank; ++i) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end())
      out.push_back(1);
    else
      out.push_back(x[k++]);
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_Where(ShapeContext& c) {
  Shape t, out;
  if (c.in_dtype(0) != DType::kBool)
    return c.fail() << "condition must be bool, got " << dtype_name(c.in_dtype(0)) << " (use Cast to: 9)";
  if (c.in_dtype(1) != c.in_dtype(2)) return c.fail() << "X and Y dtypes differ";
  if (!broadcast_shapes(c.in(0), c.in(1), &t) || !broadcast_shapes(t, c.in(2), &out)) {
    return c.fail() << "cannot broadcast " << shape_str(c.in(0)) << ", " << shape_str(c.in(1)) << " and "
                    << shape_str(c.in(2));
  }
  c.set_out(0, out, c.in_dtype(1));
  return Status();
}

Status shape_Cast(ShapeContext& c) {
  int64_t to = c.node.attr_i("to");
  DType t;
  switch (to) {
    case 1:
      t = DType::kF32;
      break;
    case 6:
      t = DType::kI32;
      break;
    case 7:
      t = DType::kI64;
      break;
    case 9:
      t = DType::kBool;
      break;
    case 2:
      t = DType::kU8;
      break;
    case 3:
      t = DType::kI8;
      break;
    default:
      return c.unsupported() << "Cast to TensorProto type " << to
                             << " is not supported (1 float, 2 uint8, 3 int8, 6 int32, 7 int64, 9 bool"
                             << (to == 11 ? "; SessionOptions::f64_as_f32, infer --f64-as-f32, runs a float64 model "
                                            "in float32"
                                          : "")
                             << ")";
  }
  DType from = c.in_dtype(0);
  if (from == DType::kF16 || from == DType::kBF16)
    return c.unsupported() << "Cast from " << dtype_name(from) << " is not supported";
  c.set_out(0, c.in(0), t);
  return Status();
}

}  // namespace fusert

namespace fusert {

Status shape_Expand(ShapeContext& c) {
  std::vector<int64_t> target;
  FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "shape", &target));
  Shape out;
  if (!broadcast_shapes(c.in(0), Shape(target.begin(), target.end()), &out)) {
    return c.fail() << shape_str(c.in(0)) << " does not broadcast to "
                    << shape_str(Shape(target.begin(), target.end()));
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

// Pads from input 1 (opset >= 11) or the attribute, canonicalised into the attribute; the
// constant from input 2 into `value`.
Status shape_Pad(ShapeContext& c) {
  std::vector<int64_t> pads = c.node.attr_ints("pads");
  if (c.has_input(1)) FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "pads", &pads));
  if (c.has_input(3)) return c.unsupported() << "input 3 (axes) is not supported";
  const Shape& x = c.in(0);
  if (pads.size() != 2 * x.size()) {
    return c.fail() << "pads has " << pads.size() << " values for a rank-" << x.size() << " input (2 per dim)";
  }
  const std::string& mode = c.node.attr_s("mode");
  if (mode != "constant" && mode != "reflect" && mode != "edge") return c.unsupported() << "mode '" << mode << "'";
  const DType t = c.in_dtype(0);
  if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
    return c.unsupported() << "input 0 is " << dtype_name(t) << " (f32, i32 or i64)";
  Shape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t b = pads[d], e = pads[d + x.size()];
    if (b < 0 || e < 0) return c.unsupported() << "negative pads (cropping)";
    if (b > kMaxTensorElements || e > kMaxTensorElements) return c.fail() << "pads of dim " << d << " too large";
    if (mode != "constant" && x[d] == 0 && b + e > 0) return c.fail() << "cannot " << mode << "-pad an empty dim";
    if (mode == "reflect" && (b >= x[d] || e >= x[d])) {
      return c.fail() << "reflect pads of dim " << d << " (" << b << ", " << e << ") must be below its size " << x[d];
    }
    out[d] += b + e;
  }
  if (c.has_input(2)) {
    const Tensor* v = c.constant(2);
    if (!v) return c.unsupported() << "input 2 (constant_value) must be a constant";
    if (v->numel() != 1 || v->dtype() != t)
      return c.fail() << "input 2 (constant_value) must be a scalar of the data's dtype " << dtype_name(t);
    c.node.attrs["value"].f = t == DType::kF32   ? static_cast<double>(v->f32()[0])
                              : t == DType::kI64 ? static_cast<double>(v->i64()[0])
                                                 : static_cast<const int32_t*>(v->raw())[0];
  }
  c.node.attrs["pads"].ints = pads;
  c.node.attrs["pads"].type = AttrType::kInts;
  c.set_out(0, out, t);
  return Status();
}

Status shape_Tile(ShapeContext& c) {
  std::vector<int64_t> reps;
  FUSERT_RETURN_IF_ERROR(const_ints(c, 1, "repeats", &reps));
  const Shape& x = c.in(0);
  if (reps.size() != x.size()) return c.fail() << "repeats has " << reps.size() << " values for rank " << x.size();
  Shape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    if (reps[d] < 0) return c.fail() << "negative repeats " << reps[d];
    if (reps[d] > 0 && x[d] > kMaxTensorElements / reps[d]) return c.fail() << "repeats too large";
    out[d] = x[d] * reps[d];
  }
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_ArgMin(ShapeContext& c);
Status shape_ArgMax(ShapeContext& c) { return shape_ArgMin(c); }
Status shape_ArgMin(ShapeContext& c) {
  const Shape& x = c.in(0);
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = c.node.attr_i("axis");
  if (axis < -r || axis >= r) return c.fail() << "axis " << axis << " out of range for " << shape_str(x);
  if (axis < 0) axis += r;
  if (x[static_cast<size_t>(axis)] == 0) return c.fail() << "ArgMax over an empty dim";
  c.node.attrs["axis"].i = axis;
  Shape out;
  for (int64_t d = 0; d < r; ++d) {
    if (d != axis)
      out.push_back(x[static_cast<size_t>(d)]);
    else if (c.node.attr_i("keepdims"))
      out.push_back(1);
  }
  c.set_out(0, out, DType::kI64);
  return Status();
}

}  // namespace fusert
