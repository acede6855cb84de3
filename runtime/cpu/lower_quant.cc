// CPU lowering of the quantisation ops (kernels/cpu/quantize.h): one opaque step each. Scales
// and zero points are read from their buffers at run time (constants or computed, such as
// DynamicQuantizeLinear's). The CUDA backend runs the same steps through its host fallback.
#include <algorithm>

#include "kernels/cpu/onednn.h"
#include "kernels/cpu/quantize.h"
#include "runtime/cpu/lower_cpu.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"
#include "runtime/lowering/spec.h"

namespace fusert {

namespace {

using cpu_lowering::shape_of;

// X (input 0) around the node's axis when the scale (input 1) has more than one value.
cpu::QuantAxis quant_axis(const Graph& g, const Node& n) {
  const Shape& x = shape_of(g, n.inputs[0]);
  cpu::QuantAxis a;
  a.inner = shape_numel(x);
  if (shape_numel(shape_of(g, n.inputs[1])) == 1) return a;
  const size_t axis = static_cast<size_t>(n.attr_i("axis"));
  a.outer = shape_numel(Shape(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(axis)));
  a.channels = x[axis];
  a.inner = shape_numel(Shape(x.begin() + static_cast<std::ptrdiff_t>(axis) + 1, x.end()));
  return a;
}

ValueId input_or_none(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

// The constant `v` (f32, or i8 / u8 / i32 as integers) as a vector of `T`.
template <typename T>
std::vector<T> constant_values(const Graph& g, ValueId v) {
  const Tensor& t = g.value(v).data;
  std::vector<T> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(t.dtype() == DType::kF32 ? static_cast<T>(t.f32()[i]) : static_cast<T>(quant::value_at(t, i)));
  return out;
}

// QLinearConv's requantisation from its constant inputs: multiplier x_scale * w_scale[c] / y_scale
// in f32 (as ONNX Runtime computes it), the activation's bounds in y units.
cpu::Requant requant_of(const Graph& g, const Node& n, int64_t m) {
  cpu::Requant r;
  const float sx = constant_values<float>(g, n.inputs[1])[0], sy = constant_values<float>(g, n.inputs[6])[0];
  const std::vector<float> sw = constant_values<float>(g, n.inputs[4]);
  for (int64_t c = 0; c < m; ++c) r.multiplier.push_back(sx * sw[sw.size() == 1 ? 0 : static_cast<size_t>(c)] / sy);
  if (n.inputs.size() > 8 && n.inputs[8] != kNoValue) r.bias = constant_values<int32_t>(g, n.inputs[8]);
  const double a = n.attr_f("act_min") / sy, b = n.attr_f("act_max") / sy;  // a negative y scale swaps them
  r.lo = static_cast<float>(std::min(a, b));
  r.hi = static_cast<float>(std::max(a, b));
  r.zero_point = constant_values<int32_t>(g, n.inputs[7])[0];
  r.out = g.value(n.outputs[0]).dtype;
  return r;
}

// Offsets (in matrices) of A's and B's operand for each of the output's batch entries (numpy
// broadcasting of the dims before the last two).
void batch_offsets(const Shape& a, const Shape& b, const Shape& y, std::vector<int64_t>* ao, std::vector<int64_t>* bo) {
  const size_t r = y.size() - 2;
  const Shape ab = cpu_lowering::padded(Shape(a.begin(), a.end() - 2), r);
  const Shape bb = cpu_lowering::padded(Shape(b.begin(), b.end() - 2), r);
  const int64_t count = shape_numel(Shape(y.begin(), y.end() - 2));
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i, oa = 0, ob = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rest % y[d];
      rest /= y[d];
      oa += (ab[d] == 1 ? 0 : idx) * sa;
      ob += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ab[d];
      sb *= bb[d];
    }
    ao->push_back(oa);
    bo->push_back(ob);
  }
}

cpu::ConvParams qconv_params(const Graph& g, const Node& n) {
  Node xw = n;  // conv_params reads X and W as inputs 0 and 1
  xw.inputs = {n.inputs[0], n.inputs[3]};
  return lowering::conv_params(g, xw);
}

}  // namespace

Status lowering::lower_qlinear_conv_onednn(const Graph& g, int node, Step& s) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  const cpu::ConvParams p = qconv_params(g, n);
  const ValueId xi = n.inputs[0], wi = n.inputs[3], yi = n.outputs[0];
  if (g.value(wi).dtype != DType::kI8) return error(StatusCode::kUnsupported) << "uint8 weights";
  for (int32_t z : constant_values<int32_t>(g, n.inputs[5]))
    if (z != 0) return error(StatusCode::kUnsupported) << "a weight zero point other than 0";
  const Tensor& w = g.value(wi).data;
  if (w.empty()) return error(StatusCode::kUnsupported) << "weights computed at run time";
  std::string why;
  std::shared_ptr<cpu::onednn::QConvAnchor> prim(
      cpu::onednn::QConvAnchor::create(p, g.value(xi).dtype, constant_values<int32_t>(g, n.inputs[2])[0],
                                       static_cast<const int8_t*>(w.raw()), requant_of(g, n, p.m), &why));
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = lowering::node_step(g, node, "onednn_qconv");
  s.inputs = {xi};
  s.detail = prim->describe();
  // The layout pass may keep x and y in NHWC between int8 steps (no reorder in, no transposed write).
  auto l = std::make_shared<NativeLayout>();
  const std::vector<int64_t> in = prim->native_input();
  if (!in.empty()) l->reads.push_back({xi, in, false});
  l->output = yi;
  l->output_strides = prim->native_output();
  l->apply = [prim](const NativeLayout& nl) {
    prim->use_native(!nl.reads.empty() && nl.reads[0].used, nl.output_used);
  };
  l->describe = [prim] { return prim->describe(); };
  s.native = l;
  s.run = [prim, xi, yi](const BufferTable& b) { prim->run(b.raw(xi), b.raw(yi)); };
  return Status();
}

Status lowering::lower_matmul_integer_onednn(const Graph& g, int node, Step& s) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  const ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  const ValueId zai = input_or_none(n, 2), zbi = input_or_none(n, 3);
  const Shape& as = shape_of(g, ai);
  const Shape& bs = shape_of(g, bi);
  const Tensor& b = g.value(bi).data;
  if (bs.size() != 2 || b.empty() || g.value(bi).dtype != DType::kI8)
    return error(StatusCode::kUnsupported) << "B is not a constant int8 matrix";
  if (zai != kNoValue && shape_numel(shape_of(g, zai)) != 1)
    return error(StatusCode::kUnsupported) << "A's zero point per row";
  if (zbi != kNoValue) {
    if (g.value(zbi).data.empty()) return error(StatusCode::kUnsupported) << "B's zero point computed at run time";
    for (int32_t z : constant_values<int32_t>(g, zbi))
      if (z != 0) return error(StatusCode::kUnsupported) << "a B zero point other than 0";
  }
  const int64_t k = as.back(), cols = bs[1], rows = shape_numel(as) / std::max<int64_t>(k, 1);
  if (rows == 0 || k == 0 || cols == 0) return error(StatusCode::kUnsupported) << "an empty operand";
  std::string why;
  const DType at = g.value(ai).dtype;
  std::shared_ptr<cpu::onednn::IntMatMulAnchor> prim(
      cpu::onednn::IntMatMulAnchor::create(rows, k, cols, at, static_cast<const int8_t*>(b.raw()), &why));
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = lowering::node_step(g, node, "onednn_matmul_integer");
  s.inputs = {ai};
  if (zai != kNoValue) s.inputs.push_back(zai);
  s.detail = prim->describe();
  s.run = [prim, ai, zai, yi, at](const BufferTable& t) {
    const int32_t z = zai == kNoValue    ? 0
                      : at == DType::kI8 ? static_cast<const int8_t*>(t.raw(zai))[0]
                                         : static_cast<const uint8_t*>(t.raw(zai))[0];
    prim->run(t.raw(ai), z, static_cast<int32_t*>(t.raw(yi)));
  };
  return Status();
}

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(QuantizeLinear) {
  const Node& n = NODE;
  const cpu::QuantAxis a = quant_axis(g, n);
  const ValueId xi = n.inputs[0], si = n.inputs[1], zi = input_or_none(n, 2), yi = n.outputs[0];
  const DType t = g.value(yi).dtype;
  s.run = [=](const BufferTable& b) {
    cpu::quantize_linear(a, b.f32(xi), b.f32(si), zi == kNoValue ? nullptr : b.raw(zi), t, b.raw(yi));
  };
  return Status();
}

LOWER(DequantizeLinear) {
  const Node& n = NODE;
  const cpu::QuantAxis a = quant_axis(g, n);
  const ValueId xi = n.inputs[0], si = n.inputs[1], zi = input_or_none(n, 2), yi = n.outputs[0];
  const DType t = g.value(xi).dtype;
  const Shape& xs = shape_of(g, xi);
  if (xs.size() != 4 || a.channels != 1 || (t != DType::kI8 && t != DType::kU8)) {
    s.run = [=](const BufferTable& b) {
      cpu::dequantize_linear(a, b.raw(xi), t, b.f32(si), zi == kNoValue ? nullptr : b.raw(zi), b.f32(yi));
    };
    return Status();
  }
  // Per tensor, 8-bit, 4-D: x may come in NHWC from an int8 convolution (the last one before a
  // float tail, e.g. MobileNetV2's before its pooling) rather than that convolution writing NCHW
  // through a slow strided store (3x its time there); y stays NCHW, transposed as it is dequantised.
  auto nhwc = std::make_shared<bool>(false);
  auto l = std::make_shared<NativeLayout>();
  l->reads = {{xi, {xs[1] * xs[2] * xs[3], 1, xs[3] * xs[1], xs[1]}, false}};
  l->apply = [nhwc](const NativeLayout& nl) { *nhwc = nl.reads[0].used; };
  l->describe = [nhwc] { return std::string(*nhwc ? "x read in NHWC (native layout), y written in NCHW" : ""); };
  s.native = l;
  const int64_t batch = xs[0], c = xs[1], pixels = xs[2] * xs[3];
  s.run = [=](const BufferTable& b) {
    if (!*nhwc)
      return cpu::dequantize_linear(a, b.raw(xi), t, b.f32(si), zi == kNoValue ? nullptr : b.raw(zi), b.f32(yi));
    const int32_t z = zi == kNoValue    ? 0
                      : t == DType::kI8 ? *static_cast<const int8_t*>(b.raw(zi))
                                        : *static_cast<const uint8_t*>(b.raw(zi));
    cpu::dequantize_nhwc(b.raw(xi), t, batch, c, pixels, b.f32(si)[0], z, b.f32(yi));
  };
  return Status();
}

LOWER(DynamicQuantizeLinear) {
  const Node& n = NODE;
  const int64_t count = shape_numel(shape_of(g, n.inputs[0]));
  const ValueId xi = n.inputs[0], yi = n.outputs[0], si = n.outputs[1], zi = n.outputs[2];
  s.run = [=](const BufferTable& b) {
    cpu::dynamic_quantize_linear(count, b.f32(xi), static_cast<uint8_t*>(b.raw(yi)), b.f32(si),
                                 static_cast<uint8_t*>(b.raw(zi)));
  };
  return Status();
}

LOWER(MatMulInteger) {
  const Node& n = NODE;
  const Shape& as = shape_of(g, n.inputs[0]);
  const Shape& bs = shape_of(g, n.inputs[1]);
  const Shape& ys = shape_of(g, n.outputs[0]);
  cpu::IntGemm p;
  p.m = as[as.size() - 2];
  p.k = as.back();
  p.n = bs.back();
  p.at = g.value(n.inputs[0]).dtype;
  p.bt = g.value(n.inputs[1]).dtype;
  const ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  const ValueId zai = input_or_none(n, 2), zbi = input_or_none(n, 3);
  if (zai != kNoValue) p.za_count = shape_numel(shape_of(g, zai));
  if (zbi != kNoValue) p.zb_count = shape_numel(shape_of(g, zbi));
  std::vector<int64_t> ao, bo;
  batch_offsets(as, bs, ys, &ao, &bo);
  s.run = [=](const BufferTable& b) {
    cpu::IntGemm q = p;
    q.za = zai == kNoValue ? nullptr : b.raw(zai);
    q.zb = zbi == kNoValue ? nullptr : b.raw(zbi);
    const auto* a8 = static_cast<const uint8_t*>(b.raw(ai));
    const auto* b8 = static_cast<const uint8_t*>(b.raw(bi));
    auto* y = static_cast<int32_t*>(b.raw(yi));
    for (size_t i = 0; i < ao.size(); ++i)
      cpu::matmul_integer(q, a8 + ao[i] * p.m * p.k, b8 + bo[i] * p.k * p.n, y + static_cast<int64_t>(i) * p.m * p.n);
  };
  return Status();
}

LOWER(ConvInteger) {
  const Node& n = NODE;
  const cpu::ConvParams p = lowering::conv_params(g, n);
  const ValueId xi = n.inputs[0], wi = n.inputs[1], yi = n.outputs[0];
  const ValueId zxi = input_or_none(n, 2), zwi = input_or_none(n, 3);
  const DType xt = g.value(xi).dtype, wt = g.value(wi).dtype;
  const int64_t wz_count = zwi == kNoValue ? 1 : shape_numel(shape_of(g, zwi));
  s.run = [=](const BufferTable& b) {
    cpu::conv_integer(p, b.raw(xi), xt, zxi == kNoValue ? nullptr : b.raw(zxi), b.raw(wi), wt,
                      zwi == kNoValue ? nullptr : b.raw(zwi), wz_count, static_cast<int32_t*>(b.raw(yi)));
  };
  return Status();
}

LOWER(QLinearConv) {
  const Node& n = NODE;
  const cpu::ConvParams p = qconv_params(g, n);
  const cpu::Requant r = requant_of(g, n, p.m);
  const ValueId xi = n.inputs[0], wi = n.inputs[3], yi = n.outputs[0], zxi = n.inputs[2], zwi = n.inputs[5];
  const DType xt = g.value(xi).dtype, wt = g.value(wi).dtype;
  const int64_t wz_count = shape_numel(shape_of(g, zwi));
  s.inputs = {xi};
  s.run = [=](const BufferTable& b) {
    cpu::qlinear_conv(p, b.raw(xi), xt, b.raw(zxi), b.raw(wi), wt, b.raw(zwi), wz_count, r, b.raw(yi));
  };
  return Status();
}

namespace {

// The NHWC strides of a 4-D [N, C, H, W] shape (NativeLayout's convention).
std::vector<int64_t> nhwc_strides(const Shape& s) { return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]}; }

}  // namespace

Status lowering::lower_max_pool_8bit(const Graph& g, int node, Step& s) {
  const Node& n = g.nodes[static_cast<size_t>(node)];
  const cpu::PoolParams p = pool_params(g, n);
  const bool is_signed = g.value(n.inputs[0]).dtype == DType::kI8;
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  struct Layouts {
    bool x_nhwc = false, y_nhwc = false;
  };
  auto lay = std::make_shared<Layouts>();
  auto l = std::make_shared<NativeLayout>();
  l->reads = {{xi, nhwc_strides(shape_of(g, xi)), false}};
  l->output = yi;
  l->output_strides = nhwc_strides(shape_of(g, yi));
  l->apply = [lay](const NativeLayout& nl) { lay->x_nhwc = nl.reads[0].used, lay->y_nhwc = nl.output_used; };
  s.native = l;
  s.detail = "own kernel: MaxPool of 8-bit values";
  s.run = [=](const BufferTable& b) {
    // The pool runs in x's layout; y in the other layout goes through a transposed copy.
    thread_local std::vector<uint8_t> tmp;
    const bool direct = lay->x_nhwc == lay->y_nhwc;
    if (!direct) tmp.resize(static_cast<size_t>(p.n * p.c * p.oh * p.ow));
    void* out = direct ? b.raw(yi) : tmp.data();
    cpu::max_pool2d_8bit(p, is_signed, lay->x_nhwc, b.raw(xi), out);
    if (!direct) cpu::relayout_8bit(tmp.data(), lay->x_nhwc, p.n, p.c, p.oh * p.ow, b.raw(yi));
  };
  return Status();
}

LOWER(QLinearAdd) {
  const Node& n = NODE;
  cpu::QAddParams p;
  p.sa = constant_values<float>(g, n.inputs[1])[0];
  p.za = constant_values<int32_t>(g, n.inputs[2])[0];
  p.sb = constant_values<float>(g, n.inputs[4])[0];
  p.zb = constant_values<int32_t>(g, n.inputs[5])[0];
  p.sy = constant_values<float>(g, n.inputs[6])[0];
  p.zy = constant_values<int32_t>(g, n.inputs[7])[0];
  p.lo = static_cast<float>(n.attr_f("act_min"));
  p.hi = static_cast<float>(n.attr_f("act_max"));
  p.at = g.value(n.inputs[0]).dtype;
  p.bt = g.value(n.inputs[3]).dtype;
  p.yt = g.value(n.outputs[0]).dtype;
  const Shape& ys = shape_of(g, n.outputs[0]);
  const ValueId ai = n.inputs[0], bi = n.inputs[3], yi = n.outputs[0];
  s.inputs = {ai, bi};
  if (ys.size() != 4 || shape_of(g, ai) != ys || shape_of(g, bi) != ys) {
    const int64_t count = shape_numel(ys);
    s.run = [=](const BufferTable& b) { cpu::qlinear_add(p, count, b.raw(ai), b.raw(bi), b.raw(yi)); };
    return Status();
  }
  // 4-D: each operand and the output NCHW or, where the layout pass keeps the int8 convolutions'
  // NHWC around it, NHWC (an operand in the other layout is read through a transposed copy).
  auto layouts = std::make_shared<cpu::QAddLayouts>();
  layouts->n = ys[0], layouts->c = ys[1], layouts->pixels = ys[2] * ys[3];
  const std::vector<int64_t> nhwc = nhwc_strides(ys);
  auto l = std::make_shared<NativeLayout>();
  l->reads = {{ai, nhwc, false}, {bi, nhwc, false}};
  l->output = yi;
  l->output_strides = nhwc;
  l->apply = [layouts](const NativeLayout& nl) {
    layouts->a_nhwc = nl.reads[0].used, layouts->b_nhwc = nl.reads[1].used, layouts->y_nhwc = nl.output_used;
  };
  s.native = l;
  s.run = [=](const BufferTable& b) { cpu::qlinear_add(p, *layouts, b.raw(ai), b.raw(bi), b.raw(yi)); };
  return Status();
}

}  // namespace fusert
