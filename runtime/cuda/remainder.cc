// The generated remainder of an anchor group: the part of the epilogue no library call takes,
// as one kernel over the anchor's result in scratch (elementwise chain; global-average-pool
// tail; LayerNorm tail), used by the anchor and conv-sum lowerings.
#include <cstring>

#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

// The steps of `t` from `from` on and their operands.
struct RemainderSteps {
  std::vector<kern::EpilogueStep> steps;
  std::vector<ValueId> ops;
  RemainderSteps(const lowering::EpilogueTemplate& t, size_t from)
      : steps(t.ep.steps.begin() + static_cast<long>(from), t.ep.steps.end()),
        ops(t.step_operands.begin() + static_cast<long>(from), t.step_operands.end()) {}
};

Binding scratch_binding() {
  Binding b;
  b.kind = Binding::kScratch;
  return b;
}

// Elementwise remainder: one generated kernel over the anchor's result.
Status elementwise_remainder(GroupLowering& gl, const RemainderSteps& rs, const Shape& shape, Remainder* r) {
  const Graph& g = gl.g;
  const auto& steps = rs.steps;
  const auto& ops = rs.ops;
  BoundProgram& bp = *r->bp;
  const Binding scratch = scratch_binding();
  Binding y;
  y.value = gl.grp.outputs.at(0);
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

// Global-average-pool tail: the chain before the pool, the pool, the chain after, in one kernel.
Status pool_remainder(GroupLowering& gl, const lowering::EpilogueTemplate& t, const RemainderSteps& rs,
                      const Shape& shape, const kern::ConvParams* conv, Remainder* r) {
  const Graph& g = gl.g;
  const auto& steps = rs.steps;
  const auto& ops = rs.ops;
  BoundProgram& bp = *r->bp;
  const Binding scratch = scratch_binding();
  if (!conv || shape.size() != 4) return error(StatusCode::kUnsupported) << "pool tail on a non-conv anchor";
  r->kind = Remainder::kPool;
  r->p = *conv;
  PoolSpec spec;
  spec.kind = PoolSpec::kGlobalAverage;
  bp.prog.out_shape = shape;
  spec.pre.loads.push_back({0, bp.add_binding(scratch, contiguous_strides(shape))});
  bp.prog.out_shape = shape;
  for (size_t i = 0; i < steps.size(); ++i) {
    kern::ElementwiseInstr in;
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
    kern::ElementwiseInstr in;
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

// LayerNorm tail over the last axis: prologue, LayerNorm and post chain in one row kernel.
Status row_norm_remainder(GroupLowering& gl, const lowering::EpilogueTemplate& t, const RemainderSteps& rs,
                          const Shape& shape, Remainder* r) {
  const Graph& g = gl.g;
  const auto& steps = rs.steps;
  const auto& ops = rs.ops;
  BoundProgram& bp = *r->bp;
  const Binding scratch = scratch_binding();
  r->kind = Remainder::kRowNorm;
  r->inner = shape.back();
  r->outer = shape_numel(shape) / r->inner;
  RowNormSpec spec;
  spec.kind = kern::RowNorm::kLayerNorm;
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

}  // namespace

Status build_remainder(GroupLowering& gl, const lowering::EpilogueTemplate& t, size_t from, const Shape& shape,
                       const kern::ConvParams* conv, Remainder* r) {
  const RemainderSteps rs(t, from);
  r->bp = std::make_shared<BoundProgram>();
  switch (t.ep.tail) {
    case kern::EpTail::kNone:
      return rs.steps.empty() ? Status() : elementwise_remainder(gl, rs, shape, r);
    case kern::EpTail::kGlobalAvgPool:
      return pool_remainder(gl, t, rs, shape, conv, r);
    case kern::EpTail::kLayerNorm:
      return row_norm_remainder(gl, t, rs, shape, r);
  }
  return error(StatusCode::kUnsupported) << "epilogue tail";
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

}  // namespace fusert::cuda
