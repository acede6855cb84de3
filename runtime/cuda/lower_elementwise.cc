// CUDA lowering of elementwise chains (one generated kernel) and row norms (prologue +
// LayerNorm/Softmax + post chain in one generated row kernel).
#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

// An elementwise chain (or one elementwise op): one generated kernel.
Status lower_elementwise_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  const Shape out = g.value(gl.grp.outputs.at(0)).shape;
  for (int ni : gl.grp.nodes) {
    for (ValueId v : node_at(g, ni).inputs) {
      if (v != kNoValue && g.value(v).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "non-f32 operand";
    }
  }
  auto bp = std::make_shared<BoundProgram>();
  bp->prog.out_shape = out;
  ValueId x = kNoValue;
  lowering::EpilogueTemplate t;
  FUSERT_RETURN_IF_ERROR(lowering::decode_elementwise(g, gl.grp, &x, &t));
  bp->prog.loads.push_back({0, bp->add_value(g, x)});
  bp->append_steps(g, t.ep.steps, t.step_operands, 0);
  bp->prog.stores.push_back({0, 0});
  Binding y;
  y.value = gl.grp.outputs.at(0);
  bp->outputs.push_back(y);
  if (bp->inputs.size() > FZ_MAX_INPUTS || out.size() > FZ_MAX_RANK) {
    return error(StatusCode::kUnsupported) << bp->inputs.size() << " operands of rank " << out.size() << " (limits "
                                           << FZ_MAX_INPUTS << ", " << FZ_MAX_RANK << ")";
  }
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(gen_elementwise(bp->prog)));
  std::string what = gl.grp.name;
  gl.ds.run = [=](const RunEnv& env) { return launch_program(env, k, *bp, what); };
  return Status();
}

// LayerNorm / Softmax over the last axis with its elementwise prologue and post chain.
Status lower_row_norm_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  lowering::RowNormGroup r;
  FUSERT_RETURN_IF_ERROR(lowering::decode_row_norm(g, gl.grp, &r));
  const Shape& shape = r.shape;
  auto bp = std::make_shared<BoundProgram>();
  int xi = 0;
  if (!add_row_input(g, *bp, r.x, shape, &xi) || xi != 0) return error(StatusCode::kUnsupported) << "row-norm input";
  RowNormSpec spec;
  spec.kind = r.layer_norm ? kern::RowNorm::kLayerNorm : kern::RowNorm::kSoftmax;
  if (!append_row_steps(g, *bp, r.pro.ep.steps, r.pro.step_operands, shape, &spec.pre) ||
      !append_row_steps(g, *bp, r.post.ep.steps, r.post.step_operands, shape, &spec.post)) {
    return error(StatusCode::kUnsupported) << "row-norm operand is not row-indexable";
  }
  spec.pre.stores.push_back({0, 0});
  spec.post.stores.push_back({0, 0});
  if (r.layer_norm) {
    spec.eps = r.eps;
    if (!add_row_input(g, *bp, r.scale, shape, &spec.scale_input))
      return error(StatusCode::kUnsupported) << "LayerNorm scale";
    if (r.shift != kNoValue && !add_row_input(g, *bp, r.shift, shape, &spec.shift_input))
      return error(StatusCode::kUnsupported) << "LayerNorm shift";
  }
  if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many operands";
  if (row_norm_shared_bytes(r.inner) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "row of " << r.inner << " values exceeds shared memory";
  KernelSource src = gen_row_norm(spec);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
  const ValueId y = gl.grp.outputs.at(0);
  const std::string what = gl.grp.name;
  const size_t shared = row_norm_shared_bytes(r.inner);
  const int block = src.block;
  const int64_t outer = r.outer, inner = r.inner;
  gl.ds.run = [=](const RunEnv& env) {
    FzRowArgs a = row_args(*bp, outer, inner, env, env.dev.f32(y));
    return env.ctx.launch(env.kernels[static_cast<size_t>(k)], dim3(static_cast<unsigned>(outer)), dim3(block), shared,
                          &a, what);
  };
  return Status();
}

}  // namespace fusert::cuda
