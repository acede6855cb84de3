// CUDA lowering of grouped groups (same-shape members on different inputs): Gemms as one
// pointer-array batched cuBLAS GEMM plus one bias kernel; LayerNorms as one generated row-norm
// kernel launched per member.
#include <algorithm>
#include <cstring>

#include "kernels/cuda/cublas_batched.h"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

// Same-shape LayerNorms on different inputs: one generated row-norm kernel, launched per member.
Status lower_grouped_row_norm_cuda(GroupLowering& gl, const Node& first) {
  const Graph& g = gl.g;
  const std::string what = gl.grp.name;
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

// Bias programs of a grouped GEMM: y_i = y_i + b_i[col], in place over [M, N], b_i at offset
// i * N of the concatenated constant.
std::vector<std::shared_ptr<BoundProgram>> bias_programs(const std::vector<ValueId>& ys, int64_t m, int64_t n,
                                                         const ConstPtr& b) {
  std::vector<std::shared_ptr<BoundProgram>> progs;
  for (size_t i = 0; i < ys.size(); ++i) {
    auto bp = std::make_shared<BoundProgram>();
    bp->prog.out_shape = {m, n};
    Binding y;
    y.value = ys[i];
    bp->prog.loads.push_back({0, bp->add_binding(y, {n, 1})});
    Binding bias;
    bias.kind = Binding::kConstant;
    bias.constant = b;
    bias.offset = static_cast<int64_t>(i) * n;
    kern::ElementwiseInstr add;
    add.op = kern::EpOp::kAddTensor;
    add.input = bp->add_binding(bias, {0, 1});
    bp->prog.code.push_back(add);
    bp->prog.stores.push_back({0, 0});
    bp->outputs.push_back(y);
    progs.push_back(bp);
  }
  return progs;
}

// Same-shape Gemms on different inputs: one pointer-array batched cuBLAS GEMM, then one
// multi-tensor kernel adding each member's bias in place (up to FZ_MAX_MEMBERS per launch).
Status lower_grouped_gemm_cuda(GroupLowering& gl, const std::vector<std::vector<int>>& chains) {
  const Graph& g = gl.g;
  const Node& first = node_at(g, chains[0][0]);
  const std::string what = gl.grp.name;
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
  auto multi = std::make_shared<MultiLaunch>();
  multi->progs = bias_programs(ys, m, n, state->b);
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
    return multi->run(env, what);
  };
  return Status();
}

}  // namespace

Status lower_grouped_cuda(GroupLowering& gl) {
  const auto chains = lowering::member_chains(gl.g, gl.grp);
  const Node& first = node_at(gl.g, chains[0][0]);
  if (first.op == OpKind::kLayerNormalization) return lower_grouped_row_norm_cuda(gl, first);
  if (first.op == OpKind::kGemm) return lower_grouped_gemm_cuda(gl, chains);
  return error(StatusCode::kUnsupported) << "grouped " << op_name(first.op);
}

}  // namespace fusert::cuda
