// QLinearConv on oneDNN's int8 convolution (kernels/cpu/onednn.h QConvAnchor): oneDNN computes the
// exact int32 accumulator of (src - src_zero_point) * weights (VNNI where the CPU has it) into an
// NHWC s32 buffer; the requantisation is ours (cpu::requantize_nhwc, the reference kernel's
// arithmetic, which is ONNX Runtime's), written to NCHW in the same pass. oneDNN's own output
// scales round a product differently now and then, and a QDQ network amplifies each such step
// (MobileNetV2: one output in 10^5 off by one at the first 1x1 conv, 4% relative L2 at the logits).
// Weights (s8) reordered once, with the zero-point compensation oneDNN wants.
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

memory::data_type int8_type(DType t) { return t == DType::kI8 ? memory::data_type::s8 : memory::data_type::u8; }

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
    memory acc(pd.dst_desc(), cpu_engine(), scratch(1, pd.dst_desc().get_size() / sizeof(float) + 16));
    prim.execute(s, {{DNNL_ARG_SRC, src},
                     {DNNL_ARG_WEIGHTS, weights},
                     {DNNL_ARG_DST, acc},
                     {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
    s.wait();
    requantize_nhwc(r, p.n, p.oh * p.ow, p.m, static_cast<const int32_t*>(acc.get_data_handle()), y, dst_native);
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

}  // namespace

std::unique_ptr<QConvAnchor> QConvAnchor::create(const ConvParams& p, DType xt, int32_t x_zero_point, const int8_t* w,
                                                 const Requant& r, std::string* why) {
  auto c = std::make_unique<QConvImpl>();
  c->p = p;
  c->r = r;
  const Dims x_dims = {p.n, p.c, p.h, p.w}, y_dims = {p.n, p.m, p.oh, p.ow};
  c->x_plain = memory::desc(x_dims, int8_type(xt), memory::format_tag::nchw);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (x_zero_point != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {x_zero_point});
  const Dims strides = {p.stride_h, p.stride_w}, dil = {p.dil_h - 1, p.dil_w - 1};
  const Dims pad_l = {p.pad_top, p.pad_left}, pad_r = {p.pad_bottom, p.pad_right};
  try {
    const memory::desc any_x(x_dims, int8_type(xt), memory::format_tag::any);
    const memory::desc acc_y(y_dims, memory::data_type::s32, memory::format_tag::nhwc);
    const memory::desc any_w(weight_dims(p), memory::data_type::s8, memory::format_tag::any);
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct, any_x, any_w,
                                      acc_y, strides, dil, pad_l, pad_r);
    c->pd = dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN has no int8 convolution for it (") + e.what() + ")";
    return nullptr;
  }
  if (is_reference(c->pd.impl_info_str())) {
    *why = "oneDNN has only its reference int8 convolution for it";
    return nullptr;
  }
  c->prim = dnnl::convolution_forward(c->pd);
  const dnnl::engine& e = cpu_engine();
  c->weights = reordered_weights(c->pd.weights_desc(), weight_dims(p), w);  // with oneDNN's compensation
  c->reorder_in = c->pd.src_desc() != c->x_plain;
  if (c->reorder_in) c->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->x_plain, e, c->pd.src_desc()));
  c->info = std::string(c->pd.impl_info_str()) + ", s32 accumulator, requantised by us" +
            (c->reorder_in ? "; reorders: in" : "; reorders: none");
  return c;
}

}  // namespace fusert::cpu::onednn
