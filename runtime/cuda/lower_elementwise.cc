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
  const Node& head = node_at(g, gl.grp.nodes[0]);
  ValueId cur = head.inputs[0];
  bp->prog.loads.push_back({0, bp->add_value(g, cur)});
  for (int ni : gl.grp.nodes) {
    lowering::EpilogueTemplate t;
    std::string why;
    if (!lowering::build_epilogue(g, {ni}, cur, out, false, &t, &why) || t.ep.steps.size() != 1) {
      return error(StatusCode::kUnsupported) << why;
    }
    bp->append_steps(g, t.ep.steps, t.step_operands, 0);
    cur = node_at(g, ni).outputs[0];
  }
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
  const FusionGroup& grp = gl.grp;
  size_t norm_at = 0;
  while (norm_at < grp.nodes.size() && node_at(g, grp.nodes[norm_at]).op != OpKind::kLayerNormalization &&
         node_at(g, grp.nodes[norm_at]).op != OpKind::kSoftmax)
    ++norm_at;
  if (norm_at == grp.nodes.size()) return error(StatusCode::kInternal) << "row-norm group without a norm";
  const Node& norm = node_at(g, grp.nodes[norm_at]);
  const Shape shape = g.value(norm.inputs[0]).shape;
  if (norm.op == OpKind::kSoftmax) {
    int64_t axis = norm.attr_i("axis");
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    if (axis != static_cast<int64_t>(shape.size()) - 1)
      return error(StatusCode::kUnsupported) << "softmax not over the last axis";
  } else {
    int64_t axis = norm.attr_i("axis");
    if (axis < 0) axis += static_cast<int64_t>(shape.size());
    if (axis != static_cast<int64_t>(shape.size()) - 1)
      return error(StatusCode::kUnsupported) << "LayerNorm not over the last axis";
  }
  const int64_t inner = shape.back(), outer = shape_numel(shape) / std::max<int64_t>(inner, 1);
  ValueId x = norm.inputs[0];
  const Node& head = node_at(g, grp.nodes[0]);
  if (norm_at > 0) {
    x = kNoValue;
    for (ValueId in : head.inputs)
      if (x == kNoValue && in != kNoValue && g.value(in).shape == shape) x = in;
    if (x == kNoValue) return error(StatusCode::kUnsupported) << "row-norm prologue head has no full-shape input";
  }
  lowering::EpilogueTemplate pro, post;
  std::string why;
  std::vector<int> pro_nodes(grp.nodes.begin(), grp.nodes.begin() + static_cast<long>(norm_at));
  std::vector<int> post_nodes(grp.nodes.begin() + static_cast<long>(norm_at) + 1, grp.nodes.end());
  if (!lowering::build_epilogue(g, pro_nodes, x, shape, false, &pro, &why))
    return error(StatusCode::kUnsupported) << why;
  if (!lowering::build_epilogue(g, post_nodes, norm.outputs[0], shape, false, &post, &why))
    return error(StatusCode::kUnsupported) << why;
  auto bp = std::make_shared<BoundProgram>();
  int xi = 0;
  if (!add_row_input(g, *bp, x, shape, &xi) || xi != 0) return error(StatusCode::kUnsupported) << "row-norm input";
  RowNormSpec spec;
  spec.kind = norm.op == OpKind::kLayerNormalization ? cpu::RowNorm::kLayerNorm : cpu::RowNorm::kSoftmax;
  if (!append_row_steps(g, *bp, pro.ep.steps, pro.step_operands, shape, &spec.pre) ||
      !append_row_steps(g, *bp, post.ep.steps, post.step_operands, shape, &spec.post)) {
    return error(StatusCode::kUnsupported) << "row-norm operand is not row-indexable";
  }
  spec.pre.stores.push_back({0, 0});
  spec.post.stores.push_back({0, 0});
  if (spec.kind == cpu::RowNorm::kLayerNorm) {
    spec.eps = static_cast<float>(norm.attr_f("epsilon"));
    if (!add_row_input(g, *bp, norm.inputs[1], shape, &spec.scale_input))
      return error(StatusCode::kUnsupported) << "LayerNorm scale";
    ValueId shift = opt_input(norm, 2);
    if (shift != kNoValue && !add_row_input(g, *bp, shift, shape, &spec.shift_input))
      return error(StatusCode::kUnsupported) << "LayerNorm shift";
  }
  if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many operands";
  if (row_norm_shared_bytes(inner) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "row of " << inner << " values exceeds shared memory";
  KernelSource src = gen_row_norm(spec);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
  ValueId y = grp.outputs.at(0);
  std::string what = grp.name;
  const size_t shared = row_norm_shared_bytes(inner);
  const int block = src.block;
  gl.ds.run = [=](const RunEnv& env) {
    FzRowArgs a = row_args(*bp, outer, inner, env, env.dev.f32(y));
    return env.ctx.launch(env.kernels[static_cast<size_t>(k)], dim3(static_cast<unsigned>(outer)), dim3(block), shared,
                          &a, what);
  };
  return Status();
}

}  // namespace fusert::cuda
