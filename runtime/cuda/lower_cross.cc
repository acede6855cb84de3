// CUDA lowering of cross groups: two convs joined by Add (conv2 into scratch, conv1 with z =
// scratch: one cuDNN fused call each) and branch-merge (one cuDNN conv on stacked weights, one
// generated merge kernel).
#include <algorithm>
#include <cstring>

#include "kernels/cuda/layout.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

// b1 + b2 of two convs added together (absent bias = 0); the graph's biases are not uploaded.
Status summed_bias(GroupLowering& gl, const Node& c1, const Node& c2, int64_t m, std::vector<float>* bias) {
  bias->assign(static_cast<size_t>(m), 0.f);
  for (const Node* c : {&c1, &c2}) {
    ValueId bv = opt_input(*c, 2);
    if (bv == kNoValue) continue;
    if (gl.g.value(bv).data.empty()) return error(StatusCode::kUnsupported) << "conv bias is not a weight";
    gl.ds.skip_weights.push_back(bv);
    for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] += gl.g.value(bv).data.f32()[i];
  }
  return Status();
}

// The merge kernel of a branch-merge group over the stacked conv's result in scratch: each
// branch's chain on its half (unless linear: one half), their sum, the merge chain.
Result<std::shared_ptr<BoundProgram>> merge_program(const Graph& g, const lowering::BranchMergeLayout& L,
                                                    const lowering::EpilogueTemplate& ep_a,
                                                    const lowering::EpilogueTemplate& ep_b,
                                                    const lowering::EpilogueTemplate& ep_merge, const Shape& out,
                                                    ValueId y) {
  const int64_t hw = out[2] * out[3];
  auto bp = std::make_shared<BoundProgram>();
  bp->prog.out_shape = out;
  Binding half_a;
  half_a.kind = Binding::kScratch;
  const std::vector<int64_t> half_strides = {L.p.m * hw, hw, out[3], 1};
  if (L.linear) {
    bp->prog.loads.push_back({0, bp->add_binding(half_a, contiguous_strides(out))});
  } else {
    Binding half_b = half_a;
    half_b.offset = L.ma * hw;
    bp->prog.num_registers = 2;
    bp->prog.loads.push_back({0, bp->add_binding(half_a, half_strides)});
    bp->prog.loads.push_back({1, bp->add_binding(half_b, half_strides)});
    bp->append_steps(g, ep_a.ep.steps, ep_a.step_operands, 0);
    bp->append_steps(g, ep_b.ep.steps, ep_b.step_operands, 1);
    kern::ElementwiseInstr add;
    add.op = kern::EpOp::kAddTensor;
    add.dst = add.src = 0;
    add.src2 = 1;
    bp->prog.code.push_back(add);
  }
  bp->append_steps(g, ep_merge.ep.steps, ep_merge.step_operands, 0);
  bp->prog.stores.push_back({0, 0});
  Binding yb;
  yb.value = y;
  bp->outputs.push_back(yb);
  if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
  return bp;
}

}  // namespace

// Two convolutions joined by Add: conv2 into scratch, then conv1 with z = scratch and the
// summed bias (+ ReLU), then the generated remainder of the chain if any.
Status lower_conv_sum_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  const FusionGroup& grp = gl.grp;
  const Node& c1 = node_at(g, grp.nodes[0]);
  const Node& c2 = node_at(g, grp.nodes[1]);
  const Node& join = node_at(g, grp.nodes[2]);
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || join.op != OpKind::kAdd)
    return error(StatusCode::kInternal) << "conv-sum group shape";
  const Shape shape = g.value(join.outputs[0]).shape;
  lowering::EpilogueTemplate t;
  std::string why;
  std::vector<int> chain(grp.nodes.begin() + 3, grp.nodes.end());
  if (!lowering::build_epilogue(g, chain, join.outputs[0], shape, true, &t, &why))
    return error(StatusCode::kUnsupported) << why;
  kern::ConvParams p1 = lowering::conv_params(g, c1), p2 = lowering::conv_params(g, c2);
  for (const kern::ConvParams* p : {&p1, &p2}) {
    if (p->pad_top != p->pad_bottom || p->pad_left != p->pad_right)
      return error(StatusCode::kUnsupported) << "asymmetric pads";
  }
  std::vector<float> bias;
  FUSERT_RETURN_IF_ERROR(summed_bias(gl, c1, c2, p1.m, &bias));
  ConvEpilogue ep1, ep2;
  ep1.bias = true;
  ep1.z = true;
  size_t used = 0;
  if (!t.ep.steps.empty() && t.ep.steps[0].op == kern::EpOp::kRelu) {
    ep1.relu = true;
    used = 1;
  }
  auto rem = std::make_shared<Remainder>();
  FUSERT_RETURN_IF_ERROR(build_remainder(gl, t, used, shape, &p1, rem.get()));
  const bool direct = rem->kind == Remainder::kNone;
  const size_t plane = (static_cast<size_t>(shape_numel(shape)) + 63) / 64 * 64;  // 256-byte aligned halves
  // scratch: [0, plane) conv2's result; [plane, 2 plane) conv1's when a remainder follows
  gl.ds.scratch_bytes = (direct ? 1 : 2) * plane * sizeof(float);
  if (!direct) {
    for (Binding& b : rem->bp->inputs)
      if (b.kind == Binding::kScratch) b.offset = static_cast<int64_t>(plane);
  }
  gl.ds.library_calls = 2;
  auto state = std::make_shared<AnchorState>();
  state->bias = make_const(bias);
  const std::string what = grp.name;
  ValueId x1 = c1.inputs[0], w1 = c1.inputs[1], x2 = c2.inputs[0], w2 = c2.inputs[1], y = grp.outputs.at(0);
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_RETURN_IF_ERROR(state->bias->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->conv, CudnnConv::create(ctx, p1, ep1, what));
    FUSERT_ASSIGN_OR_RETURN(state->conv2, CudnnConv::create(ctx, p2, ep2, what));
    FUSERT_RETURN_IF_ERROR(ctx.reserve_workspace(state->conv->workspace_bytes()));
    return ctx.reserve_workspace(state->conv2->workspace_bytes());
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    FUSERT_RETURN_IF_ERROR(state->conv2->run(env.ctx, env.dev.f32(x2), env.dev.f32(w2), nullptr, nullptr, env.scratch));
    float* out = direct ? env.dev.f32(y) : env.scratch + plane;
    FUSERT_RETURN_IF_ERROR(
        state->conv->run(env.ctx, env.dev.f32(x1), env.dev.f32(w1), state->bias->get(), env.scratch, out));
    return run_remainder(env, *rem, y, what);
  };
  return Status();
}

// Cross group with two conv branches on one input (balanced by zero-padding the cheaper
// kernel): one cuDNN conv on the stacked weights [Ma + Mb, C, KH, KW] into scratch, then one
// generated kernel that applies each branch's chain to its half, adds them and applies the
// merge chain. When neither branch has a chain the two convs are one linear conv
// (re-parameterised weights Wa + Wb) and only the merge chain remains.
Status lower_branch_merge_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  const FusionGroup& grp = gl.grp;
  lowering::BranchMergeLayout L;
  FUSERT_RETURN_IF_ERROR(lowering::branch_merge_layout(g, grp, &L));
  const Node& ca = node_at(g, L.conv_a);
  const Node& cb = node_at(g, L.conv_b);
  const Node& jn = node_at(g, L.join);
  const Shape out = g.value(jn.outputs[0]).shape;
  const kern::ConvParams p = L.p;
  if (p.pad_top != p.pad_bottom || p.pad_left != p.pad_right)
    return error(StatusCode::kUnsupported) << "asymmetric pads";
  gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), ca.inputs.begin() + 1, ca.inputs.end());
  gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), cb.inputs.begin() + 1, cb.inputs.end());
  std::vector<float> w = std::move(L.w), bias = std::move(L.bias);
  lowering::EpilogueTemplate ep_merge, ep_a, ep_b;
  std::string why;
  if (!lowering::build_epilogue(g, L.post, jn.outputs[0], out, true, &ep_merge, &why) ||
      !lowering::build_epilogue(g, L.chain_a, ca.outputs[0], out, true, &ep_a, &why) ||
      !lowering::build_epilogue(g, L.chain_b, cb.outputs[0], out, true, &ep_b, &why)) {
    return error(StatusCode::kUnsupported) << why;
  }
  if (ep_merge.ep.tail != kern::EpTail::kNone || ep_a.ep.tail != kern::EpTail::kNone ||
      ep_b.ep.tail != kern::EpTail::kNone) {
    return error(StatusCode::kUnsupported) << "branch-merge with a pooling tail";
  }
  FUSERT_ASSIGN_OR_RETURN(auto bp, merge_program(g, L, ep_a, ep_b, ep_merge, out, grp.outputs.at(0)));
  const int64_t hw = out[2] * out[3];
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(gen_elementwise(bp->prog)));
  gl.ds.scratch_bytes = static_cast<size_t>(out[0] * p.m * hw) * sizeof(float);
  gl.ds.library_calls = 1;
  struct State {
    std::unique_ptr<CudnnConv> conv;
    ConstPtr w, b;
  };
  auto state = std::make_shared<State>();
  state->w = make_const(std::move(w));
  state->b = make_const(std::move(bias));
  ConvEpilogue cep;
  cep.bias = true;
  const ValueId x = ca.inputs[0];
  const std::string what = grp.name;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_RETURN_IF_ERROR(state->w->upload(what));
    FUSERT_RETURN_IF_ERROR(state->b->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->conv, CudnnConv::create(ctx, p, cep, what));
    return ctx.reserve_workspace(state->conv->workspace_bytes());
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    FUSERT_RETURN_IF_ERROR(
        state->conv->run(env.ctx, env.dev.f32(x), state->w->get(), state->b->get(), nullptr, env.scratch));
    return launch_program(env, k, *bp, what);
  };
  return Status();
}

}  // namespace fusert::cuda
