// oneDNN pooling anchor: MaxPool / AveragePool on oneDNN's pooling primitive, in NCHW, or in
// the layout oneDNN's convolutions pick on this machine (NHWC with AVX-512, nChw8c with AVX2)
// when the layout pass keeps its source or destination there. When oneDNN pools NCHW only with
// a generic loop (simple_nchw: 19 ms for ResNet-18's max pool on one AVX2 core), an NCHW call
// reorders into that layout and back instead. oneDNN's max pooling drops NaN, so a call first scans
// its input for NaN/Inf (the reference kernel runs then). A max pool whose source and destination
// both stay NHWC runs our own kernel (max_pool2d_nhwc), which propagates NaN as it runs: the scan
// read the whole input once more (SqueezeNet, batch 8, 2 threads: pools 2.4 -> 1.6 ms).
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

struct Primitive {
  dnnl::pooling_forward::primitive_desc pd;
  dnnl::pooling_forward prim;
};

class PoolImpl final : public PoolAnchor {
 public:
  PoolParams p;
  bool max = true;
  memory::desc x_plain, y_plain, x_nat, y_nat;
  Primitive plain, nat;
  dnnl::reorder to_nat, from_nat;  // x NCHW -> native, y native -> NCHW
  std::string tag;                 ///< the native layout's name, e.g. "nChw8c"
  bool src_native = false, dst_native = false;
  bool plain_slow = false;  ///< NCHW pooling is oneDNN's generic loop: NCHW calls go through `nat`
  bool nhwc = false;        ///< the native layout is NHWC

  std::string describe() const override {
    if (own_kernel()) return "own kernel max_pool2d_nhwc (NHWC in and out, NaN propagated as it runs)";
    const bool native = src_native || dst_native || plain_slow;
    std::string s = std::string(max ? "pooling_max " : "pooling_avg ") +
                    (native ? nat.pd.impl_info_str() : plain.pd.impl_info_str());
    if (native) s += "; " + tag + "; reorders:" + (src_native ? "" : " in") + (dst_native ? "" : " out");
    return s;
  }
  std::vector<int64_t> native_input() const override { return native_layout_of(x_nat); }
  std::vector<int64_t> native_output() const override { return native_layout_of(y_nat); }
  void use_native(bool input, bool output) override { src_native = input, dst_native = output; }
  bool own_kernel() const { return max && nhwc && src_native && dst_native; }

  void run(const float* x, float* y) const override {
    const int64_t in = p.n * p.c * p.h * p.w, out = p.n * p.c * p.oh * p.ow;
    if (own_kernel()) {  // NaN-safe as it runs: no scan of x first
      max_pool2d_nhwc(p, x, y);
      return;
    }
    if (!all_finite(x, in)) {
      run_reference(x, y);
      return;
    }
    dnnl::stream s(cpu_engine());
    if (!src_native && !dst_native && !plain_slow) {
      plain.prim.execute(s, {{DNNL_ARG_SRC, memory(x_plain, cpu_engine(), const_cast<float*>(x))},
                             {DNNL_ARG_DST, memory(y_plain, cpu_engine(), y)},
                             {DNNL_ARG_SCRATCHPAD, scratchpad(plain.pd.scratchpad_desc())}});
      s.wait();
      return;
    }
    memory src(x_nat, cpu_engine(), const_cast<float*>(x)), dst(y_nat, cpu_engine(), y);
    if (!src_native) {
      memory xm(x_plain, cpu_engine(), const_cast<float*>(x));
      src = memory(x_nat, cpu_engine(), scratch(0, static_cast<size_t>(in)));
      to_nat.execute(s, xm, src);
    }
    if (!dst_native) dst = memory(y_nat, cpu_engine(), scratch(1, static_cast<size_t>(out)));
    nat.prim.execute(
        s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad(nat.pd.scratchpad_desc())}});
    if (!dst_native) {
      memory ym(y_plain, cpu_engine(), y);
      from_nat.execute(s, dst, ym);
    }
    s.wait();
  }

  // The reference kernel (NaN/Inf propagate as ONNX says), converting native buffers.
  void run_reference(const float* x, float* y) const {
    const float* xp = x;
    if (src_native) {
      float* tmp = scratch(0, static_cast<size_t>(p.n * p.c * p.h * p.w));
      reorder_once(x_nat, x_plain, x, tmp);
      xp = tmp;
    }
    float* out = dst_native ? scratch(1, static_cast<size_t>(p.n * p.c * p.oh * p.ow)) : y;
    if (max) {
      max_pool2d(p, xp, out);
    } else {
      avg_pool2d(p, xp, out);
    }
    if (dst_native) reorder_once(y_plain, y_nat, out, y);
  }
};

// The layout a oneDNN convolution picks on this machine for an activation of c channels (a 3x3
// conv c -> c on the same map, formats `any`), which the pooling's neighbours then use: nhwc,
// nChw8c or nChw16c (without channel padding), else nhwc.
memory::format_tag conv_layout(int64_t n, int64_t c, int64_t h, int64_t w, std::string* name) {
  *name = "NHWC";
  try {
    const auto f32 = memory::data_type::f32;
    const auto any = memory::format_tag::any;
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                      memory::desc({n, c, h, w}, f32, any), memory::desc({c, c, 3, 3}, f32, any),
                                      memory::desc({n, c, h, w}, f32, any), {1, 1}, {1, 1}, {1, 1});
    const Dims l = native_layout_of(dnnl::convolution_forward::primitive_desc(d, cpu_engine()).dst_desc());
    if (l.size() == 5 && (l[4] == 8 || l[4] == 16)) {
      *name = l[4] == 8 ? "nChw8c" : "nChw16c";
      return l[4] == 8 ? memory::format_tag::nChw8c : memory::format_tag::nChw16c;
    }
  } catch (const dnnl::error&) {
  }
  return memory::format_tag::nhwc;
}

// The pooling primitive for x -> y in the given layouts; false (with why) when oneDNN has only
// its reference implementation or refuses the shape.
bool make_primitive(const PoolParams& p, algorithm alg, const memory::desc& x, const memory::desc& y, Primitive* out,
                    std::string* why) {
  // ONNX's ceil_mode is resolved into oh/ow: the right/bottom padding is what makes oneDNN's
  // output-size formula give them.
  const Dims pad_r = {(p.oh - 1) * p.stride_h + p.kh - p.h - p.pad_top,
                      (p.ow - 1) * p.stride_w + p.kw - p.w - p.pad_left};
  try {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, x, y, {p.stride_h, p.stride_w}, {p.kh, p.kw},
                                  {p.pad_top, p.pad_left}, pad_r);
    out->pd = dnnl::pooling_forward::primitive_desc(d, attr, cpu_engine());
    if (is_reference(out->pd.impl_info_str())) {
      *why = std::string("oneDNN has only its reference pooling here (") + out->pd.impl_info_str() + ")";
      return false;
    }
    out->prim = dnnl::pooling_forward(out->pd);
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN pooling: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<PoolAnchor> PoolAnchor::create(const PoolParams& p, bool max, std::string* why) {
  if (p.dil_h != 1 || p.dil_w != 1) {
    *why = "dilated pooling";
    return nullptr;
  }
  if (window_in_padding(p.h, p.oh, p.kh, p.stride_h, 1, p.pad_top) ||
      window_in_padding(p.w, p.ow, p.kw, p.stride_w, 1, p.pad_left)) {
    *why = "an output window sees only padding";
    return nullptr;
  }
  const int64_t over_h = (p.oh - 1) * p.stride_h + p.kh - p.h - p.pad_top - p.pad_bottom;
  const int64_t over_w = (p.ow - 1) * p.stride_w + p.kw - p.w - p.pad_left - p.pad_right;
  if (!max && p.count_include_pad && (over_h > 0 || over_w > 0)) {
    *why = "AveragePool with count_include_pad whose ceil_mode window passes the padding";
    return nullptr;
  }
  auto a = std::make_unique<PoolImpl>();
  a->p = p;
  a->max = max;
  const Dims x_dims = {p.n, p.c, p.h, p.w}, y_dims = {p.n, p.c, p.oh, p.ow};
  const auto f32 = memory::data_type::f32;
  a->x_plain = memory::desc(x_dims, f32, memory::format_tag::nchw);
  a->y_plain = memory::desc(y_dims, f32, memory::format_tag::nchw);
  const memory::format_tag tag = conv_layout(p.n, p.c, p.h, p.w, &a->tag);
  a->nhwc = tag == memory::format_tag::nhwc;
  a->x_nat = memory::desc(x_dims, f32, tag);
  a->y_nat = memory::desc(y_dims, f32, tag);
  const algorithm alg = max                   ? algorithm::pooling_max
                        : p.count_include_pad ? algorithm::pooling_avg_include_padding
                                              : algorithm::pooling_avg_exclude_padding;
  if (!make_primitive(p, alg, a->x_plain, a->y_plain, &a->plain, why) ||
      !make_primitive(p, alg, a->x_nat, a->y_nat, &a->nat, why)) {
    return nullptr;
  }
  try {
    const dnnl::engine& e = cpu_engine();
    a->to_nat = dnnl::reorder(dnnl::reorder::primitive_desc(e, a->x_plain, e, a->x_nat));
    a->from_nat = dnnl::reorder(dnnl::reorder::primitive_desc(e, a->y_nat, e, a->y_plain));
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN reorder: ") + e.what();
    return nullptr;
  }
  const std::string plain_impl = a->plain.pd.impl_info_str(), nat_impl = a->nat.pd.impl_info_str();
  a->plain_slow = plain_impl.rfind("jit", 0) != 0 && nat_impl.rfind("jit", 0) == 0;
  return a;
}

}  // namespace fusert::cpu::onednn
