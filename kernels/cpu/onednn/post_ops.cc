// oneDNN anchors, shared part: the engine, per-thread scratch, the post-op translation of our
// epilogue steps (oneDNN v2.6 developer guide, "Primitive Attributes: Post-ops"), the non-finite
// checks and the epilogue steps that run after a primitive.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

bool built() { return true; }

bool bf16_native() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;  // oneDNN's ISA values are nested bit sets (AMX includes it)
}

namespace detail {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

// A reusable per-thread buffer (concurrent runs never share one): 0 blocked source, 1 blocked
// destination, 2 aliased output, 3 the primitive's scratchpad, 4 a horizontal GEMM's concatenated
// output, 5 an NCHW copy of the residual operand (the reference fallback's of a native one, or a
// convolution's of one that is its destination's own buffer), 6 the intermediate of
// the 1x1 + depthwise reference fallback.
float* scratch(int slot, size_t floats) {
  thread_local std::vector<float> buf[8];
  std::vector<float>& b = buf[slot];
  if (b.size() < floats) b.resize(floats);
  return b.data();
}

Dims dense_strides(const Dims& d) {
  Dims s(d.size(), 1);
  for (size_t i = d.size(); i-- > 1;) s[i - 1] = s[i] * d[i];
  return s;
}

Dims dense_strides_of(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0) return {};
  Dims strides(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
  int64_t size = 1;
  for (int i = 0; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i] || d.padded_offsets[i] != 0) return {};
    size *= d.dims[i];
  }
  if (static_cast<int64_t>(md.get_size() / memory::data_type_size(md.data_type())) != size) return {};
  return strides;
}

namespace {

memory reordered(const memory::desc& md, const Dims& dims, memory::data_type t, void* w) {
  memory user(memory::desc(dims, t, dense_strides(dims)), cpu_engine(), w);
  memory out(md, cpu_engine());
  dnnl::stream s(cpu_engine());
  dnnl::reorder(user, out).execute(s, user, out);
  s.wait();
  return out;
}

}  // namespace

memory reordered_weights(const memory::desc& md, const Dims& dims, const float* w) {
  return reordered(md, dims, memory::data_type::f32, const_cast<float*>(w));
}

memory reordered_weights(const memory::desc& md, const Dims& dims, const int8_t* w) {
  return reordered(md, dims, memory::data_type::s8, const_cast<int8_t*>(w));
}

memory bias_memory(const float* b, int64_t m) {
  memory out(memory::desc({m}, memory::data_type::f32, memory::format_tag::x), cpu_engine());
  float* p = static_cast<float*>(out.get_data_handle());
  for (int64_t i = 0; i < m; ++i) p[i] = b ? b[i] : 0.f;
  return out;
}

Dims native_layout_of(const memory::desc& md) {
  Dims dense = dense_strides_of(md);
  const dnnl_memory_desc_t& d = md.data;
  if (!dense.empty() || d.ndims != 4 || d.format_kind != dnnl_blocked) return dense;
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  if (b.inner_nblks != 1 || b.inner_idxs[0] != 1 || d.offset0 != 0) return {};
  int64_t size = 1;
  for (int i = 0; i < 4; ++i) {
    if (d.padded_dims[i] != d.dims[i] || d.padded_offsets[i] != 0) return {};
    size *= d.dims[i];
  }
  if (d.dims[1] % b.inner_blks[0] != 0 || static_cast<int64_t>(md.get_size() / sizeof(float)) != size) return {};
  return {b.strides[0], b.strides[1], b.strides[2], b.strides[3], b.inner_blks[0]};
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
    case EpOp::kClip:  // oneDNN refuses min > max (ONNX: every value max) and NaN bounds: our epilogue runs it
      if (!(s.a <= s.b)) return false;
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
    case EpOp::kSwish:  // x * sigmoid(alpha * x)
      add(algorithm::eltwise_swish, s.a, 0.f, "swish");
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
                      long sum_step) {
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

void pool_tail(const Epilogue& ep, const float* pre, int64_t n, int64_t m, int64_t plane, float* y) {
  const int64_t rows = n * m;
  const int team = rows * plane > (1 << 15) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < plane; ++i) sum += pre[r * plane + i];
    y[r] = static_cast<float>(sum / static_cast<double>(plane));
  }
  std::vector<EpilogueStep> post = ep.post;  // strided operands index the pooled [n, m]
  for (EpilogueStep& s : post)
    if (s.mode == OperandMode::kStrided && s.strides.size() > 2) s.strides.resize(2);
  apply_epilogue_steps(post, {n, m}, 0, rows, m, 1, y);
}

void layer_norm_tail(const Epilogue& ep, size_t from, int64_t rows, int64_t n, float* y) {
  Epilogue rest = ep;
  rest.steps.assign(ep.steps.begin() + static_cast<long>(std::min(from, ep.steps.size())), ep.steps.end());
  const cpu::detail::RowEpilogue rows_ep(rest, n);
  const int64_t block = 16, blocks = (rows + block - 1) / block;
  const int team = rows * n > (1 << 14) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * block;
    rows_ep.apply_rows(r0, std::min(block, rows - r0), y + r0 * n, n);
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

void reorder_once(const memory::desc& from, const memory::desc& to, const float* x, float* y) {
  dnnl::stream s(cpu_engine());
  memory a(from, cpu_engine(), const_cast<float*>(x)), b(to, cpu_engine(), y);
  dnnl::reorder(a, b).execute(s, a, b);
  s.wait();
}

// True when some output row or column sees only padding (no kernel tap inside the input).
// oneDNN 2.6's brgconv wrote outside its buffers on such a convolution with a sum post-op
// (a dilated 2x2 kernel over a 1x1 image; found by the planner fuzzer), so those stay ours.
bool window_in_padding(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad) {
  for (int64_t o = 0; o < out; ++o) {
    bool hit = false;
    for (int64_t t = 0; t < k && !hit; ++t) {
      const int64_t i = o * stride - pad + t * dil;
      hit = i >= 0 && i < in;
    }
    if (!hit) return true;
  }
  return false;
}

}  // namespace detail
}  // namespace fusert::cpu::onednn
