// oneDNN primitives for the volumetric ops (kernels/cpu/volume.h): convolution, deconvolution and
// pooling over NCDHW. Formats are oneDNN's choice (`any`): the weights are reordered once at
// creation; an activation in another layout than NCDHW is reordered to it and back inside the
// call (per-thread scratch). A max pool whose input holds NaN or Inf runs the reference loop
// (oneDNN's max drops NaN). Reference: oneDNN v2.6 developer guide, "Convolution",
// "Deconvolution", "Pooling".
#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/onednn/internal.h"
#include "kernels/cpu/volume.h"

namespace fusert::cpu {

using namespace onednn::detail;

namespace {

Dims dims3(const int64_t* v) { return {v[0], v[1], v[2]}; }
Dims minus_one(const int64_t* v) { return {v[0] - 1, v[1] - 1, v[2] - 1}; }

class VolumeImpl final : public VolumeAnchor {
 public:
  VolumeKind kind;
  VolumeParams p;
  memory::desc x_plain, y_plain, x_pd, y_pd, scratch_md;
  dnnl::primitive prim;
  memory weights, bias;
  std::string impl;
  bool reorder_in = false, reorder_out = false;

  std::string describe() const override {
    std::string s = impl;
    if (reorder_in || reorder_out)
      s += std::string("; reorders:") + (reorder_in ? " in" : "") + (reorder_out ? " out" : "");
    return s;
  }

  void run(const float* x, float* y) const override {
    const int64_t in = p.n * p.c * p.in[0] * p.in[1] * p.in[2];
    if (kind == VolumeKind::kMaxPool && !all_finite(x, in)) {  // NaN wins, as ONNX says
      max_pool3d_reference(p, x, y);
      return;
    }
    const dnnl::engine& e = cpu_engine();
    dnnl::stream s(e);
    memory src(x_pd, e, const_cast<float*>(x)), dst(y_pd, e, y);
    if (reorder_in) {
      src = memory(x_pd, e, scratch(0, x_pd.get_size() / sizeof(float)));
      memory xm(x_plain, e, const_cast<float*>(x));
      dnnl::reorder(xm, src).execute(s, xm, src);
    }
    if (reorder_out) dst = memory(y_pd, e, scratch(1, y_pd.get_size() / sizeof(float)));
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad(scratch_md)}};
    if (kind == VolumeKind::kConv || kind == VolumeKind::kConvTranspose) {
      args[DNNL_ARG_WEIGHTS] = weights;
      args[DNNL_ARG_BIAS] = bias;
    }
    prim.execute(s, args);
    if (reorder_out) {
      memory ym(y_plain, e, y);
      dnnl::reorder(dst, ym).execute(s, dst, ym);
    }
    s.wait();
  }
};

// The constant weights of a (de)convolution in the layout `md` prefers. ONNX's Conv weight
// [M, C/G, k..] is oneDNN's [G, M/G, C/G, k..] (goidhw); ConvTranspose's [C, M/G, k..] is
// oneDNN's deconvolution weight [G, M/G, C/G, k..] stored as giodhw.
memory volume_weights(const VolumeImpl& a, const Dims& dims, const float* w) {
  const bool grouped = dims.size() == 6;
  const auto tag = a.kind == VolumeKind::kConv ? (grouped ? memory::format_tag::goidhw : memory::format_tag::oidhw)
                                               : (grouped ? memory::format_tag::giodhw : memory::format_tag::iodhw);
  memory user(memory::desc(dims, memory::data_type::f32, tag), cpu_engine(), const_cast<float*>(w));
  memory out(a.weights.get_desc(), cpu_engine());
  dnnl::stream s(cpu_engine());
  dnnl::reorder(user, out).execute(s, user, out);
  s.wait();
  return out;
}

// The end pads from which oneDNN's floor formula gives the output size (ceil_mode resolved); 0
// where the last window ends inside the input (the floor then drops what no window reaches).
Dims pad_end_for(const VolumeParams& p) {
  Dims r(3);
  for (int a = 0; a < 3; ++a) {
    const int64_t need = (p.out[a] - 1) * p.stride[a] + (p.k[a] - 1) * p.dil[a] + 1 - p.in[a] - p.pad_begin[a];
    r[static_cast<size_t>(a)] = std::max<int64_t>(0, need);
  }
  return r;
}

bool create_primitive(VolumeImpl* a, const float* w, const float* b, std::string* why) {
  const VolumeParams& p = a->p;
  const auto f32 = memory::data_type::f32;
  const auto any = memory::format_tag::any;
  const Dims xd = {p.n, p.c, p.in[0], p.in[1], p.in[2]}, yd = {p.n, p.m, p.out[0], p.out[1], p.out[2]};
  a->x_plain = memory::desc(xd, f32, memory::format_tag::ncdhw);
  a->y_plain = memory::desc(yd, f32, memory::format_tag::ncdhw);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto inference = dnnl::prop_kind::forward_inference;
  const Dims strides = dims3(p.stride), dil = minus_one(p.dil), pl = dims3(p.pad_begin);
  if (a->kind == VolumeKind::kConv || a->kind == VolumeKind::kConvTranspose) {
    const bool transpose = a->kind == VolumeKind::kConvTranspose;
    Dims wd = {p.m, p.c / p.group, p.k[0], p.k[1], p.k[2]};
    if (transpose) wd = {p.m, p.c, p.k[0], p.k[1], p.k[2]};
    if (p.group > 1) wd = {p.group, p.m / p.group, p.c / p.group, p.k[0], p.k[1], p.k[2]};
    const memory::desc x(xd, f32, any), wdesc(wd, f32, any), bdesc({p.m}, f32, memory::format_tag::x), y(yd, f32, any);
    const Dims pr = dims3(p.pad_end);
    if (!transpose) {
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(inference, algorithm::convolution_direct, x, wdesc, bdesc, y, strides, dil,
                                          pl, pr),
          attr, cpu_engine());
      a->impl = std::string("convolution ") + pd.impl_info_str();
      a->x_pd = pd.src_desc(), a->y_pd = pd.dst_desc(), a->scratch_md = pd.scratchpad_desc();
      a->weights = memory(pd.weights_desc(), cpu_engine());
      a->prim = dnnl::convolution_forward(pd);
    } else {
      dnnl::deconvolution_forward::primitive_desc pd(
          dnnl::deconvolution_forward::desc(inference, algorithm::deconvolution_direct, x, wdesc, bdesc, y, strides,
                                            dil, pl, pr),
          attr, cpu_engine());
      a->impl = std::string("deconvolution ") + pd.impl_info_str();
      a->x_pd = pd.src_desc(), a->y_pd = pd.dst_desc(), a->scratch_md = pd.scratchpad_desc();
      a->weights = memory(pd.weights_desc(), cpu_engine());
      a->prim = dnnl::deconvolution_forward(pd);
    }
    a->weights = volume_weights(*a, wd, w);
    a->bias = bias_memory(b, p.m);
  } else {
    const bool max = a->kind == VolumeKind::kMaxPool;
    const algorithm alg = max                   ? algorithm::pooling_max
                          : p.count_include_pad ? algorithm::pooling_avg_include_padding
                                                : algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_v2_forward::primitive_desc pd(
        // Pooling takes no `any` source: channels-last, which oneDNN's JIT pooling runs on AVX2 and AVX-512.
        dnnl::pooling_v2_forward::desc(inference, alg, memory::desc(xd, f32, memory::format_tag::ndhwc),
                                       memory::desc(yd, f32, memory::format_tag::ndhwc), strides, dims3(p.k), dil, pl,
                                       pad_end_for(p)),
        attr, cpu_engine());
    a->impl = std::string(max ? "pooling_max " : "pooling_avg ") + pd.impl_info_str();
    a->x_pd = pd.src_desc(), a->y_pd = pd.dst_desc(), a->scratch_md = pd.scratchpad_desc();
    a->prim = dnnl::pooling_v2_forward(pd);
  }
  if (a->impl.find(" ref") != std::string::npos) {
    *why = "oneDNN has only its reference implementation here (" + a->impl + ")";
    return false;
  }
  a->reorder_in = a->x_pd != a->x_plain;
  a->reorder_out = a->y_pd != a->y_plain;
  return true;
}

}  // namespace

std::unique_ptr<VolumeAnchor> VolumeAnchor::create(VolumeKind kind, const VolumeParams& p, const float* w,
                                                   const float* b, std::string* why) {
  if (kind == VolumeKind::kAveragePool && p.count_include_pad) {
    const Dims pr = pad_end_for(p);
    for (int a = 0; a < 3; ++a) {
      if (pr[static_cast<size_t>(a)] > p.pad_end[a]) {
        *why = "AveragePool with count_include_pad whose ceil_mode window passes the padding";
        return nullptr;
      }
    }
  }
  if (kind == VolumeKind::kMaxPool || kind == VolumeKind::kAveragePool) {
    for (int a = 0; a < 3; ++a) {
      if (window_in_padding(p.in[a], p.out[a], p.k[a], p.stride[a], p.dil[a], p.pad_begin[a])) {
        *why = "an output window sees only padding";
        return nullptr;
      }
    }
  }
  auto impl = std::make_unique<VolumeImpl>();
  impl->kind = kind;
  impl->p = p;
  try {
    if (!create_primitive(impl.get(), w, b, why)) return nullptr;
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN: ") + e.what();
    return nullptr;
  }
  return impl;
}

}  // namespace fusert::cpu
