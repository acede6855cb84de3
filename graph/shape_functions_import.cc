// Shape functions for the ops ONNX exports bring (ONNX opset 17..19 semantics): comparisons and
// logic (bool outputs), Max/Min/Sum/Mean, PRelu, Resize and ConvTranspose. ConvTranspose canonicalises
// its attributes (explicit pads and kernel_shape, output_shape resolved into pads; auto_pad and output_shape are
// kept so that inference at a new input size derives the pads anew).
#include <algorithm>
#include <cmath>

#include "graph/shape_inference.h"

namespace fusert {

namespace {

Status broadcast_all(ShapeContext& c, Shape* out) {
  *out = c.in(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) return c.fail() << "input " << i << " is empty";
    Shape t;
    if (!broadcast_shapes(*out, c.in(i), &t)) {
      return c.fail() << "cannot broadcast " << shape_str(*out) << " and " << shape_str(c.in(i)) << " (input " << i
                      << ")";
    }
    *out = t;
  }
  return Status();
}

Status same_dtypes(ShapeContext& c, bool allow_bool, bool bool_only) {
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const DType t = c.in_dtype(i);
    if (bool_only && t != DType::kBool) return c.fail() << "input " << i << " must be bool, got " << dtype_name(t);
    if (t != c.in_dtype(0)) {
      return c.fail() << "inputs 0 and " << i << " differ in dtype (" << dtype_name(c.in_dtype(0)) << ", "
                      << dtype_name(t) << ")";
    }
    if (t == DType::kF16 || t == DType::kBF16 || (t == DType::kBool && !allow_bool)) {
      return c.unsupported() << "input " << i << " is " << dtype_name(t) << " (f32, i32 or i64 only)";
    }
  }
  return Status();
}

Status compare_shape(ShapeContext& c, bool logic) {
  FUSERT_RETURN_IF_ERROR(same_dtypes(c, true, logic));
  Shape out;
  FUSERT_RETURN_IF_ERROR(broadcast_all(c, &out));
  c.set_out(0, out, DType::kBool);
  return Status();
}

}  // namespace

Status shape_Equal(ShapeContext& c) { return compare_shape(c, false); }
Status shape_Less(ShapeContext& c) { return compare_shape(c, false); }
Status shape_Greater(ShapeContext& c) { return compare_shape(c, false); }
Status shape_LessOrEqual(ShapeContext& c) { return compare_shape(c, false); }
Status shape_GreaterOrEqual(ShapeContext& c) { return compare_shape(c, false); }
Status shape_And(ShapeContext& c) { return compare_shape(c, true); }
Status shape_Or(ShapeContext& c) { return compare_shape(c, true); }
Status shape_Xor(ShapeContext& c) { return compare_shape(c, true); }

Status shape_Not(ShapeContext& c) {
  if (c.in_dtype(0) != DType::kBool) return c.fail() << "input must be bool, got " << dtype_name(c.in_dtype(0));
  c.set_out(0, c.in(0), DType::kBool);
  return Status();
}

static Status extremum_shape(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(same_dtypes(c, false, false));
  Shape out;
  FUSERT_RETURN_IF_ERROR(broadcast_all(c, &out));
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}
Status shape_Max(ShapeContext& c) { return extremum_shape(c); }
Status shape_Min(ShapeContext& c) { return extremum_shape(c); }

// Sum and Mean: f32 inputs only (integer arithmetic at run time is not supported).
static Status sum_shape(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(same_dtypes(c, false, false));
  if (c.in_dtype(0) != DType::kF32)
    return c.unsupported() << "inputs are " << dtype_name(c.in_dtype(0)) << " (f32 only)";
  return extremum_shape(c);
}
Status shape_Sum(ShapeContext& c) { return sum_shape(c); }
Status shape_Mean(ShapeContext& c) { return sum_shape(c); }

Status shape_PRelu(ShapeContext& c) {
  Shape out;
  if (!broadcast_shapes(c.in(0), c.in(1), &out) || out != c.in(0)) {
    return c.fail() << "slope " << shape_str(c.in(1)) << " does not broadcast to X " << shape_str(c.in(0))
                    << " (unidirectional)";
  }
  c.set_out(0, c.in(0));
  return Status();
}

// Resize: sizes (input 3) or scales (input 2) must be constants; roi (input 1) is only read by
// tf_crop_and_resize, which is unsupported. The lowering reads the same constants (the scale
// of a dim is the given one, or sizes / input when only sizes are given).
Status shape_Resize(ShapeContext& c) {
  const Shape& x = c.in(0);
  const Node& n = c.node;
  const std::string mode = n.attr_s("mode"), ct = n.attr_s("coordinate_transformation_mode");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return c.fail() << "mode '" << mode << "' (nearest, linear, cubic)";
  if (ct != "half_pixel" && ct != "pytorch_half_pixel" && ct != "align_corners" && ct != "asymmetric" &&
      ct != "tf_half_pixel_for_nn" && ct != "half_pixel_symmetric") {
    return c.unsupported() << "coordinate_transformation_mode '" << ct << "'";
  }
  const std::string nm = n.attr_s("nearest_mode");
  if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
    return c.fail() << "nearest_mode '" << nm << "'";
  if (n.attr_i("antialias") != 0) return c.unsupported() << "antialias=1";
  if (!n.attr_ints("axes").empty()) return c.unsupported() << "the axes attribute (opset 18)";
  if (n.attr_s("keep_aspect_ratio_policy") != "stretch")
    return c.unsupported() << "keep_aspect_ratio_policy '" << n.attr_s("keep_aspect_ratio_policy") << "'";
  if (c.in_dtype(0) != DType::kF32)
    return c.unsupported() << "input 0 is " << dtype_name(c.in_dtype(0)) << " (f32 only)";
  const size_t r = x.size();
  Shape out(r);
  const Tensor* sizes = c.has_input(3) ? c.constant(3) : nullptr;
  const Tensor* sc = c.has_input(2) ? c.constant(2) : nullptr;
  if (c.has_input(3) && !sizes)
    return c.unsupported() << "input 3 (sizes) must be a constant (fusert's shapes are static)";
  if (c.has_input(2) && !sc)
    return c.unsupported() << "input 2 (scales) must be a constant (fusert's shapes are static)";
  if (sc && sc->numel() == 0) sc = nullptr;
  if (sizes && sizes->numel() == 0) sizes = nullptr;
  if (!sc == !sizes) return c.fail() << "exactly one of scales (input 2) and sizes (input 3) must be given";
  if (sizes) {
    if (sizes->dtype() != DType::kI64 || sizes->numel() != static_cast<int64_t>(r))
      return c.fail() << "sizes must be " << r << " i64 values";
    for (size_t d = 0; d < r; ++d) {
      const int64_t v = sizes->i64()[d];
      if (v < 1 || v > kMaxTensorElements) return c.fail() << "sizes[" << d << "] = " << v << " out of range";
      out[d] = v;
    }
  } else {
    if (sc->dtype() != DType::kF32 || sc->numel() != static_cast<int64_t>(r))
      return c.fail() << "scales must be " << r << " f32 values";
    for (size_t d = 0; d < r; ++d) {
      const double s = sc->f32()[d];
      if (!(s > 0.0) || !std::isfinite(s) || s * static_cast<double>(x[d]) > static_cast<double>(kMaxTensorElements))
        return c.fail() << "scales[" << d << "] = " << s << " out of range";
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x[d]) * s));
      if (out[d] < 1) return c.fail() << "scales[" << d << "] = " << s << " gives an empty dim";
    }
  }
  c.set_out(0, out);
  return Status();
}

// ConvTranspose (ONNX opset 11): output size per spatial dim
//   out = stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end,
// or, with output_shape (or auto_pad SAME_*: output = input * stride), the pads derived from the
// total as the operator spec says: SAME_UPPER puts the larger half at the end, else at the start.
namespace {

Status conv_transpose_shape(ShapeContext& c, size_t nd) {
  const Shape& x = c.in(0);
  const Shape& w = c.in(1);
  if (x.size() != nd + 2) {
    if (nd == 2) return c.unsupported() << "only 2-D NCHW input is supported, got " << shape_str(x);
    return c.fail() << "input must be [N, C, D, H, W], got " << shape_str(x);
  }
  if (w.size() != nd + 2)
    return c.fail() << "weight must be [C, M/group, " << (nd == 3 ? "KD, " : "") << "KH, KW], got " << shape_str(w);
  Node& n = c.node;
  const int64_t group = n.attr_i("group");
  if (group < 1 || x[1] % group != 0 || w[0] != x[1])
    return c.fail() << "weight " << shape_str(w) << " does not match input channels " << x[1] << " and group " << group;
  const int64_t m = w[1] * group;
  if (c.has_input(2) && c.in(2) != Shape{m})
    return c.fail() << "bias expected [" << m << "], got " << shape_str(c.in(2));
  auto sized = [&](const char* name, int64_t fill, size_t count) -> Status {
    std::vector<int64_t>& v = n.attrs[name].ints;
    if (v.empty()) v.assign(count, fill);
    if (v.size() != count) return c.fail() << "attribute " << name << " needs " << count << " values, got " << v.size();
    for (int64_t e : v)
      if (e < 0 || e > (int64_t{1} << 24)) return c.fail() << "attribute " << name << " value " << e << " out of range";
    return Status();
  };
  std::vector<int64_t>& ks = n.attrs["kernel_shape"].ints;
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  if (ks.empty()) ks = wk;
  if (ks != wk) return c.fail() << "kernel_shape " << shape_str(ks) << " disagrees with weight " << shape_str(w);
  FUSERT_RETURN_IF_ERROR(sized("strides", 1, nd));
  FUSERT_RETURN_IF_ERROR(sized("dilations", 1, nd));
  FUSERT_RETURN_IF_ERROR(sized("pads", 0, 2 * nd));
  FUSERT_RETURN_IF_ERROR(sized("output_padding", 0, nd));
  const auto st = n.attr_ints("strides"), dl = n.attr_ints("dilations"), op = n.attr_ints("output_padding");
  for (int64_t e : w)
    if (e < 1) return c.fail() << "weight " << shape_str(w) << " has an empty dim";
  for (size_t d = 0; d < nd; ++d) {
    if (st[d] < 1 || dl[d] < 1) return c.fail() << "strides and dilations must be >= 1";
    // As ONNX Runtime and PyTorch: more would add output rows no input ever reaches.
    if (op[d] >= std::max(st[d], dl[d]))
      return c.fail() << "output_padding " << shape_str(op) << " must be smaller than the stride or the dilation ("
                      << shape_str(st) << ", " << shape_str(dl) << ")";
  }
  std::vector<int64_t> pads = n.attr_ints("pads"), oshape = n.attr_ints("output_shape");
  const std::string ap = n.attr_s("auto_pad");
  if (ap != "NOTSET" && ap != "VALID" && ap != "SAME_UPPER" && ap != "SAME_LOWER")
    return c.fail() << "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" << ap << "'";
  if (oshape.size() == nd + 2) oshape.erase(oshape.begin(), oshape.begin() + 2);
  if (!oshape.empty() && oshape.size() != nd) return c.fail() << "output_shape needs " << nd << " values";
  if (oshape.empty() && (ap == "SAME_UPPER" || ap == "SAME_LOWER")) {
    for (size_t d = 0; d < nd; ++d) oshape.push_back(x[2 + d] * st[d]);
  }
  Shape hw(nd);
  for (size_t d = 0; d < nd; ++d) {
    const int64_t full = st[d] * (x[2 + d] - 1) + op[d] + (ks[d] - 1) * dl[d] + 1;
    if (!oshape.empty()) {
      // A larger output_shape than the full scatter pads with zeros (+ bias) at the end, as ONNX's
      // reference does (test_convtranspose_output_shape; ONNX Runtime refuses it).
      if (oshape[d] < 1 || oshape[d] > kMaxTensorElements)
        return c.fail() << "output_shape " << oshape[d] << " out of range";
      const int64_t total = std::max<int64_t>(0, full - oshape[d]);
      const int64_t small = total / 2, big = total - small;
      pads[d] = ap == "SAME_UPPER" ? small : big;
      pads[d + nd] = ap == "SAME_UPPER" ? big : small;
      hw[d] = oshape[d];
    } else {
      if (ap == "VALID") pads[d] = pads[d + nd] = 0;
      hw[d] = full - pads[d] - pads[d + nd];
      if (hw[d] < 1) return c.fail() << "pads larger than the output (" << hw[d] << ")";
    }
  }
  n.attrs["pads"].ints = pads;
  Shape y = {x[0], m};
  y.insert(y.end(), hw.begin(), hw.end());
  c.set_out(0, y);
  return Status();
}

}  // namespace

Status shape_ConvTranspose(ShapeContext& c) { return conv_transpose_shape(c, 2); }
Status shape_ConvTranspose3D(ShapeContext& c) { return conv_transpose_shape(c, 3); }

}  // namespace fusert
