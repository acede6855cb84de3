// Shape functions for the element-indexed ops and channel/space permutations (ONNX opset 13..18
// semantics): GatherElements, ScatterElements, GatherND, ScatterND, OneHot, TopK, Trilu, CumSum, DepthToSpace,
// SpaceToDepth. Axes are normalised in place (>= 0); the constant inputs (Trilu's k, CumSum's axis) are checked here.
#include <algorithm>

#include "graph/shape_inference.h"

namespace fusert {

namespace {

// Normalises the `axis` attribute against `rank` in place.
Status norm_axis_attr(ShapeContext& c, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  int64_t axis = c.node.attr_i("axis");
  if (axis < -r || axis >= r) return c.fail() << "axis " << axis << " out of range for rank " << r;
  c.node.attrs["axis"].i = axis < 0 ? axis + r : axis;
  return Status();
}

Status index_dtype(ShapeContext& c, size_t i) {
  if (c.in_dtype(i) != DType::kI64 && c.in_dtype(i) != DType::kI32)
    return c.fail() << "input " << i << " (indices) must be i64 or i32, got " << dtype_name(c.in_dtype(i));
  return Status();
}

Status movable_dtype(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  if (t == DType::kF16 || t == DType::kBF16) return c.unsupported() << "input 0 is " << dtype_name(t);
  return Status();
}

// Indices (input 1) against data (input 0): the same rank, and off the axis the same dims.
Status indices_match(ShapeContext& c, const char* what) {
  const Shape &x = c.in(0), &idx = c.in(1);
  if (idx.size() != x.size())
    return c.fail() << what << " " << shape_str(idx) << " and data " << shape_str(x) << " differ in rank";
  const size_t axis = static_cast<size_t>(c.node.attr_i("axis"));
  for (size_t d = 0; d < x.size(); ++d) {
    if (d != axis && idx[d] != x[d]) {
      return c.unsupported() << what << " " << shape_str(idx) << " differ from data " << shape_str(x) << " in dim " << d
                             << " off the axis (fusert needs them equal there)";
    }
  }
  return Status();
}

// The one value of a scalar integer constant input (i64 or i32).
Status const_scalar(ShapeContext& c, size_t i, const char* what, int64_t* out) {
  const Tensor* t = c.constant(i);
  if (!t) return c.unsupported() << "input " << i << " (" << what << ") must be a constant";
  if (t->numel() != 1 || (t->dtype() != DType::kI64 && t->dtype() != DType::kI32))
    return c.fail() << "input " << i << " (" << what << ") must be one i64 or i32 value";
  *out = t->dtype() == DType::kI64 ? t->i64()[0] : static_cast<const int32_t*>(t->raw())[0];
  return Status();
}

// ScatterElements / ScatterND: updates (input 2) of the data's dtype, the reduction named right
// (the reductions on f32 only); Y has the data's shape.
Status scatter_out(ShapeContext& c) {
  if (c.in_dtype(2) != c.in_dtype(0))
    return c.fail() << "updates are " << dtype_name(c.in_dtype(2)) << ", data " << dtype_name(c.in_dtype(0));
  const std::string& red = c.node.attr_s("reduction");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return c.fail() << "reduction '" << red << "' (none, add, mul, max, min)";
  if (red != "none" && c.in_dtype(0) != DType::kF32)
    return c.unsupported() << "reduction '" << red << "' of " << dtype_name(c.in_dtype(0)) << " (f32 only)";
  c.set_out(0, c.in(0), c.in_dtype(0));
  return Status();
}

}  // namespace

Status shape_GatherElements(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(movable_dtype(c));
  FUSERT_RETURN_IF_ERROR(index_dtype(c, 1));
  FUSERT_RETURN_IF_ERROR(norm_axis_attr(c, c.in(0).size()));
  FUSERT_RETURN_IF_ERROR(indices_match(c, "indices"));
  c.set_out(0, c.in(1), c.in_dtype(0));
  return Status();
}

Status shape_ScatterElements(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(movable_dtype(c));
  FUSERT_RETURN_IF_ERROR(index_dtype(c, 1));
  FUSERT_RETURN_IF_ERROR(norm_axis_attr(c, c.in(0).size()));
  FUSERT_RETURN_IF_ERROR(indices_match(c, "indices"));
  if (c.in(2) != c.in(1))
    return c.fail() << "updates " << shape_str(c.in(2)) << " and indices " << shape_str(c.in(1)) << " differ";
  return scatter_out(c);
}

Status shape_TopK(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
    return c.unsupported() << "input 0 is " << dtype_name(t) << " (f32, i32, i64)";
  const Shape& x = c.in(0);
  if (x.empty()) return c.fail() << "input must have rank >= 1";
  FUSERT_RETURN_IF_ERROR(norm_axis_attr(c, x.size()));
  int64_t k = c.node.attr_i("count");  // K known at run time only: the count the graph is shaped at
  if (c.constant(1) || k < 0) FUSERT_RETURN_IF_ERROR(const_scalar(c, 1, "K", &k));
  if (shape_numel(c.in(1)) != 1 || (c.in_dtype(1) != DType::kI64 && c.in_dtype(1) != DType::kI32))
    return c.fail() << "input 1 (K) must be one i64 value";
  const size_t axis = static_cast<size_t>(c.node.attr_i("axis"));
  if (k < 0 || k > x[axis])
    return c.fail() << "K = " << k << " is outside [0, " << x[axis] << "] (dim " << axis << " of " << shape_str(x)
                    << ")";
  if (k == 0) return c.unsupported() << "K = 0 (zero-size outputs)";
  Shape out = x;
  out[axis] = k;
  c.set_out(0, out, t);
  c.set_out(1, out, DType::kI64);
  return Status();
}

// GatherND / ScatterND indices (input 1): i64, rank >= 1, last dim m in [1, rank(X) - batch_dims].
static Status nd_indices(ShapeContext& c, int64_t batch_dims, int64_t* m) {
  const Shape &x = c.in(0), &idx = c.in(1);
  if (c.in_dtype(1) != DType::kI64) return c.fail() << "indices must be i64, got " << dtype_name(c.in_dtype(1));
  const int64_t r = static_cast<int64_t>(x.size()), q = static_cast<int64_t>(idx.size());
  if (r < 1 || q < 1) return c.fail() << "data and indices must have rank >= 1";
  if (batch_dims < 0 || batch_dims >= std::min(r, q))
    return c.fail() << "batch_dims " << batch_dims << " must be below the ranks of data and indices";
  for (int64_t d = 0; d < batch_dims; ++d) {
    if (idx[static_cast<size_t>(d)] != x[static_cast<size_t>(d)])
      return c.fail() << "indices " << shape_str(idx) << " and data " << shape_str(x) << " differ in batch dim " << d;
  }
  *m = idx.back();
  if (*m < 1 || *m > r - batch_dims)
    return c.fail() << "the last dim of indices " << shape_str(idx) << " must be in [1, " << r - batch_dims << "]";
  return Status();
}

Status shape_GatherND(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(movable_dtype(c));
  const int64_t b = c.node.attr_i("batch_dims");
  int64_t m = 0;
  FUSERT_RETURN_IF_ERROR(nd_indices(c, b, &m));
  Shape out(c.in(1).begin(), c.in(1).end() - 1);
  out.insert(out.end(), c.in(0).begin() + b + m, c.in(0).end());
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

Status shape_ScatterND(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(movable_dtype(c));
  int64_t m = 0;
  FUSERT_RETURN_IF_ERROR(nd_indices(c, 0, &m));
  Shape want(c.in(1).begin(), c.in(1).end() - 1);
  want.insert(want.end(), c.in(0).begin() + m, c.in(0).end());
  if (c.in(2) != want) return c.fail() << "updates " << shape_str(c.in(2)) << " must be " << shape_str(want);
  return scatter_out(c);
}

Status shape_OneHot(ShapeContext& c) {
  const DType it = c.in_dtype(0), vt = c.in_dtype(2);
  if (it != DType::kF32 && it != DType::kI32 && it != DType::kI64)
    return c.unsupported() << "indices are " << dtype_name(it) << " (f32, i32, i64)";
  if (vt != DType::kF32 && vt != DType::kI32 && vt != DType::kI64)
    return c.unsupported() << "values are " << dtype_name(vt) << " (f32, i32, i64)";
  if (shape_numel(c.in(2)) != 2 || c.in(2).size() != 1)
    return c.fail() << "values must be [off, on], got " << shape_str(c.in(2));
  const Tensor* t = c.constant(1);
  if (!t) return c.unsupported() << "input 1 (depth) must be a constant";
  if (t->numel() != 1) return c.fail() << "depth must be one value, got " << shape_str(t->shape());
  const double depth = t->dtype() == DType::kF32   ? t->f32()[0]
                       : t->dtype() == DType::kI64 ? static_cast<double>(t->i64()[0])
                       : t->dtype() == DType::kI32 ? static_cast<const int32_t*>(t->raw())[0]
                                                   : -1.0;
  if (!(depth >= 1 && depth <= 1e7)) return c.fail() << "depth " << depth << " outside [1, 1e7] (or not a number)";
  const Shape& x = c.in(0);
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = c.node.attr_i("axis");
  if (axis < -r - 1 || axis > r) return c.fail() << "axis " << axis << " out of range for rank " << r + 1;
  if (axis < 0) axis += r + 1;
  c.node.attrs["axis"].i = axis;
  Shape out = x;
  out.insert(out.begin() + axis, static_cast<int64_t>(depth));
  c.set_out(0, out, vt);
  return Status();
}

Status shape_Trilu(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(movable_dtype(c));
  if (c.in(0).size() < 2) return c.fail() << "input must have rank >= 2, got " << shape_str(c.in(0));
  int64_t k = 0;
  if (c.has_input(1)) FUSERT_RETURN_IF_ERROR(const_scalar(c, 1, "k", &k));
  c.set_out(0, c.in(0), c.in_dtype(0));
  return Status();
}

Status shape_CumSum(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
    return c.unsupported() << "input 0 is " << dtype_name(t) << " (f32, i32, i64)";
  int64_t axis = 0;
  FUSERT_RETURN_IF_ERROR(const_scalar(c, 1, "axis", &axis));
  const int64_t r = static_cast<int64_t>(c.in(0).size());
  if (r == 0 || axis < -r || axis >= r) return c.fail() << "axis " << axis << " out of range for rank " << r;
  c.set_out(0, c.in(0), t);
  return Status();
}

// DepthToSpace / SpaceToDepth: 4-D NCHW f32, blocksize >= 1 dividing C (by b^2) or H and W.
static Status space_depth_shape(ShapeContext& c, bool to_space) {
  const Shape& x = c.in(0);
  if (x.size() != 4) return c.unsupported() << "input must be 4-D NCHW, got " << shape_str(x);
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  const int64_t b = c.node.attr_i("blocksize");
  if (b < 1 || b > 4096) return c.fail() << "blocksize " << b << " outside [1, 4096]";
  if (to_space) {
    const std::string& mode = c.node.attr_s("mode");
    if (mode != "DCR" && mode != "CRD") return c.fail() << "mode '" << mode << "' (DCR or CRD)";
    if (x[1] % (b * b) != 0) return c.fail() << "channels " << x[1] << " are not a multiple of blocksize^2 " << b * b;
    c.set_out(0, {x[0], x[1] / (b * b), x[2] * b, x[3] * b});
  } else {
    if (x[2] % b != 0 || x[3] % b != 0)
      return c.fail() << "spatial dims of " << shape_str(x) << " are not multiples of blocksize " << b;
    c.set_out(0, {x[0], x[1] * b * b, x[2] / b, x[3] / b});
  }
  return Status();
}

Status shape_DepthToSpace(ShapeContext& c) { return space_depth_shape(c, true); }
Status shape_SpaceToDepth(ShapeContext& c) { return space_depth_shape(c, false); }

}  // namespace fusert
