// oneDNN convolution anchor: the primitive with post-ops, weights reordered once, activations
// reordered to and from the primitive's blocked format per call.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

bool detail::plain_conv_takes_nhwc() {
  static const bool nhwc = [] {
    try {
      const memory::desc x({1, 64, 28, 28}, memory::data_type::f32, memory::format_tag::any);
      const memory::desc w({64, 64, 3, 3}, memory::data_type::f32, memory::format_tag::any);
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct, x, w, x,
                                        {1, 1}, {0, 0}, {1, 1}, {1, 1});
      dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
      return pd.src_desc() == memory::desc({1, 64, 28, 28}, memory::data_type::f32, memory::format_tag::nhwc);
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return nhwc;
}

namespace {

class ConvImpl final : public ConvAnchor {
 public:
  ConvParams p;
  Dims out_dims;
  PostOps po;
  size_t steps = 0;
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory weights, bias;
  memory::desc x_plain, y_plain;
  bool reorder_in = false, reorder_out = false;
  std::string info;
  const float* w_ref = nullptr;                 ///< the caller's weights and bias (alive as long as the anchor):
  const float* b_ref = nullptr;                 ///< the reference kernel's, for calls with non-finite inputs
  long squash = -1;                             ///< first post-op that maps NaN to a number (first_squash)
  bool src_native = false, dst_native = false;  ///< use_native: x / y stored in pd's layout
  bool sum_native = false;                      ///< use_native: the sum operand stored in pd's layout
  bool tail = false;                            ///< a GlobalAveragePool tail follows (output [N, M])
  bool bf16 = false;                            ///< source and weights in bf16 (Precision::kBf16)
  /// bf16: the f32 layout of pd's source (NHWC where oneDNN takes it), in which the producer may
  /// write x for a conversion-only reorder; empty when pd's source is not dense.
  memory::desc x_native_f32;
  dnnl::reorder from_native;  ///< bf16: x_native_f32 -> pd's source
  /// Activation reorders, created once with the primitive (not per call): NCHW -> pd's source
  /// layout, pd's destination layout -> NCHW, and NCHW -> pd's destination (the sum operand).
  dnnl::reorder to_src, from_dst, to_dst;

  size_t fused_steps() const override { return po.fused; }
  std::string describe() const override {
    if (!src_native && !dst_native && !sum_native) return info;
    return info + "; native layout:" + (src_native ? " in" : "") + (dst_native ? " out" : "") +
           (sum_native ? " residual" : "");
  }

  // A bf16 source is rounded by the reorder in: the producer may write its f32 layout.
  std::vector<int64_t> native_input() const override {
    if (bf16) return x_native_f32.is_zero() ? Dims() : dense_strides_of(x_native_f32);
    return reorder_in ? native_layout_of(pd.src_desc()) : Dims();
  }
  /// The layout of x when the layout pass keeps it native.
  memory::desc native_src() const { return bf16 ? x_native_f32 : pd.src_desc(); }
  std::vector<int64_t> native_output() const override {
    const bool whole = po.fused == steps && !tail;
    return reorder_out && whole ? native_layout_of(pd.dst_desc()) : Dims();
  }
  std::vector<int64_t> native_sum_operand() const override { return po.sum_step != kNoSum ? native_output() : Dims(); }
  long sum_step() const override { return po.sum_step; }
  void use_native(bool input, bool output, bool sum_operand) override {
    src_native = input && !native_input().empty();
    dst_native = output && !native_output().empty();
    sum_native = sum_operand && !native_sum_operand().empty();
  }

  // The reference kernel on a call with NaN/Inf, converting native buffers to NCHW and back.
  void run_reference(const float* x, const Epilogue& ep, float* y) const {
    const float* xp = x;
    if (src_native) {
      float* plain = scratch(0, static_cast<size_t>(p.n * p.c * p.h * p.w));
      reorder_once(native_src(), x_plain, x, plain);
      xp = plain;
    }
    const size_t total = static_cast<size_t>(p.n * p.m * p.oh * p.ow);
    Epilogue e = ep;
    if (sum_native) {  // the residual operand to NCHW, as the reference kernel reads it
      float* plain = scratch(5, total);
      reorder_once(pd.dst_desc(), y_plain, ep.steps[static_cast<size_t>(po.sum_step)].operand, plain);
      e.steps[static_cast<size_t>(po.sum_step)].operand = plain;
    }
    float* out = dst_native ? scratch(1, total) : y;
    conv2d_fused(p, xp, w_ref, b_ref, e, out);  // NaN/Inf propagate as ONNX says
    if (dst_native) reorder_once(y_plain, pd.dst_desc(), out, y);
  }

  void run(const float* x, const Epilogue& ep, float* y) const override {
    if (squash >= 0 && !inputs_finite(x, p.n * p.c * p.h * p.w, ep, squash, out_dims, 1)) {
      run_reference(x, ep, y);
      return;
    }
    dnnl::stream s(cpu_engine());
    const int64_t total = p.n * p.m * p.oh * p.ow;
    const bool alias = aliases_output(ep, y, po.sum_step), pool = ep.tail == EpTail::kGlobalAvgPool;
    float* out = alias || pool ? scratch(2, static_cast<size_t>(total)) : y;  // pool: [N, M, OH, OW] first
    memory xm(src_native ? native_src() : x_plain, cpu_engine(), const_cast<float*>(x));
    memory ym(dst_native ? pd.dst_desc() : y_plain, cpu_engine(), out);
    memory src = xm, dst = ym;
    const bool reorder_in = this->reorder_in && (!src_native || bf16), reorder_out = this->reorder_out && !dst_native;
    if (reorder_in) {
      src = memory(pd.src_desc(), cpu_engine(), scratch(0, pd.src_desc().get_size() / sizeof(float) + 16));
      (src_native ? from_native : to_src).execute(s, xm, src);
    }
    if (reorder_out)
      dst = memory(pd.dst_desc(), cpu_engine(), scratch(1, pd.dst_desc().get_size() / sizeof(float) + 16));
    if (po.sum_step != kNoSum) {  // the sum post-op adds what dst holds: the residual operand
      const float* r = ep.steps[static_cast<size_t>(po.sum_step)].operand;
      float* d = static_cast<float*>(dst.get_data_handle());
      if (sum_native || !this->reorder_out) {  // r is in pd's destination layout already
        if (r != d) std::memcpy(d, r, static_cast<size_t>(total) * sizeof(float));
      } else {  // r is NCHW, reordered into dst; copied first when dst is r's own buffer (in place)
        if (r == d) {
          float* copy = scratch(5, static_cast<size_t>(total));
          std::memcpy(copy, r, static_cast<size_t>(total) * sizeof(float));
          r = copy;
        }
        memory rm(y_plain, cpu_engine(), const_cast<float*>(r));
        to_dst.execute(s, rm, dst);
      }
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                            {DNNL_ARG_WEIGHTS, weights},
                                            {DNNL_ARG_BIAS, bias},
                                            {DNNL_ARG_DST, dst},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
    bind_binary(po, ep, &args);
    prim.execute(s, args);
    if (reorder_out) from_dst.execute(s, dst, ym);
    s.wait();
    apply_rest(ep, po.fused, total, p.m, p.oh * p.ow, out);
    if (pool) {
      pool_tail(ep, out, p.n, p.m, p.oh * p.ow, y);
    } else if (alias) {
      std::memcpy(y, out, static_cast<size_t>(total) * sizeof(float));
    }
  }
};

}  // namespace

namespace {

Dims weight_dims(const ConvParams& p) {
  const int64_t g = p.group;
  return g > 1 ? Dims{g, p.m / g, p.c / g, p.kh, p.kw} : Dims{p.m, p.c, p.kh, p.kw};
}

// The activation formats to ask for, in order. A grouped convolution that is not depthwise
// (RegNet, ResNeXt) left to oneDNN gets nChw8c even where its neighbours take NHWC, so each one
// cost two reorders per run; asked for NHWC it runs a jit kernel that is itself no slower
// (RegNet-Y-400MF, 1 thread, AVX-512: grouped convs 1.94 -> 1.77 ms, reorders 1.9 -> 0.1 ms).
// Only with activations and no tensor operands in the epilogue: oneDNN 2.6's NHWC grouped kernel
// computed wrong values with a binary post-op (the planner fuzzer found it: seed 100).
std::vector<memory::format_tag> activation_formats(const ConvParams& p, const Epilogue& ep) {
  const bool grouped = p.group > 1 && !(p.group == p.c && p.group == p.m);
  bool operands = false;
  for (const EpilogueStep& s : ep.steps) operands |= is_tensor_op(s.op);
  if (grouped && !operands && plain_conv_takes_nhwc()) return {memory::format_tag::nhwc, memory::format_tag::any};
  return {memory::format_tag::any};
}

// choose_primitive (below) with activations in format `tag` (source and weights in bf16 when c->bf16).
bool choose_primitive(ConvImpl* c, const Epilogue& ep, memory::format_tag tag) {
  const ConvParams& p = c->p;
  const Dims x_dims = {p.n, p.c, p.h, p.w}, y_dims = {p.n, p.m, p.oh, p.ow};
  const memory::data_type in_type = c->bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::desc any_x(x_dims, in_type, tag);
  const memory::desc any_y(y_dims, memory::data_type::f32, tag);
  const memory::desc any_w(weight_dims(p), in_type, memory::format_tag::any);
  const memory::desc b_desc({p.m}, memory::data_type::f32, memory::format_tag::x);
  // oneDNN dilation counts the holes: ONNX dilation d is oneDNN d - 1.
  const Dims strides = {p.stride_h, p.stride_w}, dil = {p.dil_h - 1, p.dil_w - 1};
  const Dims pad_l = {p.pad_top, p.pad_left}, pad_r = {p.pad_bottom, p.pad_right};
  auto try_create = [&](size_t limit, long sum_step) {
    PostOps po = make_post_ops(ep.steps, y_dims, 1, limit, sum_step);
    if (po.fused < limit) return false;
    dnnl::primitive_attr attr;
    attr.set_post_ops(po.ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per-call scratch: concurrent runs never share one
    try {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct, any_x, any_w,
                                        b_desc, any_y, strides, dil, pad_l, pad_r);
      dnnl::convolution_forward::primitive_desc pd(d, attr, cpu_engine());
      if (is_reference(pd.impl_info_str())) return false;
      c->pd = pd;
      c->po = std::move(po);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  };
  for (size_t limit = ep.steps.size() + 1; limit-- > 0;) {
    const long sum = first_full_add(ep.steps, limit);
    if ((sum != kNoSum && try_create(limit, sum)) || try_create(limit, kNoSum)) return true;
  }
  return false;
}

// The longest post-op chain of `ep` with an optimised implementation, into c->pd and c->po; a
// residual Add is tried first as the sum post-op (it keeps the blocked implementations), then
// as a binary post-op. Weights in format `any`, activations as activation_formats says: oneDNN
// picks.
bool choose_primitive(ConvImpl* c, const Epilogue& ep) {
  for (memory::format_tag tag : activation_formats(c->p, ep))
    if (choose_primitive(c, ep, tag)) return true;
  return false;
}

// Weights and bias reordered once into the primitive's format; the activation reorders created.
void bind_weights(ConvImpl* c, const float* w, const float* bias) {
  c->weights = reordered_weights(c->pd.weights_desc(), weight_dims(c->p), w);
  c->bias = bias_memory(bias, c->p.m);
  c->reorder_in = c->pd.src_desc() != c->x_plain;
  c->reorder_out = c->pd.dst_desc() != c->y_plain;
  const dnnl::engine& e = cpu_engine();
  if (c->reorder_in) c->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->x_plain, e, c->pd.src_desc()));
  const Dims strides = c->bf16 ? dense_strides_of(c->pd.src_desc()) : Dims();
  if (!strides.empty() && strides != dense_strides(c->x_plain.dims())) {
    c->x_native_f32 = memory::desc(c->x_plain.dims(), memory::data_type::f32, strides);
    c->from_native = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->x_native_f32, e, c->pd.src_desc()));
  }
  if (c->reorder_out) {
    c->from_dst = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->pd.dst_desc(), e, c->y_plain));
    c->to_dst = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->y_plain, e, c->pd.dst_desc()));
  }
}

}  // namespace

std::unique_ptr<ConvAnchor> ConvAnchor::create(const ConvParams& p, const float* w, const float* bias,
                                               const Epilogue& ep, std::string* why, Precision prec) {
  if (ep.tail == EpTail::kLayerNorm) {
    *why = "a LayerNorm tail on a convolution";
    return nullptr;
  }
  if (window_in_padding(p.h, p.oh, p.kh, p.stride_h, p.dil_h, p.pad_top) ||
      window_in_padding(p.w, p.ow, p.kw, p.stride_w, p.dil_w, p.pad_left)) {
    *why = "an output sees only padding (oneDNN 2.6 mishandles it)";
    return nullptr;
  }
  auto c = std::make_unique<ConvImpl>();
  c->p = p;
  c->steps = ep.steps.size();
  c->out_dims = {p.n, p.m, p.oh, p.ow};
  c->x_plain = memory::desc({p.n, p.c, p.h, p.w}, memory::data_type::f32, memory::format_tag::nchw);
  c->y_plain = memory::desc(c->out_dims, memory::data_type::f32, memory::format_tag::nchw);
  // A depthwise convolution stays f32 in bf16: it is bound by memory, and rounding its source would
  // add a pass over it (MobileNetV2, MobileNetV3-Large, EfficientNet-B0, 2 threads, AVX-512 BF16:
  // 0.1-0.5 ms faster per model than in bf16).
  const bool depthwise = p.group > 1 && p.group == p.c && p.group == p.m;
  c->bf16 = prec == Precision::kBf16 && !depthwise;
  bool chosen = choose_primitive(c.get(), ep);
  std::string note;
  if (!chosen && c->bf16) {  // no optimised bf16 kernel (e.g. a shape oneDNN runs in f32 only)
    c->bf16 = false;
    chosen = choose_primitive(c.get(), ep);
    note = "; f32 (no optimised bf16 kernel)";
  }
  if (!chosen) {
    *why = "oneDNN has no optimised convolution for these parameters";
    return nullptr;
  }
  c->prim = dnnl::convolution_forward(c->pd);
  c->tail = ep.tail != EpTail::kNone;
  c->w_ref = w;
  c->b_ref = bias;
  c->squash = first_squash(ep.steps, c->po.fused);
  if (c->squash >= 0 && (!all_finite(w, p.m * (p.c / p.group) * p.kh * p.kw) || !all_finite(bias, bias ? p.m : 0))) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  bind_weights(c.get(), w, bias);
  c->info = describe_pd(c->pd.impl_info_str(), c->po, c->steps, c->reorder_in, c->reorder_out) +
            (c->bf16                                 ? "; bf16 source and weights"
             : prec == Precision::kBf16 && depthwise ? "; f32 (depthwise)"
                                                     : note);
  return c;
}

}  // namespace fusert::cpu::onednn
