// Shape functions for spatial ops: Conv, MaxPool, AveragePool in NCHW (2-D) and their 3-D forms
// Conv3D, MaxPool3D, AveragePool3D in NCDHW. They canonicalise attributes: defaults sized to the
// spatial dims, auto_pad resolved into explicit pads (auto_pad itself is kept: shape inference at
// a new input size, dynamic dims, derives them anew).
#include "graph/shape_inference.h"

namespace fusert {

namespace {

struct Spatial {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: the begins, then the ends (ONNX order)
};

// ONNX output size; for auto_pad SAME_* the pads are derived so that out = ceil(in / stride).
Status resolve_spatial(ShapeContext& c, const Shape& x, Spatial* s, bool ceil_mode, Shape* out_hw) {
  Node& n = c.node;
  auto sized = [&](const char* name, int64_t fill, size_t count) -> Status {
    std::vector<int64_t>& v = n.attrs[name].ints;
    if (v.empty()) v.assign(count, fill);
    if (v.size() != count) return c.fail() << "attribute " << name << " needs " << count << " values, got " << v.size();
    return Status();
  };
  const size_t nd = x.size() - 2;  // spatial dims
  FUSERT_RETURN_IF_ERROR(sized("strides", 1, nd));
  if (n.attrs.count("dilations")) FUSERT_RETURN_IF_ERROR(sized("dilations", 1, nd));
  FUSERT_RETURN_IF_ERROR(sized("pads", 0, 2 * nd));
  s->strides = n.attrs["strides"].ints;
  s->dilations = n.attrs.count("dilations") ? n.attrs["dilations"].ints : std::vector<int64_t>(nd, 1);
  s->pads = n.attrs["pads"].ints;
  for (int64_t v : s->strides)
    if (v < 1) return c.fail() << "strides must be >= 1";
  for (int64_t v : s->dilations)
    if (v < 1) return c.fail() << "dilations must be >= 1";
  for (int64_t v : s->pads)
    if (v < 0) return c.fail() << "pads must be >= 0";
  // Bounded before any arithmetic: (k - 1) * dilation + pads stays far from int64 overflow.
  constexpr int64_t kMaxWindow = int64_t{1} << 24;
  for (const auto* v : {&s->kernel, &s->strides, &s->dilations, &s->pads}) {
    for (int64_t e : *v)
      if (e > kMaxWindow)
        return c.fail() << "kernel_shape, strides, dilations and pads must be <= " << kMaxWindow << ", got " << e;
  }
  // Far beyond any real model, and what keeps a crafted one from running for minutes: the
  // library kernels materialise the padded input and walk the dilated window.
  constexpr int64_t kMaxPadDilation = int64_t{1} << 16;
  for (const auto* v : {&s->dilations, &s->pads}) {
    for (int64_t e : *v)
      if (e > kMaxPadDilation)
        return c.unsupported() << "dilations and pads above " << kMaxPadDilation << " (got " << e << ")";
  }
  const std::string auto_pad = n.attr_s("auto_pad");
  out_hw->assign(nd, 0);
  for (size_t d = 0; d < nd; ++d) {
    int64_t in = x[2 + d], k = s->kernel[d], st = s->strides[d], dil = s->dilations[d];
    int64_t eff = (k - 1) * dil + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (in + st - 1) / st;
      int64_t total = std::max<int64_t>(0, (out - 1) * st + eff - in);
      int64_t small = total / 2, big = total - small;
      s->pads[d] = auto_pad == "SAME_UPPER" ? small : big;
      s->pads[d + nd] = auto_pad == "SAME_UPPER" ? big : small;
    } else if (auto_pad == "VALID") {
      s->pads[d] = s->pads[d + nd] = 0;
    } else if (auto_pad != "NOTSET") {
      return c.fail() << "auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" << auto_pad << "'";
    }
    int64_t span = in + s->pads[d] + s->pads[d + nd] - eff;
    if (span < 0)
      return c.fail() << "kernel " << eff << " larger than padded input " << in + s->pads[d] + s->pads[d + nd];
    int64_t out = ceil_mode ? (span + st - 1) / st + 1 : span / st + 1;
    // ceil_mode: a window that would start inside the end padding is dropped (ONNX, PyTorch).
    if (ceil_mode && (out - 1) * st >= in + s->pads[d]) --out;
    (*out_hw)[d] = out;
  }
  n.attrs["pads"].ints = s->pads;
  return Status();
}

// `x` is [N, C] and `nd` spatial dims (2: NCHW, 3: NCDHW).
Status check_rank(ShapeContext& c, const Shape& x, size_t nd) {
  if (x.size() == nd + 2) return Status();
  if (nd == 2) return c.unsupported() << "only 2-D NCHW input is supported, got " << shape_str(x);
  return c.fail() << "input must be [N, C, D, H, W], got " << shape_str(x);
}

Status conv_shape(ShapeContext& c, size_t nd) {
  const Shape& x = c.in(0);
  const Shape& w = c.in(1);
  FUSERT_RETURN_IF_ERROR(check_rank(c, x, nd));
  if (w.size() != nd + 2)
    return c.fail() << "weight must be [M, C/group, " << (nd == 3 ? "KD, " : "") << "KH, KW], got " << shape_str(w);
  int64_t group = c.node.attr_i("group");
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0) {
    return c.fail() << "group " << group << " must divide input channels " << x[1] << " and output channels " << w[0];
  }
  if (w[1] != x[1] / group) {
    return c.fail() << "weight '" << c.graph.value(c.node.inputs[1]).name << "' expected [" << w[0] << ", "
                    << x[1] / group << (nd == 3 ? ", KD" : "") << ", KH, KW] for input " << shape_str(x)
                    << " and group " << group << ", got " << shape_str(w);
  }
  const std::vector<int64_t> wk(w.begin() + 2, w.end());
  std::vector<int64_t>& ks = c.node.attrs["kernel_shape"].ints;
  if (ks.empty()) ks = wk;
  if (ks != wk) return c.fail() << "kernel_shape " << shape_str(ks) << " disagrees with weight " << shape_str(w);
  if (c.has_input(2) && c.in(2) != Shape{w[0]}) {
    return c.fail() << "bias '" << c.graph.value(c.node.inputs[2]).name << "' expected [" << w[0] << "], got "
                    << shape_str(c.in(2));
  }
  c.node.attrs["dilations"].type = AttrType::kInts;
  Spatial s;
  s.kernel = ks;
  Shape sp;
  FUSERT_RETURN_IF_ERROR(resolve_spatial(c, x, &s, false, &sp));
  Shape y = {x[0], w[0]};
  y.insert(y.end(), sp.begin(), sp.end());
  c.set_out(0, y);
  return Status();
}

Status pool_shape(ShapeContext& c, size_t nd) {
  const Shape& x = c.in(0);
  FUSERT_RETURN_IF_ERROR(check_rank(c, x, nd));
  Spatial s;
  s.kernel = c.node.attr_ints("kernel_shape");
  if (s.kernel.size() != nd) return c.fail() << "kernel_shape needs " << nd << " values";
  for (int64_t k : s.kernel)
    if (k < 1) return c.fail() << "kernel_shape must be >= 1";
  Shape sp;
  FUSERT_RETURN_IF_ERROR(resolve_spatial(c, x, &s, c.node.attr_i("ceil_mode") != 0, &sp));
  for (size_t d = 0; d < nd; ++d) {  // as ONNX Runtime: a window of padding alone has no value
    if (s.pads[d] >= s.kernel[d] || s.pads[d + nd] >= s.kernel[d]) {
      return c.fail() << "pads " << shape_str(s.pads) << " must be smaller than kernel_shape " << shape_str(s.kernel);
    }
  }
  Shape y = {x[0], x[1]};
  y.insert(y.end(), sp.begin(), sp.end());
  c.set_out(0, y);
  return Status();
}

Status storage_order(ShapeContext& c) {
  const int64_t order = c.node.attr_i("storage_order");
  if (order != 0 && order != 1) return c.fail() << "storage_order " << order << " (0 or 1)";
  return Status();
}

}  // namespace

Status shape_Conv(ShapeContext& c) { return conv_shape(c, 2); }
Status shape_Conv3D(ShapeContext& c) {
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  return conv_shape(c, 3);
}

Status shape_MaxPool(ShapeContext& c) {  // storage_order orders the indices only (MaxPoolWithIndices)
  FUSERT_RETURN_IF_ERROR(storage_order(c));
  FUSERT_RETURN_IF_ERROR(pool_shape(c, 2));
  const DType t = c.in_dtype(0);
  if (t == DType::kI8 || t == DType::kU8) c.set_out(0, c.graph.value(c.node.outputs[0]).shape, t);  // max of 8-bit
  return Status();
}
Status shape_AveragePool(ShapeContext& c) { return pool_shape(c, 2); }
Status shape_MaxPool3D(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(storage_order(c));
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  return pool_shape(c, 3);
}
Status shape_AveragePool3D(ShapeContext& c) { return pool_shape(c, 3); }
Status shape_MaxPoolWithIndices(ShapeContext& c) {
  FUSERT_RETURN_IF_ERROR(storage_order(c));
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  FUSERT_RETURN_IF_ERROR(pool_shape(c, 2));
  const Shape y = c.graph.value(c.node.outputs[0]).shape;
  if (c.node.outputs.size() > 1) c.set_out(1, y, DType::kI64);
  return Status();
}

}  // namespace fusert
