// CUDA lowering of anchor groups: Conv on cuDNN (bias, residual z and ReLU fused by
// cudnnConvolutionBiasActivationForward), Gemm/MatMul on cuBLASLt (bias, ReLU / tanh-GELU
// epilogues, residual as the C operand); whatever of the epilogue the library cannot take runs
// in one generated kernel on the anchor's result (elementwise, global-average-pool tail, or
// LayerNorm tail). The remainder builder is shared with the conv-sum lowering (lower_cross.cc).
#include <algorithm>
#include <cstring>

#include "kernels/cuda/layout.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {
namespace {

bool is_full(const Graph& g, ValueId v, const Shape& out) { return v != kNoValue && g.value(v).shape == out; }

}  // namespace

// Builds the generated part for the epilogue steps from `from` on (and the tail), reading the
// anchor's result from scratch offset 0 with logical shape `shape`.
Status build_remainder(GroupLowering& gl, const lowering::EpilogueTemplate& t, size_t from, const Shape& shape,
                       const cpu::ConvParams* conv, Remainder* r) {
  const Graph& g = gl.g;
  std::vector<cpu::EpilogueStep> steps(t.ep.steps.begin() + static_cast<long>(from), t.ep.steps.end());
  std::vector<ValueId> ops(t.step_operands.begin() + static_cast<long>(from), t.step_operands.end());
  r->bp = std::make_shared<BoundProgram>();
  BoundProgram& bp = *r->bp;
  Binding scratch;
  scratch.kind = Binding::kScratch;
  Binding y;
  y.value = gl.grp.outputs.at(0);
  if (t.ep.tail == cpu::EpTail::kNone) {
    if (steps.empty()) return Status();
    r->kind = Remainder::kElementwise;
    bp.prog.out_shape = shape;
    bp.prog.loads.push_back({0, bp.add_binding(scratch, contiguous_strides(shape))});
    bp.append_steps(g, steps, ops, 0);
    bp.prog.stores.push_back({0, 0});
    bp.outputs.push_back(y);
    if (bp.inputs.size() > FZ_MAX_INPUTS || shape.size() > FZ_MAX_RANK)
      return error(StatusCode::kUnsupported) << "too many epilogue operands";
    KernelSource src = gen_elementwise(bp.prog);
    r->block = src.block;
    FUSERT_ASSIGN_OR_RETURN(r->kernel, gl.kernel(src));
    return Status();
  }
  if (t.ep.tail == cpu::EpTail::kGlobalAvgPool) {
    if (!conv || shape.size() != 4) return error(StatusCode::kUnsupported) << "pool tail on a non-conv anchor";
    r->kind = Remainder::kPool;
    r->p = *conv;
    PoolSpec spec;
    spec.kind = PoolSpec::kGlobalAverage;
    bp.prog.out_shape = shape;
    spec.pre.loads.push_back({0, bp.add_binding(scratch, contiguous_strides(shape))});
    bp.prog.out_shape = shape;
    for (size_t i = 0; i < steps.size(); ++i) {
      cpu::ElementwiseInstr in;
      in.op = steps[i].op;
      in.a = steps[i].a;
      in.b = steps[i].b;
      in.operand_first = steps[i].operand_first;
      if (ops[i] != kNoValue) in.input = bp.add_value(g, ops[i]);
      spec.pre.code.push_back(in);
    }
    spec.pre.stores.push_back({0, 0});
    const Shape pooled = {shape[0], shape[1], 1, 1};
    bp.prog.out_shape = pooled;
    for (size_t i = 0; i < t.ep.post.size(); ++i) {
      cpu::ElementwiseInstr in;
      in.op = t.ep.post[i].op;
      in.a = t.ep.post[i].a;
      in.b = t.ep.post[i].b;
      in.operand_first = t.ep.post[i].operand_first;
      if (t.post_operands[i] != kNoValue) {
        Shape os = g.value(t.post_operands[i]).shape;
        Binding b;
        b.value = t.post_operands[i];
        if (os.size() == 2) os = {os[0], os[1], 1, 1};
        in.input = bp.add_binding(b, broadcast_strides(os, pooled));
      }
      spec.post.code.push_back(in);
    }
    spec.post.stores.push_back({0, 0});
    if (bp.inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
    KernelSource src = gen_pool(spec);
    r->block = src.block;
    FUSERT_ASSIGN_OR_RETURN(r->kernel, gl.kernel(src));
    return Status();
  }
  // LayerNorm tail over the last axis.
  r->kind = Remainder::kRowNorm;
  r->inner = shape.back();
  r->outer = shape_numel(shape) / r->inner;
  RowNormSpec spec;
  spec.kind = cpu::RowNorm::kLayerNorm;
  spec.eps = t.ep.ln_epsilon;
  spec.pre.loads.push_back({0, bp.add_binding(scratch, {r->inner, 1})});
  if (!append_row_steps(g, bp, steps, ops, shape, &spec.pre) ||
      !append_row_steps(g, bp, t.ep.post, t.post_operands, shape, &spec.post)) {
    return error(StatusCode::kUnsupported) << "LayerNorm-tail operand is not row-indexable";
  }
  spec.pre.stores.push_back({0, 0});
  spec.post.stores.push_back({0, 0});
  if (!add_row_input(g, bp, t.ln_scale, shape, &spec.scale_input))
    return error(StatusCode::kUnsupported) << "LayerNorm scale";
  if (t.ln_shift != kNoValue && !add_row_input(g, bp, t.ln_shift, shape, &spec.shift_input)) {
    return error(StatusCode::kUnsupported) << "LayerNorm shift";
  }
  if (bp.inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
  if (row_norm_shared_bytes(r->inner) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "LayerNorm row exceeds shared memory";
  KernelSource src = gen_row_norm(spec);
  r->block = src.block;
  r->shared = row_norm_shared_bytes(r->inner);
  FUSERT_ASSIGN_OR_RETURN(r->kernel, gl.kernel(src));
  return Status();
}

Status run_remainder(const RunEnv& env, const Remainder& r, ValueId y, const std::string& what) {
  switch (r.kind) {
    case Remainder::kNone:
      return Status();
    case Remainder::kElementwise:
      return launch_program(env, r.kernel, *r.bp, what);
    case Remainder::kPool: {
      FzPoolArgs a;
      std::memset(&a, 0, sizeof a);
      a.n = r.p.n;
      a.c = r.p.m;
      a.h = r.p.oh;
      a.w = r.p.ow;
      a.oh = a.ow = 1;
      for (size_t i = 0; i < r.bp->inputs.size(); ++i) {
        for (int d = 0; d < 4; ++d) a.in_strides[i][d] = r.bp->prog.input_strides[i][static_cast<size_t>(d)];
        a.in[i] = bind_in(r.bp->inputs[i], env);
      }
      a.out = env.dev.f32(y);
      unsigned planes = static_cast<unsigned>(a.n * a.c);
      unsigned blocks = (planes + static_cast<unsigned>(r.block / 32) - 1) / static_cast<unsigned>(r.block / 32);
      return env.ctx.launch(env.kernels[static_cast<size_t>(r.kernel)], dim3(blocks), dim3(r.block), 0, &a, what);
    }
    case Remainder::kRowNorm: {
      FzRowArgs a = row_args(*r.bp, r.outer, r.inner, env, env.dev.f32(y));
      return env.ctx.launch(env.kernels[static_cast<size_t>(r.kernel)], dim3(static_cast<unsigned>(r.outer)),
                            dim3(r.block), r.shared, &a, what);
    }
  }
  return Status();
}

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

}  // namespace

Status lower_anchor_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  const FusionGroup& grp = gl.grp;
  const Node& a = node_at(g, grp.nodes[0]);
  const Shape shape = g.value(a.outputs[0]).shape;
  const bool conv = a.op == OpKind::kConv;
  lowering::EpilogueTemplate t;
  std::string why;
  std::vector<int> chain(grp.nodes.begin() + 1, grp.nodes.end());
  if (!lowering::build_epilogue(g, chain, a.outputs[0], shape, conv, &t, &why))
    return error(StatusCode::kUnsupported) << why;
  for (int ni : grp.nodes) {
    for (ValueId v : node_at(g, ni).inputs)
      if (v != kNoValue && g.value(v).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "non-f32 operand";
  }
  auto state = std::make_shared<AnchorState>();
  auto rem = std::make_shared<Remainder>();
  const ValueId y = grp.outputs.at(0);
  const std::string what = grp.name;
  size_t used = 0;
  const auto& steps = t.ep.steps;
  if (conv) {
    cpu::ConvParams p = lowering::conv_params(g, a);
    // cuDNN takes symmetric pads only: asymmetric ones (TF "SAME", EfficientNet) are applied by
    // copying x into a zeroed, padded scratch image first, and the conv then runs unpadded.
    const bool pad_copy = p.pad_top != p.pad_bottom || p.pad_left != p.pad_right;
    cpu::ConvParams pc = p;
    int64_t pad_elems = 0;
    if (pad_copy) {
      pc.h = p.h + p.pad_top + p.pad_bottom;
      pc.w = p.w + p.pad_left + p.pad_right;
      pc.pad_top = pc.pad_bottom = pc.pad_left = pc.pad_right = 0;
      pad_elems = (p.n * p.c * pc.h * pc.w + 63) / 64 * 64;
    }
    ConvEpilogue ep;
    ep.bias = opt_input(a, 2) != kNoValue;
    ValueId z = kNoValue;
    if (used < steps.size() && steps[used].op == cpu::EpOp::kAddTensor && is_full(g, t.step_operands[used], shape)) {
      z = t.step_operands[used++];
      ep.z = true;
    }
    if (used < steps.size() && steps[used].op == cpu::EpOp::kRelu) {
      ep.relu = true;
      ++used;
    }
    FUSERT_RETURN_IF_ERROR(build_remainder(gl, t, used, shape, &p, rem.get()));
    const bool direct = rem->kind == Remainder::kNone;
    if (!direct) {
      for (Binding& bd : rem->bp->inputs)
        if (bd.kind == Binding::kScratch) bd.offset += pad_elems;
    }
    gl.ds.scratch_bytes = static_cast<size_t>(pad_elems + (direct ? 0 : shape_numel(shape))) * sizeof(float);
    gl.ds.library_calls = 1;
    gl.ds.copy_launches = pad_copy ? 2 : 0;
    ValueId x = a.inputs[0], w = a.inputs[1], b = opt_input(a, 2);
    gl.ds.prepare = [=](Context& ctx) -> Status {
      FUSERT_ASSIGN_OR_RETURN(state->conv, CudnnConv::create(ctx, pc, ep, what));
      return ctx.reserve_workspace(state->conv->workspace_bytes());
    };
    const int64_t xshape[4] = {p.n, p.c, p.h, p.w};
    const int64_t xstrides[4] = {p.c * p.h * p.w, p.h * p.w, p.w, 1};
    const int64_t pstrides[4] = {p.c * pc.h * pc.w, pc.h * pc.w, pc.w, 1};
    const int64_t pad_offset = p.pad_top * pc.w + p.pad_left;
    gl.ds.run = [=](const RunEnv& env) -> Status {
      const float* in = env.dev.f32(x);
      if (pad_copy) {
        CUDA_CHECK(cudaMemsetAsync(env.scratch, 0, static_cast<size_t>(pad_elems) * sizeof(float), env.ctx.stream()),
                   what);
        CUDA_CHECK(strided_copy(4, xshape, in, 0, xstrides, env.scratch, pad_offset, pstrides, 4, env.ctx.stream()),
                   what);
        in = env.scratch;
      }
      float* out = direct ? env.dev.f32(y) : env.scratch + pad_elems;
      FUSERT_RETURN_IF_ERROR(state->conv->run(env.ctx, in, env.dev.f32(w), b == kNoValue ? nullptr : env.dev.f32(b),
                                              z == kNoValue ? nullptr : env.dev.f32(z), out));
      return run_remainder(env, *rem, y, what);
    };
    return Status();
  }
  // Gemm / MatMul on cuBLASLt.
  GemmDesc d;
  ValueId A = a.inputs[0], B = a.inputs[1], C = kNoValue;
  std::vector<float> bias;
  ValueId bias_value = kNoValue;
  if (a.op == OpKind::kGemm) {
    cpu::GemmParams p = lowering::gemm_params(g, a);
    d.m = p.m;
    d.n = p.n;
    d.k = p.k;
    d.trans_a = p.trans_a;
    d.trans_b = p.trans_b;
    d.alpha = p.alpha;
    bool full_c = false;
    if (!gemm_bias(g, a, p.n, &bias, &full_c)) return error(StatusCode::kUnsupported) << "Gemm C operand broadcast";
    if (full_c) {
      C = a.inputs[2];
      d.beta = p.beta;
    }
  } else if (a.op == OpKind::kMatMul) {
    cpu::MatMulParams p = lowering::matmul_params(g, a);
    auto regular = [&](const std::vector<int64_t>& idx, int64_t* step) {
      bool seq = true, zero = true;
      for (size_t i = 0; i < idx.size(); ++i) {
        seq &= idx[i] == static_cast<int64_t>(i);
        zero &= idx[i] == 0;
      }
      *step = zero ? 0 : 1;
      return seq || zero;
    };
    int64_t sa = 0, sb = 0;
    if (!regular(p.a_batch_index, &sa) || !regular(p.b_batch_index, &sb))
      return error(StatusCode::kUnsupported) << "MatMul batch broadcast pattern";
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
    if (used < steps.size() && steps[used].op == cpu::EpOp::kAddTensor && t.step_operands[used] != kNoValue) {
      const Value& v = g.value(t.step_operands[used]);
      if (shape_numel(v.shape) == p.n && !v.shape.empty() && v.shape.back() == p.n) {
        bias_value = t.step_operands[used++];
        d.bias = true;
      }
    }
  } else {
    return error(StatusCode::kUnsupported) << op_name(a.op) << " anchor";
  }
  if (!bias.empty()) d.bias = true;
  if (C == kNoValue && used < steps.size() && steps[used].op == cpu::EpOp::kAddTensor &&
      is_full(g, t.step_operands[used], shape)) {
    C = t.step_operands[used++];
    d.beta = 1.f;
  }
  if (used < steps.size() && steps[used].op == cpu::EpOp::kRelu) {
    d.act = GemmDesc::kRelu;
    ++used;
  } else if (used < steps.size() && steps[used].op == cpu::EpOp::kGeluTanh) {
    d.act = GemmDesc::kGeluTanh;
    ++used;
  }
  FUSERT_RETURN_IF_ERROR(build_remainder(gl, t, used, shape, nullptr, rem.get()));
  const bool direct = rem->kind == Remainder::kNone;
  if (!direct) gl.ds.scratch_bytes = static_cast<size_t>(shape_numel(shape)) * sizeof(float);
  gl.ds.library_calls = 1;
  if (!bias.empty()) {
    state->bias = make_const(bias);
    gl.ds.skip_weights.push_back(a.inputs[2]);
  }
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

}  // namespace fusert::cuda
