// CUDA lowering of horizontal groups (members sharing one input): Gemms as one cuBLASLt GEMM on
// concatenated weights plus one multi-tensor epilogue kernel; 1x1 convs as one cuDNN conv on
// stacked weights, then one multi-tensor epilogue kernel scattering each member's channels.
#include <algorithm>
#include <cstring>

#include "kernels/cuda/cublas_batched.h"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

// Concatenated weights of the Gemms of a horizontal group: [sum N_i, K] (each member's B as
// [N_i, K], alpha folded in) and biases [sum N_i]; the column range of each member.
struct ConcatGemm {
  std::vector<float> w, b;
  std::vector<std::pair<int64_t, int64_t>> cols;  ///< (offset, width) per member
  int64_t total = 0;
};

Status concat_gemms(GroupLowering& gl, const std::vector<std::vector<int>>& chains, ConcatGemm* cg) {
  const Graph& g = gl.g;
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    if (n.attr_i("transA") != 0 || g.value(n.inputs[1]).data.empty() ||
        (n.inputs.size() > 2 && n.inputs[2] != kNoValue && g.value(n.inputs[2]).data.empty())) {
      return error(StatusCode::kUnsupported) << "horizontal member '" << n.name << "' needs weight initializers";
    }
    if (!lowering::per_column_bias(g, n))
      return error(StatusCode::kUnsupported)
             << "horizontal member '" << n.name << "' has a bias that is not per column";
    const int64_t width = g.value(n.outputs[0]).shape[1];
    gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), n.inputs.begin() + 1, n.inputs.end());
    std::vector<float> w = lowering::weight_nk(g, n), b = lowering::bias_n(g, n, width);
    cg->w.insert(cg->w.end(), w.begin(), w.end());
    cg->b.insert(cg->b.end(), b.begin(), b.end());
    cg->cols.push_back({cg->total, width});
    cg->total += width;
  }
  return Status();
}

// A member whose epilogue ends in LayerNorm: its own generated row-norm kernel.
struct RowMember {
  std::shared_ptr<BoundProgram> bp;
  int kernel = -1;
  int block = 0;
  size_t shared = 0;
  int64_t width = 0;
  ValueId y = kNoValue;
};

// The row-norm kernel of member `t` reading its columns [offset, offset + width) of the
// scratch [M, total].
Result<RowMember> row_member(GroupLowering& gl, const lowering::EpilogueTemplate& t, const Shape& shape, int64_t offset,
                             int64_t total, ValueId y) {
  const Graph& g = gl.g;
  RowMember rm;
  rm.bp = std::make_shared<BoundProgram>();
  rm.width = shape[1];
  rm.y = y;
  RowNormSpec spec;
  spec.eps = t.ep.ln_epsilon;
  Binding sc;
  sc.kind = Binding::kScratch;
  sc.offset = offset;
  spec.pre.loads.push_back({0, rm.bp->add_binding(sc, {total, 1})});
  if (!append_row_steps(g, *rm.bp, t.ep.steps, t.step_operands, shape, &spec.pre) ||
      !append_row_steps(g, *rm.bp, t.ep.post, t.post_operands, shape, &spec.post) ||
      !add_row_input(g, *rm.bp, t.ln_scale, shape, &spec.scale_input) ||
      (t.ln_shift != kNoValue && !add_row_input(g, *rm.bp, t.ln_shift, shape, &spec.shift_input))) {
    return error(StatusCode::kUnsupported) << "horizontal member LayerNorm operand is not row-indexable";
  }
  spec.pre.stores.push_back({0, 0});
  spec.post.stores.push_back({0, 0});
  if (rm.bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
  if (row_norm_shared_bytes(rm.width) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "LayerNorm row exceeds shared memory";
  KernelSource src = gen_row_norm(spec);
  FUSERT_ASSIGN_OR_RETURN(rm.kernel, gl.kernel(src));
  rm.block = src.block;
  rm.shared = row_norm_shared_bytes(rm.width);
  return rm;
}

// The elementwise program of member `t` over its output `shape`, reading its part of the
// stacked result in scratch at `offset` with `strides`.
Result<std::shared_ptr<BoundProgram>> member_program(const Graph& g, const lowering::EpilogueTemplate& t,
                                                     const Shape& shape, int64_t offset,
                                                     const std::vector<int64_t>& strides, ValueId y) {
  if (t.ep.tail != kern::EpTail::kNone) return error(StatusCode::kUnsupported) << "horizontal member tail";
  auto bp = std::make_shared<BoundProgram>();
  bp->prog.out_shape = shape;
  Binding s;
  s.kind = Binding::kScratch;
  s.offset = offset;
  bp->prog.loads.push_back({0, bp->add_binding(s, strides)});
  bp->append_steps(g, t.ep.steps, t.step_operands, 0);
  bp->prog.stores.push_back({0, 0});
  Binding out;
  out.value = y;
  bp->outputs.push_back(out);
  if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
  return bp;
}

// Stacked weights of the 1x1 convs of a horizontal group: [sum M_i, C, 1, 1] and biases
// [sum M_i]; the first output channel of each member.
struct StackedConv {
  std::vector<float> w, bias;
  std::vector<int64_t> offsets;
  int64_t total = 0;
};

Status stack_convs(GroupLowering& gl, const std::vector<std::vector<int>>& chains, StackedConv* sc) {
  const Graph& g = gl.g;
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    if (!weights_present(g, n))
      return error(StatusCode::kUnsupported) << "horizontal member '" << n.name << "' needs weight initializers";
    const Tensor& wt = g.value(n.inputs[1]).data;
    gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), n.inputs.begin() + 1, n.inputs.end());
    sc->w.insert(sc->w.end(), wt.f32(), wt.f32() + wt.numel());
    const int64_t m = wt.shape()[0];
    for (int64_t i = 0; i < m; ++i)
      sc->bias.push_back(n.inputs.size() > 2 && n.inputs[2] != kNoValue ? g.value(n.inputs[2]).data.f32()[i] : 0.f);
    sc->offsets.push_back(sc->total);
    sc->total += m;
  }
  return Status();
}

}  // namespace

Status lower_horizontal_conv_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  auto chains = lowering::member_chains(g, gl.grp);
  const Node& first = node_at(g, chains[0][0]);
  kern::ConvParams p = lowering::conv_params(g, first);
  if (p.pad_top != p.pad_bottom || p.pad_left != p.pad_right)
    return error(StatusCode::kUnsupported) << "asymmetric pads";
  const int64_t hw = p.oh * p.ow;
  StackedConv sc;
  FUSERT_RETURN_IF_ERROR(stack_convs(gl, chains, &sc));
  const int64_t total = sc.total;
  auto multi = std::make_shared<MultiLaunch>();
  for (size_t i = 0; i < chains.size(); ++i) {
    const Node& n = node_at(g, chains[i][0]);
    const Shape shape = g.value(n.outputs[0]).shape;
    lowering::EpilogueTemplate t;
    std::string why;
    if (!lowering::build_epilogue(g, lowering::tail_of_chain(chains[i]), n.outputs[0], shape, true, &t, &why) ||
        t.ep.tail != kern::EpTail::kNone) {
      return error(StatusCode::kUnsupported)
             << "horizontal conv member '" << n.name << "': " << (why.empty() ? "reducing tail" : why);
    }
    FUSERT_ASSIGN_OR_RETURN(auto bp, member_program(g, t, shape, sc.offsets[i] * hw, {total * hw, hw, p.ow, 1},
                                                    node_at(g, chains[i].back()).outputs[0]));
    multi->progs.push_back(bp);
  }
  FUSERT_RETURN_IF_ERROR(multi->build(gl));
  p.m = total;
  gl.ds.scratch_bytes = static_cast<size_t>(p.n * total * hw) * sizeof(float);
  gl.ds.library_calls = 1;
  struct State {
    std::unique_ptr<CudnnConv> conv;
    ConstPtr w, b;
  };
  auto state = std::make_shared<State>();
  state->w = make_const(std::move(sc.w));
  state->b = make_const(std::move(sc.bias));
  ConvEpilogue cep;
  cep.bias = true;
  const ValueId x = first.inputs[0];
  const std::string what = gl.grp.name;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_RETURN_IF_ERROR(state->w->upload(what));
    FUSERT_RETURN_IF_ERROR(state->b->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->conv, CudnnConv::create(ctx, p, cep, what));
    return ctx.reserve_workspace(state->conv->workspace_bytes());
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    FUSERT_RETURN_IF_ERROR(
        state->conv->run(env.ctx, env.dev.f32(x), state->w->get(), state->b->get(), nullptr, env.scratch));
    FUSERT_RETURN_IF_ERROR(multi->run(env, what));
    return Status();
  };
  return Status();
}

// Gemms sharing one input: one cuBLASLt GEMM on the concatenated weights into scratch
// [M, sum N_i], then one generated multi-tensor kernel applies each member's epilogue while
// scattering its columns to the member's output (up to FZ_MAX_MEMBERS members per launch);
// members with a LayerNorm tail get a row-norm kernel each.
Status lower_horizontal_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  auto chains = lowering::member_chains(g, gl.grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kConv) return lower_horizontal_conv_cuda(gl);
  if (first.op != OpKind::kGemm)
    return error(StatusCode::kUnsupported) << "horizontal group of " << op_name(first.op) << " on CUDA";
  const int64_t m = g.value(first.outputs[0]).shape[0], k = g.value(first.inputs[0]).shape[1];
  ConcatGemm cg;
  FUSERT_RETURN_IF_ERROR(concat_gemms(gl, chains, &cg));
  auto multi = std::make_shared<MultiLaunch>();
  std::vector<RowMember> row_members;
  for (size_t i = 0; i < chains.size(); ++i) {
    const Node& n = node_at(g, chains[i][0]);
    const ValueId y = node_at(g, chains[i].back()).outputs[0];
    lowering::EpilogueTemplate t;
    std::string why;
    const Shape shape = {m, cg.cols[i].second};
    if (!lowering::build_epilogue(g, lowering::tail_of_chain(chains[i]), n.outputs[0], shape, false, &t, &why))
      return error(StatusCode::kUnsupported) << why;
    if (t.ep.tail == kern::EpTail::kLayerNorm) {
      FUSERT_ASSIGN_OR_RETURN(RowMember rm, row_member(gl, t, shape, cg.cols[i].first, cg.total, y));
      row_members.push_back(rm);
    } else {
      FUSERT_ASSIGN_OR_RETURN(auto bp, member_program(g, t, shape, cg.cols[i].first, {cg.total, 1}, y));
      multi->progs.push_back(bp);
    }
  }
  FUSERT_RETURN_IF_ERROR(multi->build(gl));
  GemmDesc d;
  d.m = m;
  d.n = cg.total;
  d.k = k;
  d.trans_b = true;
  d.bias = true;
  gl.ds.scratch_bytes = static_cast<size_t>(m * cg.total) * sizeof(float);
  gl.ds.library_calls = 1;
  struct State {
    std::unique_ptr<LtGemm> gemm;
    ConstPtr w, b;
  };
  auto state = std::make_shared<State>();
  state->w = make_const(std::move(cg.w));
  state->b = make_const(std::move(cg.b));
  const ValueId a = first.inputs[0];
  const std::string what = gl.grp.name;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_RETURN_IF_ERROR(state->w->upload(what));
    FUSERT_RETURN_IF_ERROR(state->b->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->gemm, LtGemm::create(ctx, d, what));
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    FUSERT_RETURN_IF_ERROR(
        state->gemm->run(env.ctx, env.dev.f32(a), state->w->get(), state->b->get(), nullptr, env.scratch));
    FUSERT_RETURN_IF_ERROR(multi->run(env, what));
    for (const RowMember& rm : row_members) {
      FzRowArgs ra = row_args(*rm.bp, m, rm.width, env, env.dev.f32(rm.y));
      FUSERT_RETURN_IF_ERROR(env.ctx.launch(env.kernels[static_cast<size_t>(rm.kernel)], dim3(static_cast<unsigned>(m)),
                                            dim3(rm.block), rm.shared, &ra, what));
    }
    return Status();
  };
  return Status();
}

}  // namespace fusert::cuda
