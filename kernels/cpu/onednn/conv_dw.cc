// oneDNN block fusion of a 1x1 convolution with the depthwise convolution that consumes it (the
// `dw` post-op): one primitive, weights of both reordered once, activations reordered to and
// from the primitive's layout per call (NHWC on AVX-512, where it may run once per image; a
// channel block elsewhere) unless the layout pass keeps them there.
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

class PointwiseDepthwiseImpl final : public PointwiseDepthwiseAnchor {
 public:
  ConvParams p1, p2;
  Epilogue ep1, ep2;  ///< unary steps only: nothing to bind per call
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;
  memory w1, b1, w2, b2;
  memory::desc x_plain, y_plain;
  /// The activation layouts over the whole batch: pd's own, or pd's NHWC for N images when pd is
  /// made for one image and runs once per image (`calls` = N; see choose_primitive).
  memory::desc x_md, y_md;
  int64_t calls = 1;
  bool reorder_in = false, reorder_out = false;
  dnnl::reorder to_src, from_dst;
  const float* ref[4] = {};                     ///< the caller's w1, b1, w2, b2: the reference kernels' (NaN/Inf calls)
  bool squash = false;                          ///< some post-op maps NaN/Inf to a number: scan the input per call
  bool src_native = false, dst_native = false;  ///< use_native: x / y stored in pd's layout
  std::string info;

  size_t fused_steps() const override { return ep1.steps.size() + ep2.steps.size(); }
  std::string describe() const override {
    if (!src_native && !dst_native) return info;
    return info + "; native layout:" + (src_native ? " in" : "") + (dst_native ? " out" : "");
  }
  std::vector<int64_t> native_input() const override { return reorder_in ? native_layout_of(x_md) : Dims(); }
  std::vector<int64_t> native_output() const override { return reorder_out ? native_layout_of(y_md) : Dims(); }
  void use_native(bool input, bool output) override {
    src_native = input && !native_input().empty();
    dst_native = output && !native_output().empty();
  }

  // Two reference convolutions, converting native buffers to NCHW and back.
  void run_reference(const float* x, float* y) const {
    const float* xp = x;
    if (src_native) {
      float* plain = scratch(0, static_cast<size_t>(p1.n * p1.c * p1.h * p1.w));
      reorder_once(x_md, x_plain, x, plain);
      xp = plain;
    }
    float* mid = scratch(6, static_cast<size_t>(p1.n * p1.m * p1.oh * p1.ow));
    float* out = dst_native ? scratch(1, static_cast<size_t>(p2.n * p2.m * p2.oh * p2.ow)) : y;
    conv2d_fused(p1, xp, ref[0], ref[1], ep1, mid);
    conv2d_fused(p2, mid, ref[2], ref[3], ep2, out);
    if (dst_native) reorder_once(y_plain, y_md, out, y);
  }

  void run(const float* x, float* y) const override {
    if (squash && !all_finite(x, p1.n * p1.c * p1.h * p1.w)) {
      run_reference(x, y);
      return;
    }
    dnnl::stream s(cpu_engine());
    memory xm(src_native ? x_md : x_plain, cpu_engine(), const_cast<float*>(x));
    memory ym(dst_native ? y_md : y_plain, cpu_engine(), y);
    memory src = xm, dst = ym;
    const bool reorder_in = this->reorder_in && !src_native, reorder_out = this->reorder_out && !dst_native;
    if (reorder_in) {
      src = memory(x_md, cpu_engine(), scratch(0, x_md.get_size() / sizeof(float) + 16));
      to_src.execute(s, xm, src);
    }
    if (reorder_out) dst = memory(y_md, cpu_engine(), scratch(1, y_md.get_size() / sizeof(float) + 16));
    const int64_t x_image = p1.c * p1.h * p1.w, y_image = p2.m * p2.oh * p2.ow;
    for (int64_t i = 0; i < calls; ++i) {  // calls > 1: image i of an NHWC batch (dense, one after another)
      float* xi = static_cast<float*>(src.get_data_handle()) + i * x_image;
      float* yi = static_cast<float*>(dst.get_data_handle()) + i * y_image;
      prim.execute(s, {{DNNL_ARG_SRC, memory(pd.src_desc(), cpu_engine(), xi)},
                       {DNNL_ARG_WEIGHTS, w1},
                       {DNNL_ARG_BIAS, b1},
                       {DNNL_ARG_DST, memory(pd.dst_desc(), cpu_engine(), yi)},
                       {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, w2},
                       {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, b2},
                       {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}});
    }
    if (reorder_out) from_dst.execute(s, dst, ym);
    s.wait();
  }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The shapes oneDNN's depthwise post-op computes as ONNX does (see the class comment).
bool shapes_fit(const ConvParams& p1, const ConvParams& p2, std::string* why) {
  const bool pointwise = p1.kh == 1 && p1.kw == 1 && p1.stride_h == 1 && p1.stride_w == 1 && p1.pad_top == 0 &&
                         p1.pad_left == 0 && p1.pad_bottom == 0 && p1.pad_right == 0 && p1.group == 1;
  const bool depthwise = p2.group == p2.c && p2.m == p2.c && p2.c == p1.m && p2.h == p1.oh && p2.w == p1.ow;
  const bool square = p2.kh == p2.kw && p2.stride_h == p2.stride_w && p2.dil_h == 1 && p2.dil_w == 1 &&
                      p2.pad_top == p2.pad_left && p2.pad_top < p2.kh;
  const bool sized = p2.oh == ceil_div(p2.h, p2.stride_h) && p2.ow == ceil_div(p2.w, p2.stride_w);
  if (!pointwise || !depthwise) {
    *why = "not a 1x1 convolution feeding a depthwise convolution of its channels";
  } else if (!square || !sized) {
    *why =
        "the depthwise convolution is not square with padding_l = top = left pad and output ceil(H / stride) "
        "(the shapes oneDNN's depthwise post-op computes)";
  } else {
    return true;
  }
  return false;
}

// Both epilogues as eltwise post-ops around the dw post-op, or false with the reason.
bool chain(const Epilogue& ep1, const ConvParams& p2, const Epilogue& ep2, PostOps* po, std::string* why) {
  for (const Epilogue* ep : {&ep1, &ep2}) {
    if (ep->tail != EpTail::kNone || !ep->post.empty()) {
      *why = "an epilogue tail in a 1x1 + depthwise block";
      return false;
    }
    for (const EpilogueStep& s : ep->steps) {
      if (is_tensor_op(s.op) || !append_unary(s, &po->ops, &po->names)) {
        *why = "an epilogue step with an operand or without an eltwise post-op in a 1x1 + depthwise block";
        return false;
      }
    }
    if (ep == &ep1) {
      po->ops.append_dw(memory::data_type::f32, memory::data_type::f32, memory::data_type::f32, p2.kh, p2.stride_h,
                        p2.pad_top, 0, {});
      po->names.push_back("dw " + std::to_string(p2.kh) + "x" + std::to_string(p2.kw) + " s" +
                          std::to_string(p2.stride_h));
    }
  }
  if (conflicting_eltwise(po->ops)) {
    *why = "one eltwise algorithm twice with other parameters (oneDNN 2.6 computes it wrong)";
    return false;
  }
  po->fused = ep1.steps.size() + ep2.steps.size();
  return true;
}

// The activation formats to ask for, in order. Where oneDNN's plain convolutions take NHWC (its
// AVX-512 brgconv kernels), NHWC first: left to pick (`any`), oneDNN 2.6 runs the first blocks of
// a MobileNet at batch 8 in nChw16c, in one pass, between 1x1 projections that take NHWC, so each
// of those activations went through NCHW twice. In NHWC the whole chain keeps one layout
// (MobileNetV2, batch 8, 2 threads, AVX-512, with split_batch: 27 -> 22 ms; batch 1 unchanged, as
// oneDNN picks NHWC there already). On AVX2, where the other convolutions take nChw8c, oneDNN
// picks.
std::vector<memory::format_tag> activation_formats() {
  if (plain_conv_takes_nhwc()) return {memory::format_tag::nhwc, memory::format_tag::any};
  return {memory::format_tag::any};
}

bool two_pass(const std::string& impl) { return impl.rfind("ref_fused", 0) == 0; }

// The primitive of the pair for `n` images with activations in format `tag`, into c->pd; false
// with the reason when oneDNN has none, or only its reference kernels, or only its two-pass kernel and
// `allow_two_pass` is false. In NHWC only the two-pass kernel: oneDNN 2.6's single-pass kernel
// computes wrong values there (test_onednn_block: MobileNetV2's 16 -> 96 stride-2 block with one
// thread, every block at batch 8 with two), so it is skipped for the next implementation.
bool choose_primitive(PointwiseDepthwiseImpl* c, const PostOps& po, memory::format_tag tag, int64_t n,
                      bool allow_two_pass, std::string* why) {
  const ConvParams &p1 = c->p1, &p2 = c->p2;
  const auto f32 = memory::data_type::f32;
  dnnl::primitive_attr attr;
  attr.set_post_ops(po.ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, algorithm::convolution_direct,
                                      memory::desc({n, p1.c, p1.h, p1.w}, f32, tag),
                                      memory::desc({p1.m, p1.c, 1, 1}, f32, memory::format_tag::any),
                                      memory::desc({p1.m}, f32, memory::format_tag::x),
                                      memory::desc({n, p1.m, p1.oh, p1.ow}, f32, tag), {1, 1}, {0, 0}, {0, 0});
    pd = dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
    while (tag == memory::format_tag::nhwc && !two_pass(pd.impl_info_str()))
      if (!pd.next_impl()) throw dnnl::error(dnnl_unimplemented, "no two-pass kernel in NHWC");
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN cannot fuse this 1x1 + depthwise pair (") + e.what() + ")";
    return false;
  }
  const std::string impl = pd.impl_info_str();
  if (two_pass(impl) ? impl.find(":ref") != std::string::npos : is_reference(impl.c_str())) {
    *why = "oneDNN would run this 1x1 + depthwise pair on its reference kernels (" + impl + ")";
    return false;
  }
  if (two_pass(impl) && !allow_two_pass) {
    *why = "oneDNN 2.6 has only its two-pass kernel for this 1x1 + depthwise pair (" + impl +
           ": the whole intermediate through scratch)";
    return false;
  }
  if (pd.dst_desc().dims() != Dims{n, p2.m, p2.oh, p2.ow}) {
    *why = "oneDNN's depthwise post-op output differs from the graph's";
    return false;
  }
  c->pd = pd;
  return true;
}

// The two-pass kernel in NHWC writes the whole intermediate [N, M, H, W] to scratch and reads it
// back. Past `kSplitBytes` for the batch it runs once per image instead, so that the intermediate
// of one image stays in cache (MobileNetV2's 16 -> 96 block at 112x112, batch 8: 38 MB; 2 threads,
// AVX-512: 4.7 ms as one call, 2.7 ms as eight).
constexpr double kSplitBytes = 4.0 * (1 << 20);

void split_batch(PointwiseDepthwiseImpl* c, const PostOps& po, memory::format_tag tag) {
  const ConvParams& p1 = c->p1;
  const double mid = 4.0 * static_cast<double>(p1.n * p1.m * p1.oh * p1.ow);
  if (tag != memory::format_tag::nhwc || p1.n == 1 || mid <= kSplitBytes) return;
  const dnnl::convolution_forward::primitive_desc whole = c->pd;
  std::string why;
  if (choose_primitive(c, po, tag, 1, true, &why))
    c->calls = p1.n;
  else
    c->pd = whole;
}

}  // namespace

std::unique_ptr<PointwiseDepthwiseAnchor> PointwiseDepthwiseAnchor::create(const ConvParams& p1, const float* w1,
                                                                           const float* b1, const Epilogue& ep1,
                                                                           const ConvParams& p2, const float* w2,
                                                                           const float* b2, const Epilogue& ep2,
                                                                           bool allow_two_pass, std::string* why) {
  if (!shapes_fit(p1, p2, why)) return nullptr;
  auto c = std::make_unique<PointwiseDepthwiseImpl>();
  c->p1 = p1, c->p2 = p2, c->ep1 = ep1, c->ep2 = ep2;
  PostOps po;
  if (!chain(ep1, p2, ep2, &po, why)) return nullptr;
  if (!all_finite(w1, p1.m * p1.c) || !all_finite(b1, b1 ? p1.m : 0) || !all_finite(w2, p2.m * p2.kh * p2.kw) ||
      !all_finite(b2, b2 ? p2.m : 0)) {
    *why = "weights hold NaN or Inf";
    return nullptr;
  }
  for (memory::format_tag tag : activation_formats()) {
    if (!choose_primitive(c.get(), po, tag, p1.n, allow_two_pass, why)) continue;
    c->x_md = c->pd.src_desc();
    c->y_md = c->pd.dst_desc();
    split_batch(c.get(), po, tag);
    break;
  }
  if (!c->pd) return nullptr;
  why->clear();
  c->prim = dnnl::convolution_forward(c->pd);
  c->w1 = reordered_weights(c->pd.weights_desc(), {p1.m, p1.c, 1, 1}, w1);
  const memory::desc dw_w = c->pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
  c->w2 = reordered_weights(dw_w, {p2.m, 1, 1, p2.kh, p2.kw}, w2);
  c->b1 = bias_memory(b1, p1.m);
  c->b2 = bias_memory(b2, p2.m);
  c->ref[0] = w1, c->ref[1] = b1, c->ref[2] = w2, c->ref[3] = b2;
  c->squash = first_squash(ep1.steps, ep1.steps.size()) >= 0 || first_squash(ep2.steps, ep2.steps.size()) >= 0;
  c->x_plain = memory::desc({p1.n, p1.c, p1.h, p1.w}, memory::data_type::f32, memory::format_tag::nchw);
  c->y_plain = memory::desc({p2.n, p2.m, p2.oh, p2.ow}, memory::data_type::f32, memory::format_tag::nchw);
  c->reorder_in = c->x_md != c->x_plain;
  c->reorder_out = c->y_md != c->y_plain;
  const dnnl::engine& e = cpu_engine();
  if (c->reorder_in) c->to_src = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->x_plain, e, c->x_md));
  if (c->reorder_out) c->from_dst = dnnl::reorder(dnnl::reorder::primitive_desc(e, c->y_md, e, c->y_plain));
  c->info = describe_pd(c->pd.impl_info_str(), po, po.fused, c->reorder_in, c->reorder_out);
  if (c->calls > 1) c->info += "; one call per image";
  return c;
}

}  // namespace fusert::cpu::onednn
