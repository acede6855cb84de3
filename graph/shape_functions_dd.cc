// Shape functions of the data-dependent ops (graph/data_dependent.h): NonZero, NonMaxSuppression,
// Unique, Compress, Loop with scan outputs (and TopK with a K known at run time only, in shape_functions_index.cc). The
// size that depends on the data is the node's `count` attribute, the value of its symbolic dim
// '<node>.n' at which the graph is shaped; the session replaces it by the count the op returns.
#include "graph/shape_inference.h"

namespace fusert {

namespace {

constexpr int64_t kNoAxis = 2147483647;  // Unique / Compress without `axis`: X flattened

Status dd_count(ShapeContext& c, int64_t* n) {
  *n = c.node.attr_i("count");
  if (*n < 0) {
    return c.unsupported() << op_name(c.node.op) << "'s output size depends on its input data; fusert runs it from "
                           << "an ONNX model, whose import shapes what follows at a symbolic count";
  }
  return Status();
}

Status value_dtype(ShapeContext& c, size_t i, bool allow_bool) {
  const DType t = c.in_dtype(i);
  if (t == DType::kF32 || t == DType::kI32 || t == DType::kI64 || (allow_bool && t == DType::kBool)) return Status();
  return c.unsupported() << "input " << i << " is " << dtype_name(t) << " (f32, i32, i64"
                         << (allow_bool ? ", bool" : "") << ")";
}

// `axis` against `rank`, normalised in place; kNoAxis stays.
Status optional_axis(ShapeContext& c, size_t rank, int64_t* axis) {
  *axis = c.node.attr_i("axis");
  if (*axis == kNoAxis) return Status();
  const int64_t r = static_cast<int64_t>(rank);
  if (*axis < -r || *axis >= r) return c.fail() << "axis " << *axis << " out of range for rank " << r;
  if (*axis < 0) *axis += r;
  c.node.attrs["axis"].i = *axis;
  return Status();
}

// An optional scalar input of NonMaxSuppression: absent, or one element of `t`.
Status scalar_input(ShapeContext& c, size_t i, DType t, const char* what) {
  if (!c.has_input(i)) return Status();
  if (shape_numel(c.in(i)) != 1) return c.fail() << what << " (input " << i << ") must hold one value";
  if (c.in_dtype(i) != t) return c.fail() << what << " (input " << i << ") must be " << dtype_name(t);
  return Status();
}

}  // namespace

Status shape_NonZero(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(value_dtype(c, 0, true));
  if (c.in(0).empty()) return c.unsupported() << "a scalar input (rank 0)";
  int64_t n = 0;
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  c.set_out(0, {static_cast<int64_t>(c.in(0).size()), n}, DType::kI64);
  return Status();
}

Status shape_NonMaxSuppression(ShapeContext& c) {
  const Shape &b = c.in(0), &s = c.in(1);
  if (c.in_dtype(0) != DType::kF32 || c.in_dtype(1) != DType::kF32) return c.fail() << "boxes and scores must be f32";
  if (b.size() != 3 || b[2] != 4) return c.fail() << "boxes must be [batch, boxes, 4], got " << shape_str(b);
  if (s.size() != 3 || s[0] != b[0] || s[2] != b[1]) {
    return c.fail() << "scores must be [batch, classes, boxes] = [" << b[0] << ", C, " << b[1] << "], got "
                    << shape_str(s);
  }
  const int64_t cpb = c.node.attr_i("center_point_box");
  if (cpb != 0 && cpb != 1) return c.fail() << "center_point_box must be 0 or 1, got " << cpb;
  FUSERT_RETURN_IF_ERROR(scalar_input(c, 2, DType::kI64, "max_output_boxes_per_class"));
  FUSERT_RETURN_IF_ERROR(scalar_input(c, 3, DType::kF32, "iou_threshold"));
  FUSERT_RETURN_IF_ERROR(scalar_input(c, 4, DType::kF32, "score_threshold"));
  int64_t n = 0;
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  c.set_out(0, {n, 3}, DType::kI64);
  return Status();
}

Status shape_Unique(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(value_dtype(c, 0, false));
  const Shape& x = c.in(0);
  int64_t axis = 0, n = 0;
  FUSERT_RETURN_IF_ERROR(optional_axis(c, x.size(), &axis));
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  Shape y = axis == kNoAxis ? Shape{n} : x;
  if (axis != kNoAxis) y[static_cast<size_t>(axis)] = n;
  c.set_out(0, y, c.in_dtype(0));
  for (size_t k = 1; k < c.node.outputs.size(); ++k) {
    const int64_t len = axis == kNoAxis ? shape_numel(x) : x[static_cast<size_t>(axis)];
    c.set_out(k, {k == 2 ? len : n}, DType::kI64);
  }
  return Status();
}

Status shape_Compress(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(value_dtype(c, 0, true));
  if (c.in_dtype(1) != DType::kBool || c.in(1).size() != 1)
    return c.fail() << "condition (input 1) must be a 1-D bool tensor, got " << dtype_name(c.in_dtype(1)) << " "
                    << shape_str(c.in(1));
  const Shape& x = c.in(0);
  int64_t axis = 0, n = 0;
  FUSERT_RETURN_IF_ERROR(optional_axis(c, x.size(), &axis));
  const int64_t len = axis == kNoAxis ? shape_numel(x) : x[static_cast<size_t>(axis)];
  if (c.in(1)[0] > len)
    return c.fail() << "condition has " << c.in(1)[0] << " elements, more than the " << len << " it selects from";
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  Shape y = axis == kNoAxis ? Shape{n} : x;
  if (axis != kNoAxis) y[static_cast<size_t>(axis)] = n;
  c.set_out(0, y, c.in_dtype(0));
  return Status();
}

// A Slice whose starts, ends or steps are computed at run time, along one constant axis (the
// import sets `axis`); its length there is the count.
Status shape_DynamicSlice(ShapeContext& c) {
  const Shape& x = c.in(0);
  int64_t axis = c.node.attr_i("axis");
  if (axis < -static_cast<int64_t>(x.size()) || axis >= static_cast<int64_t>(x.size()))
    return c.fail() << "axis " << axis << " out of range for " << shape_str(x);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  c.node.attrs["axis"].i = axis;
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}}) {
    if (!c.has_input(i)) continue;
    if (shape_numel(c.in(i)) != 1 || (c.in_dtype(i) != DType::kI64 && c.in_dtype(i) != DType::kI32))
      return c.fail() << "starts, ends and steps (inputs 1, 2, 4) must be one i64 or i32 value each (one axis)";
  }
  int64_t n = 0;
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  Shape y = x;
  y[static_cast<size_t>(axis)] = n;
  c.set_out(0, y, c.in_dtype(0));
  return Status();
}

// A Reshape or Expand whose shape input is computed at run time: every output dim is a count
// (the import sets `counts`, graph/data_dependent.h); the values come from the shape the op reads.
Status shape_computed(ShapeContext& c) {
  const Shape& s = c.in(1);
  if (s.size() != 1 || c.in_dtype(1) != DType::kI64)
    return c.fail() << "input 1 (shape) must be a 1-D i64 tensor, is " << dtype_name(c.in_dtype(1)) << " "
                    << shape_str(s);
  const size_t r = c.node.op == OpKind::kDynamicExpand ? std::max(c.in(0).size(), static_cast<size_t>(s[0]))
                                                       : static_cast<size_t>(s[0]);
  const std::vector<int64_t>& counts = c.node.attr_ints("counts");
  if (counts.size() != r) {
    return c.unsupported() << op_name(c.node.op) << "'s output shape is computed at run time; fusert runs it from an "
                           << "ONNX model, whose import shapes what follows at one symbolic count per dim";
  }
  c.set_out(0, Shape(counts.begin(), counts.end()), c.in_dtype(0));
  return Status();
}

Status shape_DynamicReshape(ShapeContext& c) { return shape_computed(c); }
Status shape_DynamicExpand(ShapeContext& c) { return shape_computed(c); }

Status shape_Range(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  for (size_t i = 0; i < 3; ++i) {
    if (shape_numel(c.in(i)) != 1 || c.in_dtype(i) != t)
      return c.fail() << "start, limit and delta must be one value each of one dtype";
  }
  if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
    return c.unsupported() << "Range of " << dtype_name(t) << " (f32, i32, i64)";
  int64_t n = 0;
  FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
  c.set_out(0, {n}, t);
  return Status();
}

}  // namespace fusert

namespace fusert {

namespace {

// The output shapes the import found for an If or Loop run between stages (out_ranks, out_dims,
// out_dtypes), into `out`.
Status imported_outputs(ShapeContext& c, std::vector<std::pair<Shape, DType>>* out) {
  const std::vector<int64_t>& ranks = c.node.attr_ints("out_ranks");
  const std::vector<int64_t>& dims = c.node.attr_ints("out_dims");
  const std::vector<int64_t>& dtypes = c.node.attr_ints("out_dtypes");
  if (ranks.size() != c.node.outputs.size() || dtypes.size() != ranks.size())
    return c.unsupported() << "an " << op_name(c.node.op)
                           << " fusert runs between stages needs its outputs' shapes from the ONNX import";
  size_t at = 0;
  for (size_t k = 0; k < ranks.size(); ++k) {
    if (ranks[k] < 0 || at + static_cast<size_t>(ranks[k]) > dims.size()) return c.fail() << "out_dims too short";
    Shape s(dims.begin() + static_cast<std::ptrdiff_t>(at), dims.begin() + static_cast<std::ptrdiff_t>(at + ranks[k]));
    at += static_cast<size_t>(ranks[k]);
    out->push_back({s, static_cast<DType>(dtypes[k])});
  }
  return Status();
}

}  // namespace

// If run between stages: its outputs as the import found them.
Status shape_If(ShapeContext& c) {
  if (c.in_dtype(0) != DType::kBool || shape_numel(c.in(0)) != 1) return c.fail() << "the condition must be one bool";
  std::vector<std::pair<Shape, DType>> outs;
  FUSERT_RETURN_IF_ERROR(imported_outputs(c, &outs));
  for (size_t k = 0; k < outs.size(); ++k) c.set_out(k, outs[k].first, outs[k].second);
  return Status();
}

// Loop run between stages: the carried values as the import found them; the scan outputs with
// a first dim, the iteration count (the node's `count`).
Status shape_Loop(ShapeContext& c) {
  if (c.has_input(0) && (c.in_dtype(0) != DType::kI64 || shape_numel(c.in(0)) != 1))
    return c.fail() << "the trip count M (input 0) must be one int64";
  if (c.has_input(1) && (c.in_dtype(1) != DType::kBool || shape_numel(c.in(1)) != 1))
    return c.fail() << "the condition (input 1) must be one bool";
  const int64_t carried = c.node.attr_i("carried");
  if (carried < 0 || (carried > 0 && static_cast<int64_t>(c.node.inputs.size()) < 2 + carried))
    return c.fail() << "carried = " << carried << " with " << c.node.inputs.size() << " inputs";
  std::vector<std::pair<Shape, DType>> outs;
  FUSERT_RETURN_IF_ERROR(imported_outputs(c, &outs));
  for (size_t k = 0; k < outs.size(); ++k) {
    if (static_cast<int64_t>(k) >= carried) {
      int64_t n = 0;
      FUSERT_RETURN_IF_ERROR(dd_count(c, &n));
      outs[k].first.insert(outs[k].first.begin(), n);
    }
    c.set_out(k, outs[k].first, outs[k].second);
  }
  return Status();
}

}  // namespace fusert
