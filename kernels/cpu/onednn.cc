// oneDNN anchors (onednn.h): primitive creation with post-ops, weight reorders at creation,
// activation reorders per call when the primitive prefers a blocked format, the epilogue steps
// oneDNN cannot express run after it with our epilogue code.
#include "kernels/cpu/onednn.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <unordered_map>

namespace fusert::cpu::onednn {

bool built() { return true; }

namespace {

using dnnl::algorithm;
using dnnl::memory;
using Dims = memory::dims;

const dnnl::engine& cpu_engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A reusable per-thread buffer (concurrent runs never share one): 0 blocked source, 1 blocked
// destination, 2 aliased output, 3 the primitive's scratchpad.
float* scratch(int slot, size_t floats) {
  thread_local std::vector<float> buf[4];
  std::vector<float>& b = buf[slot];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

Dims dense_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

// An eltwise post-op for a unary step (appended to `po`); false when oneDNN has none.
bool append_unary(const EpilogueStep& s, dnnl::post_ops* po, std::vector<std::string>* names) {
  auto add = [&](algorithm a, float alpha, float beta, const char* name) {
    po->append_eltwise(1.f, a, alpha, beta);
    names->push_back(name);
  };
  switch (s.op) {
    case EpOp::kIdentity:
      return true;
    case EpOp::kRelu:
      add(algorithm::eltwise_relu, 0.f, 0.f, "relu");
      return true;
    case EpOp::kClip:
      add(algorithm::eltwise_clip_v2, s.a, s.b, "clip");
      return true;
    case EpOp::kSigmoid:
      add(algorithm::eltwise_logistic, 0.f, 0.f, "logistic");
      return true;
    case EpOp::kTanh:
      add(algorithm::eltwise_tanh, 0.f, 0.f, "tanh");
      return true;
    case EpOp::kHardSwish:
      add(algorithm::eltwise_hardswish, 0.f, 0.f, "hardswish");
      return true;
    case EpOp::kHardSigmoid:  // max(0, min(1, a*x + b)) = clip(linear(x))
      add(algorithm::eltwise_linear, s.a, s.b, "linear");
      add(algorithm::eltwise_clip_v2, 0.f, 1.f, "clip");
      return true;
    case EpOp::kGelu:
      add(algorithm::eltwise_gelu_erf, 0.f, 0.f, "gelu_erf");
      return true;
    case EpOp::kGeluTanh:
      add(algorithm::eltwise_gelu_tanh, 0.f, 0.f, "gelu_tanh");
      return true;
    case EpOp::kExp:
      add(algorithm::eltwise_exp, 0.f, 0.f, "exp");
      return true;
    case EpOp::kAbs:
      add(algorithm::eltwise_abs, 0.f, 0.f, "abs");
      return true;
    case EpOp::kSqrt:
      add(algorithm::eltwise_sqrt, 0.f, 0.f, "sqrt");
      return true;
    case EpOp::kNeg:
      add(algorithm::eltwise_linear, -1.f, 0.f, "linear");
      return true;
    default:  // Softplus: oneDNN 2.6's soft_relu is log(1 + exp(x)), less accurate than our
              // max(x, 0) + log1p(exp(-|x|)) (the planner fuzzer saw 2e-5 after a LayerNorm)
      return false;
  }
}

// How output dims index a tensor operand: its dims for a binary post-op, or false.
// `channel_dim` is the output axis of kPerChannel (1 for conv NCHW, last for GEMM).
bool operand_dims(const EpilogueStep& s, const Dims& out, size_t channel_dim, Dims* d) {
  d->assign(out.size(), 1);
  switch (s.mode) {
    case OperandMode::kFull:
      *d = out;
      return true;
    case OperandMode::kScalar:
      return true;
    case OperandMode::kPerChannel:
      (*d)[channel_dim] = out[channel_dim];
      return true;
    case OperandMode::kPerRow:  // conv: the image; GEMM/MatMul: every dim but the last
      if (channel_dim == 1 && out.size() == 4) {
        (*d)[0] = out[0];
      } else {
        for (size_t i = 0; i + 1 < out.size(); ++i) (*d)[i] = out[i];
      }
      return true;
    default:
      return false;
  }
}

bool binary_alg(const EpilogueStep& s, algorithm* a, const char** name) {
  switch (s.op) {
    case EpOp::kAddTensor:
      *a = algorithm::binary_add, *name = "add";
      return true;
    case EpOp::kMulTensor:
      *a = algorithm::binary_mul, *name = "mul";
      return true;
    case EpOp::kSubTensor:
      *a = algorithm::binary_sub, *name = "sub";
      return !s.operand_first;
    case EpOp::kDivTensor:
      *a = algorithm::binary_div, *name = "div";
      return !s.operand_first;
    default:
      return false;
  }
}

// The leading steps of `steps` as post-ops (at most `limit`); binary operands in `binary`.
struct PostOps {
  dnnl::post_ops ops;
  std::vector<std::string> names;
  struct Binary {
    size_t step;      ///< ep.steps index of its operand
    int index;        ///< position in the post-op chain (DNNL_ARG_ATTR_MULTIPLE_POST_OP)
    memory::desc md;  ///< src1: plain, broadcast dims of 1
  };
  std::vector<Binary> binary;
  size_t fused = 0;
  long sum_step = -1;  ///< the full-shape Add done as a sum post-op: dst holds the operand before the call
};

constexpr long kNoSum = -1;

// True when two eltwise post-ops of `po` use one algorithm with different alpha or beta.
bool conflicting_eltwise(const dnnl::post_ops& po) {
  struct Use {
    algorithm alg;
    float alpha, beta;
  };
  std::vector<Use> seen;
  for (int i = 0; i < po.len(); ++i) {
    if (po.kind(i) != dnnl::primitive::kind::eltwise) continue;
    float scale = 0.f, alpha = 0.f, beta = 0.f;
    algorithm alg;
    po.get_params_eltwise(i, scale, alg, alpha, beta);
    for (const Use& u : seen)
      if (u.alg == alg && (u.alpha != alpha || u.beta != beta)) return true;
    seen.push_back({alg, alpha, beta});
  }
  return false;
}

// The first full-shape Add among the leading `limit` steps: a sum post-op candidate.
long first_full_add(const std::vector<EpilogueStep>& steps, size_t limit) {
  for (size_t i = 0; i < steps.size() && i < limit; ++i)
    if (steps[i].op == EpOp::kAddTensor && steps[i].mode == OperandMode::kFull) return static_cast<long>(i);
  return kNoSum;
}

PostOps make_post_ops(const std::vector<EpilogueStep>& steps, const Dims& out, size_t channel_dim, size_t limit,
                      long sum_step = kNoSum) {
  PostOps p;
  for (size_t i = 0; i < steps.size() && i < limit; ++i) {
    const EpilogueStep& s = steps[i];
    if (static_cast<long>(i) == sum_step) {
      p.ops.append_sum(1.f);
      p.names.push_back("sum");
      p.sum_step = sum_step;
    } else if (is_tensor_op(s.op)) {
      algorithm a;
      const char* name = nullptr;
      Dims d;
      if (!binary_alg(s, &a, &name) || !operand_dims(s, out, channel_dim, &d)) break;
      memory::desc md(d, memory::data_type::f32, dense_strides(d));
      p.binary.push_back({i, p.ops.len(), md});
      p.ops.append_binary(a, md);
      p.names.push_back(std::string("binary_") + name);
    } else {
      // oneDNN 2.6's JIT post-op injectors keep one set of constants per eltwise algorithm: a
      // second use of an algorithm with other parameters (two HardSigmoids: linear, clip,
      // linear, clip) computed wrong values (found by the planner fuzzer). The chain stops
      // before such a step; it runs after the primitive instead.
      dnnl::post_ops trial = p.ops;
      std::vector<std::string> names = p.names;
      if (!append_unary(s, &trial, &names) || conflicting_eltwise(trial)) break;
      p.ops = trial;
      p.names = names;
    }
    p.fused = i + 1;
  }
  return p;
}

// Applies `steps` from `from` on to y in parallel chunks (the reference epilogue formulas).
void apply_rest(const Epilogue& ep, size_t from, int64_t total, int64_t channels, int64_t spatial, float* y) {
  if (from >= ep.steps.size()) return;
  const std::vector<EpilogueStep> rest(ep.steps.begin() + static_cast<long>(from), ep.steps.end());
  const int64_t chunk = 1 << 14, chunks = (total + chunk - 1) / chunk;
  const int team = chunks > 1 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t f0 = c * chunk, n = std::min(chunk, total - f0);
    apply_epilogue_steps(rest, ep.out_shape, f0, n, channels, spatial, y + f0);
  }
}

// True when a tensor operand other than the sum post-op's is the output buffer itself.
bool aliases_output(const Epilogue& ep, const float* y, long sum_step) {
  for (size_t i = 0; i < ep.steps.size(); ++i)
    if (static_cast<long>(i) != sum_step && is_tensor_op(ep.steps[i].op) && ep.steps[i].operand == y) return true;
  return false;
}

std::string describe_pd(const char* impl, const PostOps& po, size_t steps, bool reorder_in, bool reorder_out) {
  std::ostringstream os;
  os << impl;
  if (!po.names.empty()) {
    os << ", post-ops:";
    for (size_t i = 0; i < po.names.size(); ++i) os << (i ? ", " : " ") << po.names[i];
  }
  if (steps > po.fused) os << "; " << steps - po.fused << " step(s) after";
  if (reorder_in || reorder_out) {
    os << "; reorders:" << (reorder_in ? " in" : "") << (reorder_out ? " out" : "");
  }
  return os.str();
}

bool is_reference(const char* impl) { return std::strncmp(impl, "ref", 3) == 0; }

// oneDNN's eltwise post-ops clamp their input (max/min instructions in Relu and Clip, range
// clamps before the exp polynomials of Sigmoid, Tanh, GELU, Exp; HardSwish of -Inf): NaN and
// Inf do not come out as ONNX and our kernels give them. A chain with such a post-op therefore
// runs on the reference kernel for a call whose input or operands before it hold a NaN or Inf
// (checked here, one read of each); the planner fuzzer and tests/kernels/test_onednn.cc check it.
bool squashes_nan(EpOp op) {
  return !is_tensor_op(op) && op != EpOp::kIdentity && op != EpOp::kNeg && op != EpOp::kAbs && op != EpOp::kSqrt;
}

// The first fused step whose post-op maps NaN to a number, or -1.
long first_squash(const std::vector<EpilogueStep>& steps, size_t fused) {
  for (size_t i = 0; i < fused && i < steps.size(); ++i)
    if (squashes_nan(steps[i].op)) return static_cast<long>(i);
  return -1;
}

bool all_finite(const float* v, int64_t n) {
  if (!v) return true;
  const uint32_t* bits = reinterpret_cast<const uint32_t*>(v);
  int bad = 0;
  const int team = n > (1 << 16) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(team) if (team > 1) reduction(| : bad) schedule(static)
  for (int64_t i = 0; i < n; ++i) bad |= (bits[i] & 0x7f800000u) == 0x7f800000u;
  return !bad;
}

// Elements of a tensor operand of `mode` for output dims `out` (channel axis `channel_dim`).
int64_t operand_count(OperandMode mode, const Dims& out, size_t channel_dim) {
  int64_t total = 1;
  for (auto d : out) total *= d;
  switch (mode) {
    case OperandMode::kFull:
      return total;
    case OperandMode::kPerChannel:
      return out[channel_dim];
    case OperandMode::kPerRow:
      return channel_dim == 1 && out.size() == 4 ? out[0] : total / out.back();
    default:
      return 1;
  }
}

// True when `x` and the tensor operands of the steps before `squash` are all finite.
bool inputs_finite(const float* x, int64_t n, const Epilogue& ep, long squash, const Dims& out, size_t channel_dim) {
  if (!all_finite(x, n)) return false;
  for (long i = 0; i < squash; ++i) {
    const EpilogueStep& s = ep.steps[static_cast<size_t>(i)];
    if (is_tensor_op(s.op) && !all_finite(s.operand, operand_count(s.mode, out, channel_dim))) return false;
  }
  return true;
}

// The primitive's scratchpad for this call (oneDNN's own scratchpad is global unless the library
// is built for concurrent execution; Debian's is not).
memory scratchpad(const memory::desc& md) {
  return memory(md, cpu_engine(), scratch(3, md.get_size() / sizeof(float) + 16));
}

// Binds the binary post-op operands of `ep` for one execution.
void bind_binary(const PostOps& po, const Epilogue& ep, std::unordered_map<int, memory>* args) {
  for (size_t j = 0; j < po.binary.size(); ++j) {
    const EpilogueStep& s = ep.steps[po.binary[j].step];
    args->insert({DNNL_ARG_ATTR_MULTIPLE_POST_OP(po.binary[j].index) | DNNL_ARG_SRC_1,
                  memory(po.binary[j].md, cpu_engine(), const_cast<float*>(s.operand))});
  }
}

// ---------------------------------------------------------------- convolution

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
  const float* w_ref = nullptr;  ///< the caller's weights and bias (alive as long as the anchor):
  const float* b_ref = nullptr;  ///< the reference kernel's, for calls with non-finite inputs
  long squash = -1;              ///< first post-op that maps NaN to a number (first_squash)

  size_t fused_steps() const override { return po.fused; }
  std::string describe() const override { return info; }

  void run(const float* x, const Epilogue& ep, float* y) const override {
    if (squash >= 0 && !inputs_finite(x, p.n * p.c * p.h * p.w, ep, squash, out_dims, 1)) {
      conv2d_fused(p, x, w_ref, b_ref, ep, y);  // NaN/Inf propagate as ONNX says
      return;
    }
    dnnl::stream s(cpu_engine());
    const int64_t total = p.n * p.m * p.oh * p.ow;
    const bool alias = aliases_output(ep, y, po.sum_step);
    float* out = alias ? scratch(2, static_cast<size_t>(total)) : y;
    memory xm(x_plain, cpu_engine(), const_cast<float*>(x));
    memory ym(y_plain, cpu_engine(), out);
    memory src = xm, dst = ym;
    if (reorder_in) {
      src = memory(pd.src_desc(), cpu_engine(), scratch(0, pd.src_desc().get_size() / sizeof(float) + 16));
      dnnl::reorder(xm, src).execute(s, xm, src);
    }
    if (reorder_out)
      dst = memory(pd.dst_desc(), cpu_engine(), scratch(1, pd.dst_desc().get_size() / sizeof(float) + 16));
    if (po.sum_step != kNoSum) {  // the sum post-op adds what dst holds: the residual operand
      const float* r = ep.steps[static_cast<size_t>(po.sum_step)].operand;
      if (reorder_out) {
        memory rm(y_plain, cpu_engine(), const_cast<float*>(r));
        dnnl::reorder(rm, dst).execute(s, rm, dst);
      } else if (r != out) {
        std::memcpy(out, r, static_cast<size_t>(total) * sizeof(float));
      }
    }
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src},
                                            {DNNL_ARG_WEIGHTS, weights},
                                            {DNNL_ARG_BIAS, bias},
                                            {DNNL_ARG_DST, dst},
                                            {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
    bind_binary(po, ep, &args);
    prim.execute(s, args);
    if (reorder_out) dnnl::reorder(dst, ym).execute(s, dst, ym);
    s.wait();
    apply_rest(ep, po.fused, total, p.m, p.oh * p.ow, out);
    if (alias) std::memcpy(y, out, static_cast<size_t>(total) * sizeof(float));
  }
};

}  // namespace

std::unique_ptr<ConvAnchor> ConvAnchor::create(const ConvParams& p, const float* w, const float* bias,
                                               const Epilogue& ep, std::string* why) {
  if (ep.tail != EpTail::kNone || !ep.post.empty()) {
    *why = "a reducing tail (global pool, LayerNorm) is not a oneDNN post-op";
    return nullptr;
  }
  auto c = std::make_unique<ConvImpl>();
  c->p = p;
  c->steps = ep.steps.size();
  const int64_t g = p.group;
  const Dims x_dims = {p.n, p.c, p.h, p.w}, y_dims = {p.n, p.m, p.oh, p.ow};
  const Dims w_dims = g > 1 ? Dims{g, p.m / g, p.c / g, p.kh, p.kw} : Dims{p.m, p.c, p.kh, p.kw};
  c->x_plain = memory::desc(x_dims, memory::data_type::f32, memory::format_tag::nchw);
  c->y_plain = memory::desc(y_dims, memory::data_type::f32, memory::format_tag::nchw);
  const memory::desc any_x(x_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc any_y(y_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc any_w(w_dims, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_desc({p.m}, memory::data_type::f32, memory::format_tag::x);
  // oneDNN dilation counts the holes: ONNX dilation d is oneDNN d - 1.
  const Dims strides = {p.stride_h, p.stride_w}, dil = {p.dil_h - 1, p.dil_w - 1};
  const Dims pad_l = {p.pad_top, p.pad_left}, pad_r = {p.pad_bottom, p.pad_right};
  // The longest post-op chain with an optimised implementation; a residual Add tried first as
  // the sum post-op (it keeps the blocked implementations), then as a binary post-op.
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
    if ((sum != kNoSum && try_create(limit, sum)) || try_create(limit, kNoSum)) break;
  }
  if (!c->pd) {
    *why = "oneDNN has no optimised convolution for these parameters";
    return nullptr;
  }
  c->prim = dnnl::convolution_forward(c->pd);
  // Weights and bias: reordered once into the primitive's format.
  dnnl::stream s(cpu_engine());
  const memory::desc w_user(w_dims, memory::data_type::f32, dense_strides(w_dims));
  memory wu(w_user, cpu_engine(), const_cast<float*>(w));
  c->weights = memory(c->pd.weights_desc(), cpu_engine());
  dnnl::reorder(wu, c->weights).execute(s, wu, c->weights);
  c->bias = memory(b_desc, cpu_engine());
  float* bp = static_cast<float*>(c->bias.get_data_handle());
  for (int64_t i = 0; i < p.m; ++i) bp[i] = bias ? bias[i] : 0.f;
  s.wait();
  c->out_dims = y_dims;
  c->w_ref = w;
  c->b_ref = bias;
  c->squash = first_squash(ep.steps, c->po.fused);
  if (c->squash >= 0 && (!all_finite(w, p.m * (p.c / g) * p.kh * p.kw) || !all_finite(bias, bias ? p.m : 0))) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  c->reorder_in = c->pd.src_desc() != c->x_plain;
  c->reorder_out = c->pd.dst_desc() != c->y_plain;
  c->info = describe_pd(c->pd.impl_info_str(), c->po, c->steps, c->reorder_in, c->reorder_out);
  return c;
}

namespace {

// ---------------------------------------------------------------- GEMM / MatMul (matmul primitive)

class GemmImpl final : public GemmAnchor {
 public:
  Dims out_dims;
  PostOps po;
  size_t steps = 0;
  int64_t channels = 0;  ///< N: per-channel operands index the column
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_desc, b_user, y_desc;
  memory weights, bias;  ///< constant B in the primitive's format (empty when B is an input)
  bool has_bias = false, const_b = false;
  std::string info;
  /// The reference kernel for calls with non-finite inputs before a NaN-squashing post-op:
  /// (a, b, ep, y) -> gemm_fused / matmul_fused with the caller's constants.
  std::function<void(const float*, const float*, const Epilogue&, float*)> reference;
  int64_t a_count = 0, b_count = 0;
  long squash = -1;

  size_t fused_steps() const override { return po.fused; }
  std::string describe() const override { return info; }

  void run(const float* a, const float* b, const Epilogue& ep, float* y) const override {
    if (squash >= 0 && (!inputs_finite(a, a_count, ep, squash, out_dims, out_dims.size() - 1) ||
                        (!const_b && !all_finite(b, b_count)))) {
      reference(a, b, ep, y);
      return;
    }
    dnnl::stream s(cpu_engine());
    int64_t total = 1;
    for (auto d : out_dims) total *= d;
    const bool alias = aliases_output(ep, y, kNoSum);
    float* out = alias ? scratch(2, static_cast<size_t>(total)) : y;
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memory(a_desc, cpu_engine(), const_cast<float*>(a))},
        {DNNL_ARG_WEIGHTS, const_b ? weights : memory(b_user, cpu_engine(), const_cast<float*>(b))},
        {DNNL_ARG_DST, memory(y_desc, cpu_engine(), out)},
        {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
    if (has_bias) args.insert({DNNL_ARG_BIAS, bias});
    bind_binary(po, ep, &args);
    prim.execute(s, args);
    s.wait();
    apply_rest(ep, po.fused, total, channels, 1, out);
    if (alias) std::memcpy(y, out, static_cast<size_t>(total) * sizeof(float));
  }

  // Creates the primitive with the longest post-op prefix that has an optimised implementation.
  bool make(const Epilogue& ep, const memory::desc& w_desc, const memory::desc* bias_desc, std::string* why) {
    steps = ep.steps.size();
    for (size_t limit = ep.steps.size() + 1; limit-- > 0;) {
      PostOps p = make_post_ops(ep.steps, out_dims, out_dims.size() - 1, limit);
      if (p.fused < limit) continue;
      dnnl::primitive_attr attr;
      attr.set_post_ops(p.ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      try {
        dnnl::matmul::desc d = bias_desc ? dnnl::matmul::desc(a_desc, w_desc, *bias_desc, y_desc)
                                         : dnnl::matmul::desc(a_desc, w_desc, y_desc);
        dnnl::matmul::primitive_desc candidate(d, attr, cpu_engine());
        if (is_reference(candidate.impl_info_str())) continue;
        pd = candidate;
        po = std::move(p);
      } catch (const dnnl::error&) {
        continue;
      }
      break;
    }
    if (!pd) {
      *why = "oneDNN has no optimised matmul for these parameters";
      return false;
    }
    prim = dnnl::matmul(pd);
    info = describe_pd(pd.impl_info_str(), po, steps, false, false);
    squash = first_squash(ep.steps, po.fused);
    return true;
  }

  void load_weights(const float* b, float scale) {
    dnnl::stream s(cpu_engine());
    std::vector<float> scaled;
    const float* src = b;
    if (scale != 1.f) {
      scaled.assign(b, b + b_user.get_size() / sizeof(float));
      for (float& v : scaled) v *= scale;
      src = scaled.data();
    }
    memory wu(b_user, cpu_engine(), const_cast<float*>(src));
    weights = memory(pd.weights_desc(), cpu_engine());
    dnnl::reorder(wu, weights).execute(s, wu, weights);
    s.wait();
  }
};

}  // namespace

std::unique_ptr<GemmAnchor> GemmAnchor::create_gemm(const GemmParams& p, const float* b, const float* c,
                                                    const Epilogue& ep, std::string* why) {
  if (ep.tail != EpTail::kNone || !ep.post.empty()) {
    *why = "a reducing tail (LayerNorm) is not a oneDNN post-op";
    return nullptr;
  }
  if (c && !(p.c_rows == 1 && (p.c_cols == p.n || p.c_cols == 1))) {
    *why = "Gemm C is not a per-column bias";
    return nullptr;
  }
  auto g = std::make_unique<GemmImpl>();
  g->out_dims = {p.m, p.n};
  g->channels = p.n;
  g->const_b = true;
  g->a_desc = memory::desc({p.m, p.k}, memory::data_type::f32, p.trans_a ? Dims{1, p.m} : Dims{p.k, 1});
  g->b_user = memory::desc({p.k, p.n}, memory::data_type::f32, p.trans_b ? Dims{1, p.k} : Dims{p.n, 1});
  g->y_desc = memory::desc({p.m, p.n}, memory::data_type::f32, Dims{p.n, 1});
  const memory::desc any_w({p.k, p.n}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc b_desc({1, p.n}, memory::data_type::f32, Dims{p.n, 1});
  g->has_bias = c != nullptr;
  if (!g->make(ep, any_w, c ? &b_desc : nullptr, why)) return nullptr;
  if (g->squash >= 0 && (!all_finite(b, p.k * p.n) || !all_finite(c, c ? p.c_cols : 0))) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  g->load_weights(b, p.alpha);
  g->a_count = p.m * p.k;
  g->reference = [p, b, c](const float* a, const float*, const Epilogue& e, float* y) { gemm_fused(p, a, b, c, e, y); };
  if (c) {
    g->bias = memory(b_desc, cpu_engine());
    float* bp = static_cast<float*>(g->bias.get_data_handle());
    for (int64_t i = 0; i < p.n; ++i) bp[i] = p.beta * c[p.c_cols == 1 ? 0 : i];
  }
  return g;
}

std::unique_ptr<GemmAnchor> GemmAnchor::create_matmul(const MatMulParams& p, const float* b_const, const Epilogue& ep,
                                                      std::string* why) {
  if (ep.tail != EpTail::kNone || !ep.post.empty()) {
    *why = "a reducing tail (LayerNorm) is not a oneDNN post-op";
    return nullptr;
  }
  auto batch_of = [&](const std::vector<int64_t>& idx, int64_t* dim) {
    bool seq = true, zero = true;
    for (size_t i = 0; i < idx.size(); ++i) {
      seq &= idx[i] == static_cast<int64_t>(i);
      zero &= idx[i] == 0;
    }
    *dim = idx.empty() || seq ? p.batch : 1;
    return idx.empty() || seq || zero;
  };
  int64_t ba = 0, bb = 0;
  if (!batch_of(p.a_batch_index, &ba) || !batch_of(p.b_batch_index, &bb)) {
    *why = "MatMul batch broadcast pattern";
    return nullptr;
  }
  auto g = std::make_unique<GemmImpl>();
  g->out_dims = {p.batch, p.m, p.n};
  g->channels = p.n;
  g->const_b = b_const != nullptr;
  g->a_desc = memory::desc({ba, p.m, p.k}, memory::data_type::f32, memory::format_tag::abc);
  g->b_user = memory::desc({bb, p.k, p.n}, memory::data_type::f32, memory::format_tag::abc);
  g->y_desc = memory::desc({p.batch, p.m, p.n}, memory::data_type::f32, memory::format_tag::abc);
  const memory::desc w_desc =
      g->const_b ? memory::desc({bb, p.k, p.n}, memory::data_type::f32, memory::format_tag::any) : g->b_user;
  if (!g->make(ep, w_desc, nullptr, why)) return nullptr;
  if (g->squash >= 0 && g->const_b && !all_finite(b_const, bb * p.k * p.n)) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  if (g->const_b) g->load_weights(b_const, 1.f);
  g->a_count = ba * p.m * p.k;
  g->b_count = bb * p.k * p.n;
  g->reference = [p, b_const](const float* a, const float* b, const Epilogue& e, float* y) {
    matmul_fused(p, a, b_const ? b_const : b, e, y);
  };
  return g;
}

}  // namespace fusert::cpu::onednn
