// CUDA lowering of multi-anchor groups: horizontal GEMMs (one cuBLASLt GEMM on concatenated
// weights, one multi-tensor epilogue kernel), horizontal 1x1 convs (one
// cuDNN conv on stacked weights, then one multi-tensor epilogue kernel scattering each
// member's channels), grouped GEMMs (same-shape Gemms on different inputs: one pointer-array
// batched cuBLAS GEMM plus one bias kernel) and grouped LayerNorms (one generated
// row-norm kernel, launched per member).
#include <algorithm>
#include <cstring>

#include "kernels/cuda/cublas_batched.h"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

bool weights_present(const Graph& g, const Node& n) {
  if (g.value(n.inputs[1]).data.empty()) return false;
  return n.inputs.size() < 3 || n.inputs[2] == kNoValue || !g.value(n.inputs[2]).data.empty();
}

}  // namespace

Status lower_horizontal_conv_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  auto chains = lowering::member_chains(g, gl.grp);
  const Node& first = node_at(g, chains[0][0]);
  cpu::ConvParams p = lowering::conv_params(g, first);
  if (p.pad_top != p.pad_bottom || p.pad_left != p.pad_right)
    return error(StatusCode::kUnsupported) << "asymmetric pads";
  const int64_t hw = p.oh * p.ow;
  std::vector<float> w, bias;
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (const auto& chain : chains) {
    const Node& n = node_at(g, chain[0]);
    if (!weights_present(g, n))
      return error(StatusCode::kUnsupported) << "horizontal member '" << n.name << "' needs weight initializers";
    const Tensor& wt = g.value(n.inputs[1]).data;
    gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), n.inputs.begin() + 1, n.inputs.end());
    w.insert(w.end(), wt.f32(), wt.f32() + wt.numel());
    const int64_t m = wt.shape()[0];
    for (int64_t i = 0; i < m; ++i)
      bias.push_back(n.inputs.size() > 2 && n.inputs[2] != kNoValue ? g.value(n.inputs[2]).data.f32()[i] : 0.f);
    offsets.push_back(total);
    total += m;
  }
  std::vector<std::shared_ptr<BoundProgram>> progs;
  for (size_t i = 0; i < chains.size(); ++i) {
    const Node& n = node_at(g, chains[i][0]);
    const Shape shape = g.value(n.outputs[0]).shape;
    lowering::EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chains[i].begin() + 1, chains[i].end());
    if (!lowering::build_epilogue(g, tail, n.outputs[0], shape, true, &t, &why) || t.ep.tail != cpu::EpTail::kNone) {
      return error(StatusCode::kUnsupported)
             << "horizontal conv member '" << n.name << "': " << (why.empty() ? "reducing tail" : why);
    }
    auto bp = std::make_shared<BoundProgram>();
    bp->prog.out_shape = shape;
    Binding sc;
    sc.kind = Binding::kScratch;
    sc.offset = offsets[i] * hw;
    bp->prog.loads.push_back({0, bp->add_binding(sc, {total * hw, hw, p.ow, 1})});
    bp->append_steps(g, t.ep.steps, t.step_operands, 0);
    bp->prog.stores.push_back({0, 0});
    Binding y;
    y.value = node_at(g, chains[i].back()).outputs[0];
    bp->outputs.push_back(y);
    if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
    progs.push_back(bp);
  }
  auto multi = std::make_shared<MultiLaunch>();
  multi->progs = progs;
  FUSERT_RETURN_IF_ERROR(multi->build(gl));
  p.m = total;
  gl.ds.scratch_bytes = static_cast<size_t>(p.n * total * hw) * sizeof(float);
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
// scattering its columns to the member's output (up to FZ_MAX_MEMBERS members per launch).
Status lower_horizontal_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  auto chains = lowering::member_chains(g, gl.grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kConv) return lower_horizontal_conv_cuda(gl);
  if (first.op != OpKind::kGemm)
    return error(StatusCode::kUnsupported) << "horizontal group of " << op_name(first.op) << " on CUDA";
  const int64_t m = g.value(first.outputs[0]).shape[0], k = g.value(first.inputs[0]).shape[1];
  std::vector<float> w_cat, b_cat;
  int64_t total = 0;
  std::vector<std::pair<int64_t, int64_t>> cols;  // (offset, width) per member
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
    w_cat.insert(w_cat.end(), w.begin(), w.end());
    b_cat.insert(b_cat.end(), b.begin(), b.end());
    cols.push_back({total, width});
    total += width;
  }
  // Member epilogues as programs over [M, width] reading the scratch columns; members with a
  // LayerNorm tail get a row-norm kernel each.
  std::vector<std::shared_ptr<BoundProgram>> progs;
  struct RowMember {
    std::shared_ptr<BoundProgram> bp;
    int kernel;
    int block;
    size_t shared;
    int64_t width;
    ValueId y;
  };
  std::vector<RowMember> row_members;
  for (size_t i = 0; i < chains.size(); ++i) {
    const auto& chain = chains[i];
    const Node& n = node_at(g, chain[0]);
    lowering::EpilogueTemplate t;
    std::string why;
    std::vector<int> tail(chain.begin() + 1, chain.end());
    const Shape shape = {m, cols[i].second};
    if (!lowering::build_epilogue(g, tail, n.outputs[0], shape, false, &t, &why))
      return error(StatusCode::kUnsupported) << why;
    if (t.ep.tail == cpu::EpTail::kLayerNorm) {
      RowMember rm;
      rm.bp = std::make_shared<BoundProgram>();
      rm.width = cols[i].second;
      rm.y = node_at(g, chain.back()).outputs[0];
      RowNormSpec spec;
      spec.eps = t.ep.ln_epsilon;
      Binding sc;
      sc.kind = Binding::kScratch;
      sc.offset = cols[i].first;
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
      row_members.push_back(rm);
      continue;
    }
    if (t.ep.tail != cpu::EpTail::kNone) return error(StatusCode::kUnsupported) << "horizontal member tail";
    auto bp = std::make_shared<BoundProgram>();
    bp->prog.out_shape = shape;
    Binding s;
    s.kind = Binding::kScratch;
    s.offset = cols[i].first;
    bp->prog.loads.push_back({0, bp->add_binding(s, {total, 1})});
    bp->append_steps(g, t.ep.steps, t.step_operands, 0);
    bp->prog.stores.push_back({0, 0});
    Binding y;
    y.value = node_at(g, chain.back()).outputs[0];
    bp->outputs.push_back(y);
    if (bp->inputs.size() > FZ_MAX_INPUTS) return error(StatusCode::kUnsupported) << "too many epilogue operands";
    progs.push_back(bp);
  }
  auto multi = std::make_shared<MultiLaunch>();
  multi->progs = progs;
  FUSERT_RETURN_IF_ERROR(multi->build(gl));
  GemmDesc d;
  d.m = m;
  d.n = total;
  d.k = k;
  d.trans_b = true;
  d.bias = true;
  gl.ds.scratch_bytes = static_cast<size_t>(m * total) * sizeof(float);
  gl.ds.library_calls = 1;
  struct State {
    std::unique_ptr<LtGemm> gemm;
    ConstPtr w, b;
  };
  auto state = std::make_shared<State>();
  state->w = make_const(std::move(w_cat));
  state->b = make_const(std::move(b_cat));
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

Status lower_grouped_cuda(GroupLowering& gl) {
  const Graph& g = gl.g;
  auto chains = lowering::member_chains(g, gl.grp);
  const Node& first = node_at(g, chains[0][0]);
  const std::string what = gl.grp.name;
  if (first.op == OpKind::kLayerNormalization) {  // same-shape LayerNorms: one kernel, a launch each
    const Shape shape = g.value(first.inputs[0]).shape;
    const int64_t inner = shape.back(), outer = shape_numel(shape) / inner;
    RowNormSpec spec;
    spec.eps = static_cast<float>(first.attr_f("epsilon"));
    spec.scale_input = 1;
    const bool shift = first.inputs.size() > 2 && first.inputs[2] != kNoValue;
    if (shift) spec.shift_input = 2;
    spec.pre.stores.push_back({0, 0});
    spec.post.stores.push_back({0, 0});
    std::vector<std::shared_ptr<BoundProgram>> members;
    std::vector<ValueId> ys;
    for (int ni : gl.grp.nodes) {
      const Node& n = node_at(g, ni);
      const bool has_shift = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
      if (n.op != OpKind::kLayerNormalization || g.value(n.inputs[0]).shape != shape || has_shift != shift ||
          static_cast<float>(n.attr_f("epsilon")) != spec.eps) {
        return error(StatusCode::kUnsupported) << "grouped LayerNorm members differ";
      }
      auto bp = std::make_shared<BoundProgram>();
      Binding b;
      b.value = n.inputs[0];
      bp->add_binding(b, {inner, 1});
      b.value = n.inputs[1];
      bp->add_binding(b, {0, 1});
      if (shift) {
        b.value = n.inputs[2];
        bp->add_binding(b, {0, 1});
      }
      members.push_back(bp);
      ys.push_back(n.outputs[0]);
    }
    if (row_norm_shared_bytes(inner) > kMaxDynamicShared)
      return error(StatusCode::kUnsupported) << "LayerNorm row exceeds shared memory";
    KernelSource src = gen_row_norm(spec);
    FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
    for (size_t extra = 1; extra < members.size(); ++extra) gl.ds.kernels.push_back(k);  // one launch per member
    const int block = src.block;
    const size_t shared = row_norm_shared_bytes(inner);
    gl.ds.run = [=](const RunEnv& env) -> Status {
      for (size_t i = 0; i < members.size(); ++i) {
        FzRowArgs a = row_args(*members[i], outer, inner, env, env.dev.f32(ys[i]));
        FUSERT_RETURN_IF_ERROR(env.ctx.launch(env.kernels[static_cast<size_t>(k)], dim3(static_cast<unsigned>(outer)),
                                              dim3(block), shared, &a, what));
      }
      return Status();
    };
    return Status();
  }
  if (first.op != OpKind::kGemm) return error(StatusCode::kUnsupported) << "grouped " << op_name(first.op);
  // Same-shape Gemms on different inputs: one pointer-array batched cuBLAS GEMM, then one
  // multi-tensor kernel adding each member's bias in place (up to FZ_MAX_MEMBERS per launch).
  const int64_t m = g.value(first.outputs[0]).shape[0], n = g.value(first.outputs[0]).shape[1],
                k = g.value(first.inputs[0]).shape[1];
  std::vector<float> w_cat, b_cat;
  std::vector<ValueId> as, ys;
  for (const auto& chain : chains) {
    const Node& nd = node_at(g, chain[0]);
    if (chain.size() != 1 || !weights_present(g, nd) || nd.attr_i("transA") != 0 || !lowering::per_column_bias(g, nd)) {
      return error(StatusCode::kUnsupported) << "grouped member '" << nd.name << "'";
    }
    gl.ds.skip_weights.insert(gl.ds.skip_weights.end(), nd.inputs.begin() + 1, nd.inputs.end());
    std::vector<float> w = lowering::weight_nk(g, nd), b = lowering::bias_n(g, nd, n);
    w_cat.insert(w_cat.end(), w.begin(), w.end());
    b_cat.insert(b_cat.end(), b.begin(), b.end());
    as.push_back(nd.inputs[0]);
    ys.push_back(nd.outputs[0]);
  }
  struct State {
    ConstPtr w, b;
    const float** ptrs = nullptr;         ///< device: a[batch], w[batch], y[batch]
    std::vector<const float*> host_ptrs;  ///< what `ptrs` holds (uploaded when it changes)
    ~State() {
      if (ptrs) cudaFree(ptrs);
    }
  };
  auto state = std::make_shared<State>();
  state->w = make_const(std::move(w_cat));
  state->b = make_const(std::move(b_cat));
  const int batch = static_cast<int>(as.size());
  // Bias programs: y = y + b_i[col], in place over [M, N].
  std::vector<std::shared_ptr<BoundProgram>> progs;
  for (int i = 0; i < batch; ++i) {
    auto bp = std::make_shared<BoundProgram>();
    bp->prog.out_shape = {m, n};
    Binding y;
    y.value = ys[static_cast<size_t>(i)];
    bp->prog.loads.push_back({0, bp->add_binding(y, {n, 1})});
    Binding bias;
    bias.kind = Binding::kConstant;
    bias.constant = state->b;
    bias.offset = i * n;
    cpu::ElementwiseInstr add;
    add.op = cpu::EpOp::kAddTensor;
    add.input = bp->add_binding(bias, {0, 1});
    bp->prog.code.push_back(add);
    bp->prog.stores.push_back({0, 0});
    bp->outputs.push_back(y);
    progs.push_back(bp);
  }
  auto multi = std::make_shared<MultiLaunch>();
  multi->progs = progs;
  FUSERT_RETURN_IF_ERROR(multi->build(gl));
  gl.ds.library_calls = 1;
  gl.ds.prepare = [=](Context&) -> Status {
    FUSERT_RETURN_IF_ERROR(state->w->upload(what));
    FUSERT_RETURN_IF_ERROR(state->b->upload(what));
    if (!state->ptrs)
      CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&state->ptrs), 3 * static_cast<size_t>(batch) * sizeof(float*)),
                 what);
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    // The arena does not move during an executor's life: the pointer arrays are uploaded on the
    // first (eager) run and only again if a buffer moved, never inside a CUDA Graph capture.
    std::vector<const float*> ptrs;
    for (int i = 0; i < batch; ++i) ptrs.push_back(env.dev.f32(as[static_cast<size_t>(i)]));
    for (int i = 0; i < batch; ++i) ptrs.push_back(state->w->get() + static_cast<int64_t>(i) * n * k);
    for (int i = 0; i < batch; ++i) ptrs.push_back(env.dev.f32(ys[static_cast<size_t>(i)]));
    if (ptrs != state->host_ptrs) {  // stream-ordered (a legacy-stream cudaMemcpy would not be)
      state->host_ptrs = ptrs;
      CUDA_CHECK(cudaMemcpyAsync(state->ptrs, state->host_ptrs.data(), ptrs.size() * sizeof(float*),
                                 cudaMemcpyHostToDevice, env.ctx.stream()),
                 what);
    }
    FUSERT_RETURN_IF_ERROR(gemm_batched_nt(env.ctx, m, n, k, state->ptrs, state->ptrs + batch,
                                           const_cast<float* const*>(state->ptrs + 2 * batch), batch, what));
    FUSERT_RETURN_IF_ERROR(multi->run(env, what));
    return Status();
  };
  return Status();
}

}  // namespace fusert::cuda
