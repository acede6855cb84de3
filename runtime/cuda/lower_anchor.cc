// CUDA lowering of anchor groups: Conv on cuDNN (bias, residual z and ReLU fused by
// cudnnConvolutionBiasActivationForward), Gemm/MatMul on cuBLASLt (bias, ReLU / tanh-GELU
// epilogues, residual as the C operand); whatever of the epilogue the library cannot take runs
// in one generated kernel on the anchor's result (elementwise, global-average-pool tail, or
// LayerNorm tail: remainder.cc).
#include <algorithm>
#include <cstring>

#include "kernels/cuda/layout.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {
namespace {

bool is_full(const Graph& g, ValueId v, const Shape& out) { return v != kNoValue && g.value(v).shape == out; }

}  // namespace

namespace {

// Bias [N] per output column of a Gemm's C input (beta folded in), or false.
bool gemm_bias(const Graph& g, const Node& n, int64_t cols, std::vector<float>* bias, bool* full_c) {
  *full_c = false;
  ValueId c = opt_input(n, 2);
  if (c == kNoValue) return true;
  const Value& cv = g.value(c);
  const float beta = static_cast<float>(n.attr_f("beta"));
  Shape s = cv.shape;
  s.insert(s.begin(), 2 - std::min<size_t>(2, s.size()), 1);
  if (cv.data.empty() || cv.dtype != DType::kF32) {
    *full_c = s[0] != 1 && s[1] == cols;
    return *full_c;
  }
  if (s[0] != 1) {
    *full_c = s[1] == cols;
    return *full_c;
  }
  bias->assign(static_cast<size_t>(cols), 0.f);
  for (int64_t i = 0; i < cols; ++i)
    (*bias)[static_cast<size_t>(i)] = beta * cv.data.f32()[cv.data.numel() == 1 ? 0 : i];
  return true;
}

// The parts of a conv anchor's epilogue cuDNN fuses (cudnnConvolutionBiasActivationForward):
// a leading Add of a full-shape tensor (as z), then ReLU. Returns the steps consumed.
size_t cudnn_epilogue(const Graph& g, const lowering::EpilogueTemplate& t, const Shape& shape, ConvEpilogue* ep,
                      ValueId* z) {
  size_t used = 0;
  const auto& steps = t.ep.steps;
  if (used < steps.size() && steps[used].op == kern::EpOp::kAddTensor && is_full(g, t.step_operands[used], shape)) {
    *z = t.step_operands[used++];
    ep->z = true;
  }
  if (used < steps.size() && steps[used].op == kern::EpOp::kRelu) {
    ep->relu = true;
    ++used;
  }
  return used;
}

// cuDNN takes symmetric pads only: asymmetric ones (TF "SAME", EfficientNet) are applied by
// copying x into a zeroed, padded scratch image first, and the conv then runs unpadded.
struct PadCopy {
  bool on = false;
  kern::ConvParams conv;  ///< the conv cuDNN runs (unpadded when on)
  int64_t elems = 0;      ///< scratch floats of the padded image (64-aligned)
  int64_t shape[4] = {}, src_strides[4] = {}, dst_strides[4] = {}, offset = 0;
  explicit PadCopy(const kern::ConvParams& p) : on(p.pad_top != p.pad_bottom || p.pad_left != p.pad_right), conv(p) {
    if (!on) return;
    conv.h = p.h + p.pad_top + p.pad_bottom;
    conv.w = p.w + p.pad_left + p.pad_right;
    conv.pad_top = conv.pad_bottom = conv.pad_left = conv.pad_right = 0;
    elems = (p.n * p.c * conv.h * conv.w + 63) / 64 * 64;
    const int64_t s[4] = {p.n, p.c, p.h, p.w}, ss[4] = {p.c * p.h * p.w, p.h * p.w, p.w, 1},
                  ds[4] = {p.c * conv.h * conv.w, conv.h * conv.w, conv.w, 1};
    std::copy(s, s + 4, shape);
    std::copy(ss, ss + 4, src_strides);
    std::copy(ds, ds + 4, dst_strides);
    offset = p.pad_top * conv.w + p.pad_left;
  }
  // Writes the padded image to env.scratch and returns it (or `x` when no copy is needed).
  Result<const float*> run(const RunEnv& env, const float* x, const std::string& what) const {
    if (!on) return x;
    CUDA_CHECK(cudaMemsetAsync(env.scratch, 0, static_cast<size_t>(elems) * sizeof(float), env.ctx.stream()), what);
    CUDA_CHECK(strided_copy(4, shape, x, 0, src_strides, env.scratch, offset, dst_strides, 4, env.ctx.stream()), what);
    return static_cast<const float*>(env.scratch);
  }
};

// Conv anchor: one cuDNN call (bias, z, ReLU fused), then the generated remainder if any.
Status lower_conv_anchor(GroupLowering& gl, const lowering::EpilogueTemplate& t, const Shape& shape) {
  const Graph& g = gl.g;
  const Node& a = node_at(g, gl.grp.nodes[0]);
  const kern::ConvParams p = lowering::conv_params(g, a);
  const PadCopy pad(p);
  ConvEpilogue ep;
  ep.bias = opt_input(a, 2) != kNoValue;
  ValueId z = kNoValue;
  const size_t used = cudnn_epilogue(g, t, shape, &ep, &z);
  auto rem = std::make_shared<Remainder>();
  FUSERT_RETURN_IF_ERROR(build_remainder(gl, t, used, shape, &p, rem.get()));
  const bool direct = rem->kind == Remainder::kNone;
  if (!direct) {
    for (Binding& bd : rem->bp->inputs)
      if (bd.kind == Binding::kScratch) bd.offset += pad.elems;
  }
  gl.ds.scratch_bytes = static_cast<size_t>(pad.elems + (direct ? 0 : shape_numel(shape))) * sizeof(float);
  gl.ds.library_calls = 1;
  gl.ds.copy_launches = pad.on ? 2 : 0;
  auto state = std::make_shared<AnchorState>();
  const ValueId x = a.inputs[0], w = a.inputs[1], b = opt_input(a, 2), y = gl.grp.outputs.at(0);
  const std::string what = gl.grp.name;
  const kern::ConvParams pc = pad.conv;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_ASSIGN_OR_RETURN(state->conv, CudnnConv::create(ctx, pc, ep, what));
    return ctx.reserve_workspace(state->conv->workspace_bytes());
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    FUSERT_ASSIGN_OR_RETURN(const float* in, pad.run(env, env.dev.f32(x), what));
    float* out = direct ? env.dev.f32(y) : env.scratch + pad.elems;
    FUSERT_RETURN_IF_ERROR(state->conv->run(env.ctx, in, env.dev.f32(w), b == kNoValue ? nullptr : env.dev.f32(b),
                                            z == kNoValue ? nullptr : env.dev.f32(z), out));
    return run_remainder(env, *rem, y, what);
  };
  return Status();
}

// A MatMul batch index that cuBLASLt can stride: 0, 1, 2, ... (step 1) or all 0 (step 0).
bool regular_batch(const std::vector<int64_t>& idx, int64_t* step) {
  const kern::BatchPattern b = kern::batch_pattern(idx);
  *step = b == kern::BatchPattern::kShared ? 0 : 1;
  return b != kern::BatchPattern::kIrregular;
}

// What a GEMM anchor hands cuBLASLt, and how far into the epilogue the library goes.
struct GemmAnchor {
  GemmDesc d;
  ValueId A = kNoValue, B = kNoValue, C = kNoValue;
  std::vector<float> bias;        ///< constant bias [N] (Gemm's C, beta folded in)
  ValueId bias_value = kNoValue;  ///< or a graph value read as the bias (MatMul + Add)
  size_t used = 0;                ///< epilogue steps the library fuses
};

Status gemm_anchor(const Graph& g, const Node& a, GemmAnchor* ga) {
  const kern::GemmParams p = lowering::gemm_params(g, a);
  ga->d.m = p.m;
  ga->d.n = p.n;
  ga->d.k = p.k;
  ga->d.trans_a = p.trans_a;
  ga->d.trans_b = p.trans_b;
  ga->d.alpha = p.alpha;
  bool full_c = false;
  if (!gemm_bias(g, a, p.n, &ga->bias, &full_c)) return error(StatusCode::kUnsupported) << "Gemm C operand broadcast";
  if (full_c) {
    ga->C = a.inputs[2];
    ga->d.beta = p.beta;
  }
  return Status();
}

Status matmul_anchor(const Graph& g, const Node& a, const lowering::EpilogueTemplate& t, GemmAnchor* ga) {
  const kern::MatMulParams p = lowering::matmul_params(g, a);
  int64_t sa = 0, sb = 0;
  if (!regular_batch(p.a_batch_index, &sa) || !regular_batch(p.b_batch_index, &sb))
    return error(StatusCode::kUnsupported) << "MatMul batch broadcast pattern";
  GemmDesc& d = ga->d;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  if (sb == 0 && sa == 1) {  // weights shared by every batch: one GEMM over all rows
    d.m = p.m * p.batch;
  } else {
    d.batch = p.batch;
    d.stride_a = sa * p.m * p.k;
    d.stride_b = sb * p.k * p.n;
    d.stride_c = d.stride_d = p.m * p.n;
  }
  // A leading Add of a per-column vector becomes the bias.
  const auto& steps = t.ep.steps;
  if (!steps.empty() && steps[0].op == kern::EpOp::kAddTensor && t.step_operands[0] != kNoValue) {
    const Value& v = g.value(t.step_operands[0]);
    if (shape_numel(v.shape) == p.n && !v.shape.empty() && v.shape.back() == p.n) {
      ga->bias_value = t.step_operands[0];
      ga->used = 1;
      d.bias = true;
    }
  }
  return Status();
}

// The cuBLASLt epilogue after the bias: a full-shape residual as C (beta 1), then ReLU or
// tanh-GELU.
void gemm_library_epilogue(const Graph& g, const lowering::EpilogueTemplate& t, const Shape& shape, GemmAnchor* ga) {
  const auto& steps = t.ep.steps;
  size_t& used = ga->used;
  if (!ga->bias.empty()) ga->d.bias = true;
  if (ga->C == kNoValue && used < steps.size() && steps[used].op == kern::EpOp::kAddTensor &&
      is_full(g, t.step_operands[used], shape)) {
    ga->C = t.step_operands[used++];
    ga->d.beta = 1.f;
  }
  if (used < steps.size() && steps[used].op == kern::EpOp::kRelu) {
    ga->d.act = GemmDesc::kRelu;
    ++used;
  } else if (used < steps.size() && steps[used].op == kern::EpOp::kGeluTanh) {
    ga->d.act = GemmDesc::kGeluTanh;
    ++used;
  }
}

// Gemm / MatMul anchor: one cuBLASLt call (bias, residual, activation fused), then the
// generated remainder if any.
Status lower_gemm_anchor(GroupLowering& gl, const lowering::EpilogueTemplate& t, const Shape& shape) {
  const Graph& g = gl.g;
  const Node& a = node_at(g, gl.grp.nodes[0]);
  GemmAnchor ga;
  ga.A = a.inputs[0];
  ga.B = a.inputs[1];
  FUSERT_RETURN_IF_ERROR(a.op == OpKind::kGemm ? gemm_anchor(g, a, &ga) : matmul_anchor(g, a, t, &ga));
  gemm_library_epilogue(g, t, shape, &ga);
  auto rem = std::make_shared<Remainder>();
  FUSERT_RETURN_IF_ERROR(build_remainder(gl, t, ga.used, shape, nullptr, rem.get()));
  const bool direct = rem->kind == Remainder::kNone;
  if (!direct) gl.ds.scratch_bytes = static_cast<size_t>(shape_numel(shape)) * sizeof(float);
  gl.ds.library_calls = 1;
  auto state = std::make_shared<AnchorState>();
  if (!ga.bias.empty()) {
    state->bias = make_const(ga.bias);
    gl.ds.skip_weights.push_back(a.inputs[2]);
  }
  const ValueId A = ga.A, B = ga.B, C = ga.C, bias_value = ga.bias_value, y = gl.grp.outputs.at(0);
  const GemmDesc d = ga.d;
  const std::string what = gl.grp.name;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    if (state->bias) FUSERT_RETURN_IF_ERROR(state->bias->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->gemm, LtGemm::create(ctx, d, what));
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    float* out = direct ? env.dev.f32(y) : env.scratch;
    const float* bp = state->bias ? state->bias->get() : bias_value != kNoValue ? env.dev.f32(bias_value) : nullptr;
    FUSERT_RETURN_IF_ERROR(
        state->gemm->run(env.ctx, env.dev.f32(A), env.dev.f32(B), bp, C == kNoValue ? nullptr : env.dev.f32(C), out));
    return run_remainder(env, *rem, y, what);
  };
  return Status();
}

}  // namespace

Status lower_anchor_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  const FusionGroup& grp = gl.grp;
  const Node& a = node_at(g, grp.nodes[0]);
  const Shape shape = g.value(a.outputs[0]).shape;
  const bool conv = a.op == OpKind::kConv;
  if (!conv && a.op != OpKind::kGemm && a.op != OpKind::kMatMul)
    return error(StatusCode::kUnsupported) << op_name(a.op) << " anchor";
  lowering::EpilogueTemplate t;
  std::string why;
  if (!lowering::build_epilogue(g, lowering::tail_of(grp, 1), a.outputs[0], shape, conv, &t, &why))
    return error(StatusCode::kUnsupported) << why;
  for (int ni : grp.nodes) {
    for (ValueId v : node_at(g, ni).inputs)
      if (v != kNoValue && g.value(v).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "non-f32 operand";
  }
  return conv ? lower_conv_anchor(gl, t, shape) : lower_gemm_anchor(gl, t, shape);
}

}  // namespace fusert::cuda
