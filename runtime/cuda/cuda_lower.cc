// CUDA lowering driver and the generated-kernel groups: elementwise chains, row norms with
// prologue/epilogue, attention. Anchors live in cuda_lower_anchor.cc, single ops in
// cuda_lower_ops.cc.
#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

DeviceConstant::~DeviceConstant() {
  if (dev_) cudaFree(dev_);
}

Status DeviceConstant::upload(const std::string& what) {
  if (dev_ || host_.empty()) return Status();
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev_), host_.size() * sizeof(float)), what);
  CUDA_CHECK(cudaMemcpy(dev_, host_.data(), host_.size() * sizeof(float), cudaMemcpyHostToDevice), what);
  return Status();
}

Result<int> GroupLowering::kernel(const KernelSource& src) {
  FUSERT_ASSIGN_OR_RETURN(int k, table.add(src, grp.name));
  ds.kernels.push_back(k);
  return k;
}

Status MultiLaunch::build(GroupLowering& gl) {
  for (size_t i = 0; i < progs.size(); i += FZ_MAX_MEMBERS) {
    std::vector<cpu::ElementwiseProgram> part;
    for (size_t j = i; j < progs.size() && j < i + FZ_MAX_MEMBERS; ++j) part.push_back(progs[j]->prog);
    KernelSource src = gen_elementwise_multi(part);
    FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
    kernels.push_back(k);
    blocks.push_back(src.block);
  }
  return Status();
}

Status MultiLaunch::run(const RunEnv& env, const std::string& what) const {
  for (size_t l = 0; l < kernels.size(); ++l) {
    FzMultiEwArgs args;
    std::memset(&args, 0, sizeof args);
    int64_t most = 0;
    size_t members = 0;
    for (size_t j = l * FZ_MAX_MEMBERS; j < progs.size() && j < (l + 1) * FZ_MAX_MEMBERS; ++j, ++members) {
      args.m[members] = ew_args(*progs[j], env);
      most = std::max<int64_t>(most, args.m[members].numel);
    }
    dim3 grid(grid_1d(most, blocks[l]), static_cast<unsigned>(members));
    FUSERT_RETURN_IF_ERROR(
        env.ctx.launch(env.kernels[static_cast<size_t>(kernels[l])], grid, dim3(blocks[l]), 0, &args, what));
  }
  return Status();
}

bool row_strides(const Shape& v_shape, const Shape& shape, std::vector<int64_t>* strides) {
  if (v_shape.size() > shape.size() || shape.empty()) return false;
  Shape v = v_shape;
  v.insert(v.begin(), shape.size() - v.size(), 1);
  const int64_t inner = shape.back();
  const bool lead_ones = std::all_of(v.begin(), v.end() - 1, [](int64_t d) { return d == 1; });
  const bool lead_equal = std::equal(v.begin(), v.end() - 1, shape.begin());
  if (v == shape)
    *strides = {inner, 1};
  else if (shape_numel(v) == 1)
    *strides = {0, 0};
  else if (lead_ones && v.back() == inner)
    *strides = {0, 1};
  else if (lead_equal && v.back() == 1)
    *strides = {1, 0};
  else
    return false;
  return true;
}

FzRowArgs row_args(const BoundProgram& bp, int64_t outer, int64_t inner, const RunEnv& env, float* out) {
  FzRowArgs a;
  std::memset(&a, 0, sizeof a);
  a.outer = outer;
  a.inner = inner;
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    a.in_strides[i][0] = bp.prog.input_strides[i][0];
    a.in_strides[i][1] = bp.prog.input_strides[i][1];
    a.in[i] = bind_in(bp.inputs[i], env);
  }
  a.out = out;
  return a;
}

// Adds a row-program input with [row, col] strides; false if it is not row-indexable.
bool add_row_input(const Graph& g, BoundProgram& bp, ValueId v, const Shape& shape, int* index) {
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    if (bp.inputs[i].kind == Binding::kValue && bp.inputs[i].value == v) {
      *index = static_cast<int>(i);
      return true;
    }
  }
  std::vector<int64_t> st;
  if (!row_strides(g.value(v).shape, shape, &st)) return false;
  Binding b;
  b.value = v;
  *index = bp.add_binding(b, st);
  return true;
}

// Appends epilogue steps to a row program (operands row-indexed); false if one is not.
bool append_row_steps(const Graph& g, BoundProgram& bp, const std::vector<cpu::EpilogueStep>& steps,
                      const std::vector<ValueId>& operands, const Shape& shape, cpu::ElementwiseProgram* prog) {
  for (size_t i = 0; i < steps.size(); ++i) {
    cpu::ElementwiseInstr in;
    in.op = steps[i].op;
    in.a = steps[i].a;
    in.b = steps[i].b;
    in.operand_first = steps[i].operand_first;
    if (operands[i] != kNoValue && !add_row_input(g, bp, operands[i], shape, &in.input)) return false;
    prog->code.push_back(in);
  }
  return true;
}

namespace {

const Node& node_at(const Graph& g, int ni) { return g.nodes[static_cast<size_t>(ni)]; }
ValueId opt_input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

}  // namespace

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

// softmax(scale * Q K^T + mask) V with the head reshapes/transposes folded into indexing.
Status lower_attention_cuda(GroupLowering& gl) {
  if (!gl.grp.attention) {
    return error(StatusCode::kInternal) << "attention group " << gl.grp.name << " without its decoded pattern";
  }
  const AttentionMatch& m = *gl.grp.attention;  // decoded once, by the planner
  if (attention_shared_bytes(m.seq, m.head_dim) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "sequence too long for shared memory";
  AttentionSpec spec;
  spec.head_dim = m.head_dim;
  spec.has_mask = m.mask != kNoValue;
  KernelSource src = gen_attention(spec);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
  const size_t shared = attention_shared_bytes(m.seq, m.head_dim);
  const int block = src.block;
  const std::string what = gl.grp.name;
  gl.ds.run = [=](const RunEnv& env) {
    FzAttnArgs a;
    std::memset(&a, 0, sizeof a);
    a.batch = m.batch;
    a.heads = m.heads;
    a.seq = m.seq;
    a.q_stride = a.k_stride = a.v_stride = m.heads * m.head_dim;
    a.mask_b_stride = m.mask_b_stride;
    a.mask_i_stride = m.mask_i_stride;
    a.scale = m.scale;
    a.q = env.dev.f32(m.q);
    a.k = env.dev.f32(m.k);
    a.v = env.dev.f32(m.v);
    a.mask = m.mask == kNoValue ? nullptr : env.dev.f32(m.mask);
    a.y = env.dev.f32(m.out);
    dim3 grid(static_cast<unsigned>(m.seq), static_cast<unsigned>(m.heads), static_cast<unsigned>(m.batch));
    return env.ctx.launch(env.kernels[static_cast<size_t>(k)], grid, dim3(block), shared, &a, what);
  };
  return Status();
}

namespace {

Status lower_group(GroupLowering& gl) {
  switch (gl.grp.kind) {
    case GroupKind::kSingle:
      return lower_single_cuda(gl);
    case GroupKind::kAnchorEpilogue:
    case GroupKind::kGemmLayerNorm:
      return lower_anchor_cuda(gl);
    case GroupKind::kElementwise:
      return lower_elementwise_cuda(gl);
    case GroupKind::kRowNorm:
      return lower_row_norm_cuda(gl);
    case GroupKind::kAttention:
      return lower_attention_cuda(gl);
    case GroupKind::kConvSum:
      return lower_conv_sum_cuda(gl);
    case GroupKind::kHorizontalGemm:
      return lower_horizontal_cuda(gl);
    case GroupKind::kBranchMerge:
      return lower_branch_merge_cuda(gl);
    case GroupKind::kGroupedGemm:
    case GroupKind::kGroupedRowNorm:
      return lower_grouped_cuda(gl);
  }
  return error(StatusCode::kInternal) << "unknown group kind";
}

}  // namespace

Result<CudaPlan> lower_plan_cuda(const Graph& g, const FusionPlan& plan) {
  CudaPlan cp;
  KernelTable table(&cp);
  for (const FusionGroup* grp : plan.kernel_groups()) {
    // The step's buffers (for memory planning). A fused group's CPU kernel is built only if it
    // falls back to the host: its CPU lowering may copy weights (concatenated, stacked).
    Step s;
    if (grp->kind == GroupKind::kSingle) {
      FUSERT_ASSIGN_OR_RETURN(s, lower_group_cpu(g, *grp));  // also decides views (alias steps)
    } else {
      s = lowering::group_step(g, *grp, group_kind_name(grp->kind));
    }
    DeviceStep ds;
    ds.what = grp->name;
    if (s.alias_of == kNoValue && !grp->host_reason.empty()) {  // the planner's capability check said so
      ds.host = true;
      ds.host_reason = grp->host_reason;
    } else if (s.alias_of == kNoValue) {
      GroupLowering gl{g, *grp, table, ds};
      Status st = lower_group(gl);
      if (st.code() == StatusCode::kUnsupported) {  // capability and lowering disagree: a bug
        return error(StatusCode::kInternal)
               << "CUDA lowering of group " << grp->name << ": the capability check accepted it, "
               << "but lowering refused it: " << st.message();
      } else if (!st.ok()) {
        return error(st.code()) << "CUDA lowering of group " << grp->name << ": " << st.message();
      }
      int regs = 0, spill = 0;
      for (int k : ds.kernels) {
        regs = std::max(regs, cp.kernels[static_cast<size_t>(k)].bin.registers);
        spill += cp.kernels[static_cast<size_t>(k)].bin.spill_bytes();
      }
      if (!ds.kernels.empty()) cp.group_registers[grp->id] = {regs, spill};
    }
    for (ValueId v : s.outputs) {
      const Value& val = g.value(v);
      cp.alias_scratch_bytes =
          std::max(cp.alias_scratch_bytes, static_cast<size_t>(shape_numel(val.shape)) * dtype_size(val.dtype));
    }
    cp.steps.push_back(std::move(s));
    cp.dsteps.push_back(std::move(ds));
  }
  return cp;
}

FusionDecision check_capability(const Graph& g, const FusionGroup& candidate) {
  if (candidate.kind == GroupKind::kSingle) {  // a view (Reshape, Flatten, ...) needs no launch
    auto s = lower_group_cpu(g, candidate);
    if (s.ok() && s->alias_of != kNoValue) return FusionDecision::yes();
  }
  CudaPlan cp;
  KernelTable table(&cp, false);
  DeviceStep ds;
  GroupLowering gl{g, candidate, table, ds};
  Status st = lower_group(gl);
  if (st.ok()) return FusionDecision::yes();
  return FusionDecision::no("backend", st.message());
}

bool probe_registers(const Graph& g, GroupKind kind, const std::vector<int>& nodes, int* registers, int* spill_bytes,
                     std::string* kernel) {
  FusionGroup grp;
  grp.kind = kind;
  grp.nodes = nodes;
  grp.outputs = group_outputs(g, nodes);
  // The probe's candidate keeps its last value in memory; it is always the chain's output.
  ValueId last = node_at(g, nodes.back()).outputs[0];
  if (std::find(grp.outputs.begin(), grp.outputs.end(), last) == grp.outputs.end()) grp.outputs.push_back(last);
  grp.name = "probe";
  CudaPlan cp;
  KernelTable table(&cp);
  DeviceStep ds;
  GroupLowering gl{g, grp, table, ds};
  Status st = lower_group(gl);
  if (!st.ok()) {  // the grown candidate cannot be generated: report it, so the chain stops here
    *registers = -1;
    *spill_bytes = 0;
    *kernel = st.message();
    return true;
  }
  if (ds.kernels.empty()) return false;
  *registers = 0;
  *spill_bytes = 0;
  for (int k : ds.kernels) {
    const CompiledKernel& b = cp.kernels[static_cast<size_t>(k)].bin;
    if (b.registers >= *registers) *kernel = b.entry;
    *registers = std::max(*registers, b.registers);
    *spill_bytes += b.spill_bytes();
  }
  return true;
}

}  // namespace fusert::cuda
