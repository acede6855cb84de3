// QLinearConv on oneDNN's int8 convolution (kernels/cpu/onednn.h QConvAnchor). oneDNN computes the
// exact int32 accumulator of (src - src_zero_point) * weights (VNNI where the CPU has it). The
// requantisation must be the reference kernel's arithmetic (ONNX Runtime's) to the bit: oneDNN's own
// output scales and destination zero point round differently now and then, and a QDQ network
// amplifies each such step (MobileNetV2: one output in 10^5 off by one at the first 1x1 conv, 4%
// relative L2 at the logits). Two ways, chosen per convolution:
//  - fused (the fast one): the requantisation as the primitive's epilogue, in the reference's order
//    of f32 operations: f32 bias, binary_mul by the per-channel multiplier, clip, round (half to even),
//    linear +zero_point, the saturating store to 8 bits. float(acc) + float(bias) is float(acc + bias)
//    when both are exact in f32, so it is taken only when |bias| and the accumulator's range over
//    every input (per channel, from the weights' signs and x's range) are within 2^24;
//  - else the accumulator into an NHWC s32 buffer and our requantisation pass (cpu::requantize_nhwc).
// Weights (s8) reordered once, with the zero-point compensation oneDNN wants.
#include <algorithm>
#include <cmath>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

memory::data_type int8_type(DType t) { return t == DType::kI8 ? memory::data_type::s8 : memory::data_type::u8; }

constexpr double kExactF32 = 16777216.0;  // 2^24: every integer up to it is exact in f32

// True when oneDNN's f32 epilogue reproduces requantize_one to the bit (see the file comment): per
// channel, the accumulator's range over every input, sum over taps of w * (x - zx) with x - zx in
// [qmin - zx, qmax - zx] (each weight's sign picks the end), within +-2^24, and |bias| too.
bool requant_exact_in_f32(const ConvParams& p, DType xt, int32_t x_zero_point, const int8_t* w, const Requant& r) {
  for (int32_t b : r.bias)
    if (std::abs(static_cast<double>(b)) > kExactF32) return false;
  const double lo = (xt == DType::kI8 ? -128.0 : 0.0) - x_zero_point,
               hi = (xt == DType::kI8 ? 127.0 : 255.0) - x_zero_point;
  const int64_t k = p.c / p.group * p.kh * p.kw;
  for (int64_t c = 0; c < p.m; ++c) {
    double pos = 0, neg = 0;  // sums of the positive and of the negative weights
    for (int64_t i = 0; i < k; ++i) (w[c * k + i] > 0 ? pos : neg) += w[c * k + i];
    const double acc_max = pos * hi + neg * lo, acc_min = pos * lo + neg * hi;
    if (std::max(std::abs(acc_max), std::abs(acc_min)) > kExactF32) return false;
  }
  return true;
}

// The requantisation as post-ops after the f32 bias: the multiplier's operand is binary post-op 0.
dnnl::post_ops requant_post_ops(const Requant& r, int64_t m) {
  dnnl::post_ops po;
  po.append_binary(algorithm::binary_mul, memory::desc({1, m, 1, 1}, memory::data_type::f32, memory::format_tag::nchw));
  if (r.lo > -3.4e38f || r.hi < 3.4e38f) po.append_eltwise(1.f, algorithm::eltwise_clip, r.lo, r.hi);
  po.append_eltwise(1.f, algorithm::eltwise_round, 0.f, 0.f);
  if (r.zero_point != 0) po.append_eltwise(1.f, algorithm::eltwise_linear, 1.f, static_cast<float>(r.zero_point));
  return po;
}

class QConvImpl final : public QConvAnchor {
 public:
  ConvParams p;
  Requant r;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory weights;
  memory::desc x_plain;
  dnnl::reorder to_src;
  bool reorder_in = false;
  bool fused = false;  ///< requantised by the primitive's post-ops, y of 8 bits NHWC
  memory bias, multiplier;
  bool src_native = false, dst_native = false;  ///< use_native: x / y in native_input / native_output
  std::string info;

  std::vector<int64_t> native_input() const override { return reorder_in ? dense_strides_of(pd.src_desc()) : Dims(); }
  std::vector<int64_t> native_output() const override {
    return {p.m * p.oh * p.ow, 1, p.ow * p.m, p.m};  // NHWC
  }
  void use_native(bool input, bool output) override {
    src_native = input && !native_input().empty();
    dst_native = output;
  }

  void run(const void* x, void* y) const override {
    dnnl::stream s(cpu_engine());
    memory xm(src_native ? pd.src_desc() : x_plain, cpu_engine(), const_cast<void*>(x));
    memory src = xm;
    if (reorder_in && !src_native) {
      src = memory(pd.src_desc(), cpu_engine(), scratch(0, pd.src_desc().get_size() / sizeof(float) + 16));
      to_src.execute(s, xm, src);
    }
    const size_t dst_floats = pd.dst_desc().get_size() / sizeof(float) + 16;
    void* dst = fused && dst_native ? y : scratch(1, dst_floats);
    memory out(pd.dst_desc(), cpu_engine(), dst);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                            {DNNL_ARG_WEIGHTS, weights},
                                            {DNNL_ARG_DST, out},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
    if (fused) {
      args[DNNL_ARG_BIAS] = bias;
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = multiplier;
    }
    prim.execute(s, args);
    s.wait();
    if (!fused)
      requantize_nhwc(r, p.n, p.oh * p.ow, p.m, static_cast<const int32_t*>(dst), y, dst_native);
    else if (!dst_native)
      relayout_8bit(dst, true, p.n, p.m, p.oh * p.ow, y);
  }
  std::string describe() const override {
    if (!src_native && !dst_native) return info;
    return info + "; native layout (NHWC):" + (src_native ? " in" : "") + (dst_native ? " out" : "");
  }
};

Dims weight_dims(const ConvParams& p) {
  const int64_t g = p.group;
  return g > 1 ? Dims{g, p.m / g, p.c / g, p.kh, p.kw} : Dims{p.m, p.c, p.kh, p.kw};
}

// The primitive for x (int8 type xt) into y_type NHWC, or false with `why`; with `fused`, the f32
// bias and the requantisation's post-ops. A reference implementation counts as none.
bool make_pd(QConvImpl* c, DType xt, int32_t x_zero_point, bool fused, std::string* why) {
  const ConvParams& p = c->p;
  const Dims x_dims = {p.n, p.c, p.h, p.w}, y_dims = {p.n, p.m, p.oh, p.ow};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {x_zero_point});
  if (fused) attr.set_post_ops(requant_post_ops(c->r, p.m));
  const Dims strides = {p.stride_h, p.stride_w}, dil = {p.dil_h - 1, p.dil_w - 1};
  const Dims pad_l = {p.pad_top, p.pad_left}, pad_r = {p.pad_bottom, p.pad_right};
  try {
    const memory::desc any_x(x_dims, int8_type(xt), memory::format_tag::any);
    const memory::desc y(y_dims, fused ? int8_type(c->r.out) : memory::data_type::s32, memory::format_tag::nhwc);
    const memory::desc any_w(weight_dims(p), memory::data_type::s8, memory::format_tag::any);
    const memory::desc b({p.m}, memory::data_type::f32, memory::format_tag::x);
    const auto kind = dnnl::prop_kind::forward_inference;
    const auto d = fused ? dnnl::convolution_forward::desc(kind, algorithm::convolution_direct, any_x, any_w, b, y,
                                                           strides, dil, pad_l, pad_r)
                         : dnnl::convolution_forward::desc(kind, algorithm::convolution_direct, any_x, any_w, y,
                                                           strides, dil, pad_l, pad_r);
    c->pd = dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN has no int8 convolution for it (") + e.what() + ")";
    return false;
  }
  if (is_reference(c->pd.impl_info_str())) {
    *why = "oneDNN has only its reference int8 convolution for it";
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<QConvAnchor> QConvAnchor::create(const ConvParams& p, DType xt, int32_t x_zero_point, const int8_t* w,
                                                 const Requant& r, std::string* why) {
  auto c = std::make_unique<QConvImpl>();
  c->p = p;
  c->r = r;
  std::string fused_why;
  c->fused = requant_exact_in_f32(p, xt, x_zero_point, w, r) && make_pd(c.get(), xt, x_zero_point, true, &fused_why);
  if (!c->fused && !make_pd(c.get(), xt, x_zero_point, false, why)) return nullptr;
  c->prim = dnnl::convolution_forward(c->pd);
  const dnnl::engine& e = cpu_engine();
  c->weights = reordered_weights(c->pd.weights_desc(), weight_dims(p), w);  // with oneDNN's compensation
  if (c->fused) {
    std::vector<float> b(static_cast<size_t>(p.m), 0.f);
    for (size_t i = 0; i < r.bias.size(); ++i) b[i] = static_cast<float>(r.bias[i]);
    c->bias = bias_memory(b.data(), p.m);
    c->multiplier = memory(memory::desc({1, p.m, 1, 1}, memory::data_type::f32, memory::format_tag::nchw), e);
    std::copy(r.multiplier.begin(), r.multiplier.end(), static_cast<float*>(c->multiplier.get_data_handle()));
  }
  c->x_plain = memory::desc({p.n, p.c, p.h, p.w}, int8_type(xt), memory::format_tag::nchw);
  c->reorder_in = c->pd.src_desc() != c->x_plain;
  if (c->reorder_in) c->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->x_plain, e, c->pd.src_desc()));
  c->info = std::string(c->pd.impl_info_str()) +
            (c->fused ? ", requantised in its epilogue" : ", s32 accumulator, requantised by us") +
            (c->reorder_in ? "; reorders: in" : "; reorders: none");
  return c;
}

}  // namespace fusert::cpu::onednn
