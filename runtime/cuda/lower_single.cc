// CUDA lowering of single-op groups: pooling, layout ops, Gather, BatchNorm, Cast (reductions:
// lower_reduce.cc);
// elementwise and row-norm ops alone and lone anchors go to their kind's lowering.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "graph/unary.h"
#include "kernels/cuda/layout.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

bool elementwise_op(OpKind op) {
  if (is_table_unary(op)) return true;  // every op of graph/base/unary_ops.def
  switch (op) {
    case OpKind::kClip:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kGelu:
    case OpKind::kIdentity:
      return true;
    default:
      return false;
  }
}

Status lower_pool(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (xs.size() != 4 || g.value(n.inputs[0]).dtype != DType::kF32)
    return error(StatusCode::kUnsupported) << "pooling of a non-4-D f32 tensor";
  PoolSpec spec;
  if (n.op == OpKind::kGlobalAveragePool) {
    spec.kind = PoolSpec::kGlobalAverage;
  } else {
    spec.kind = n.op == OpKind::kMaxPool ? PoolSpec::kMax : PoolSpec::kAverage;
    const auto& k = n.attr_ints("kernel_shape");
    const auto& st = n.attr_ints("strides");
    const auto& pd = n.attr_ints("pads");
    spec.kh = k[0];
    spec.kw = k[1];
    spec.stride_h = st[0];
    spec.stride_w = st[1];
    spec.pad_top = pd[0];
    spec.pad_left = pd[1];
    spec.pad_bottom = pd[2];
    spec.pad_right = pd[3];
    if (n.op == OpKind::kMaxPool) {
      const auto& dl = n.attr_ints("dilations");
      spec.dil_h = dl[0];
      spec.dil_w = dl[1];
    } else {
      spec.count_include_pad = n.attr_i("count_include_pad") != 0;
    }
  }
  auto bp = std::make_shared<BoundProgram>();
  bp->prog.out_shape = xs;
  spec.pre.loads.push_back({0, bp->add_value(g, n.inputs[0])});
  spec.pre.stores.push_back({0, 0});
  spec.post.stores.push_back({0, 0});
  KernelSource src = gen_pool(spec);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
  const ValueId y = n.outputs[0];
  const bool global = spec.kind == PoolSpec::kGlobalAverage;
  const int block = src.block;
  const std::string what = gl.grp.name;
  gl.ds.run = [=](const RunEnv& env) {
    FzPoolArgs a;
    std::memset(&a, 0, sizeof a);
    a.n = xs[0];
    a.c = xs[1];
    a.h = xs[2];
    a.w = xs[3];
    a.oh = global ? 1 : ys[2];
    a.ow = global ? 1 : ys[3];
    for (int d = 0; d < 4; ++d) a.in_strides[0][d] = bp->prog.input_strides[0][static_cast<size_t>(d)];
    a.in[0] = bind_in(bp->inputs[0], env);
    a.out = env.dev.f32(y);
    unsigned blocks = global ? static_cast<unsigned>((a.n * a.c + block / 32 - 1) / (block / 32))
                             : grid_1d(a.n * a.c * a.oh * a.ow, block);
    return env.ctx.launch(env.kernels[static_cast<size_t>(k)], dim3(blocks), dim3(block), 0, &a, what);
  };
  return Status();
}

Status lower_transpose(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Value& x = g.value(n.inputs[0]);
  const size_t esize = dtype_size(x.dtype);
  if (x.shape.size() > kMaxCopyRank || (esize != 1 && esize != 4 && esize != 8))
    return error(StatusCode::kUnsupported) << "transpose rank/dtype";
  const auto perm = n.attr_ints("perm");
  const Shape out = g.value(n.outputs[0]).shape;
  std::vector<int64_t> xs = contiguous_strides(x.shape), in_strides(out.size()), out_strides = contiguous_strides(out);
  for (size_t d = 0; d < out.size(); ++d) in_strides[d] = xs[static_cast<size_t>(perm[d])];
  const ValueId xi = n.inputs[0], y = n.outputs[0];
  const int rank = static_cast<int>(out.size());
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(strided_copy(rank, out.data(), env.dev.raw(xi), 0, in_strides.data(), env.dev.raw(y), 0,
                                    out_strides.data(), static_cast<int>(esize), env.ctx.stream()),
                       "strided_copy", what);
  };
  return Status();
}

Status lower_concat(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape out = g.value(n.outputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.outputs[0]).dtype);
  if (out.size() > kMaxCopyRank || (esize != 1 && esize != 4 && esize != 8))
    return error(StatusCode::kUnsupported) << "concat rank/dtype";
  int64_t axis = n.attr_i("axis");
  if (axis < 0) axis += static_cast<int64_t>(out.size());
  const std::vector<int64_t> out_strides = contiguous_strides(out);
  struct Piece {
    ValueId v;
    Shape shape;
    std::vector<int64_t> strides;
    int64_t offset;
  };
  std::vector<Piece> pieces;
  int64_t at = 0;
  for (ValueId v : n.inputs) {
    const Shape s = g.value(v).shape;
    pieces.push_back({v, s, contiguous_strides(s), at * out_strides[static_cast<size_t>(axis)]});
    at += s[static_cast<size_t>(axis)];
  }
  const ValueId y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = static_cast<int>(pieces.size());
  gl.ds.run = [=](const RunEnv& env) -> Status {
    for (const Piece& p : pieces) {
      if (shape_numel(p.shape) == 0) continue;
      FUSERT_RETURN_IF_ERROR(cuda_status(
          strided_copy(static_cast<int>(p.shape.size()), p.shape.data(), env.dev.raw(p.v), 0, p.strides.data(),
                       env.dev.raw(y), p.offset, out_strides.data(), static_cast<int>(esize), env.ctx.stream()),
          "strided_copy", what));
    }
    return Status();
  };
  return Status();
}

// Gather with a device-side index check: a bad index is reported after the run.
struct GatherFlag {
  int* dev = nullptr;
  int* host = nullptr;  ///< pinned, so the copy can be captured into a CUDA Graph
  ~GatherFlag() {
    if (dev) cudaFree(dev);
    if (host) cudaFreeHost(host);
  }
};

Status lower_gather(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Value& x = g.value(n.inputs[0]);
  const Value& idx = g.value(n.inputs[1]);
  const size_t esize = dtype_size(x.dtype);
  if ((esize != 4 && esize != 8) || (idx.dtype != DType::kI64 && idx.dtype != DType::kI32))
    return error(StatusCode::kUnsupported) << "gather dtypes";
  int64_t axis = n.attr_i("axis");
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  const int64_t axis_len = x.shape[static_cast<size_t>(axis)], count = shape_numel(idx.shape);
  const bool i64 = idx.dtype == DType::kI64;
  auto flag = std::make_shared<GatherFlag>();
  const ValueId xv = n.inputs[0], iv = n.inputs[1], y = n.outputs[0];
  const std::string what = gl.grp.name, node = n.name, tensor = idx.name;
  gl.ds.copy_launches = 3;  // flag reset, gather, flag copy
  gl.ds.prepare = [=](Context&) -> Status {
    if (!flag->dev) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&flag->dev), sizeof(int)), what);
    if (!flag->host) CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&flag->host), sizeof(int)), what);
    *flag->host = 0;
    CUDA_CHECK(cudaMemset(flag->dev, 0, sizeof(int)), what);
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    CUDA_CHECK(cudaMemsetAsync(flag->dev, 0, sizeof(int), env.ctx.stream()), what);
    FUSERT_RETURN_IF_ERROR(cuda_status(gather(outer, axis_len, inner, env.dev.raw(xv), static_cast<int>(esize),
                                              env.dev.raw(iv), i64, count, env.dev.raw(y), flag->dev, env.ctx.stream()),
                                       "gather", what));
    return cuda_status(cudaMemcpyAsync(flag->host, flag->dev, sizeof(int), cudaMemcpyDeviceToHost, env.ctx.stream()),
                       "cudaMemcpyAsync", what);
  };
  gl.ds.after = [=]() -> Status {
    if (*flag->host == 0) return Status();
    *flag->host = 0;
    return error(StatusCode::kInvalidArgument) << "node '" << node << "' (Gather): an index of '" << tensor
                                               << "' is outside [-" << axis_len << ", " << axis_len << ")";
  };
  return Status();
}

// Inference BatchNormalization as one generated kernel: y = x * a[c] + b[c] with
// a = scale / sqrt(var + eps), b = B - mean * a folded on the host (ONNX BatchNormalization).
Status lower_batch_norm(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape xs = g.value(n.inputs[0]).shape;
  for (size_t i = 1; i < 5; ++i) {
    if (g.value(n.inputs[i]).data.empty())
      return error(StatusCode::kUnsupported) << "BatchNormalization statistics are not weights";
  }
  if (xs.size() < 2 || xs.size() > FZ_MAX_RANK || g.value(n.inputs[0]).dtype != DType::kF32) {
    return error(StatusCode::kUnsupported) << "BatchNormalization input";
  }
  const int64_t c = xs[1];
  const float eps = static_cast<float>(n.attr_f("epsilon"));
  const float* scale = g.value(n.inputs[1]).data.f32();
  const float* bias = g.value(n.inputs[2]).data.f32();
  const float* mean = g.value(n.inputs[3]).data.f32();
  const float* var = g.value(n.inputs[4]).data.f32();
  std::vector<float> a(static_cast<size_t>(c)), b(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) {
    a[static_cast<size_t>(i)] = scale[i] / std::sqrt(var[i] + eps);
    b[static_cast<size_t>(i)] = bias[i] - mean[i] * a[static_cast<size_t>(i)];
  }
  auto bp = std::make_shared<BoundProgram>();
  bp->prog.out_shape = xs;
  bp->prog.loads.push_back({0, bp->add_value(g, n.inputs[0])});
  Shape per_channel(xs.size(), 1);
  per_channel[1] = c;
  ConstPtr ca = make_const(std::move(a)), cb = make_const(std::move(b));
  for (const ConstPtr& k : {ca, cb}) {
    Binding bind;
    bind.kind = Binding::kConstant;
    bind.constant = k;
    kern::ElementwiseInstr in;
    in.op = k == ca ? kern::EpOp::kMulTensor : kern::EpOp::kAddTensor;
    in.input = bp->add_binding(bind, broadcast_strides(per_channel, xs));
    bp->prog.code.push_back(in);
  }
  bp->prog.stores.push_back({0, 0});
  Binding y;
  y.value = n.outputs[0];
  bp->outputs.push_back(y);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(gen_elementwise(bp->prog)));
  const std::string what = gl.grp.name;
  gl.ds.skip_weights.assign(n.inputs.begin() + 1, n.inputs.end());
  gl.ds.prepare = [=](Context&) -> Status {
    FUSERT_RETURN_IF_ERROR(ca->upload(what));
    return cb->upload(what);
  };
  gl.ds.run = [=](const RunEnv& env) { return launch_program(env, k, *bp, what); };
  return Status();
}

bool cast_type(DType t, CastType* out) {
  switch (t) {
    case DType::kF32:
      *out = CastType::kF32;
      return true;
    case DType::kI64:
      *out = CastType::kI64;
      return true;
    case DType::kI32:
      *out = CastType::kI32;
      return true;
    case DType::kBool:
      *out = CastType::kBool;
      return true;
    default:
      return false;
  }
}

Status lower_cast(GroupLowering& gl, const Node& n) {
  CastType from, to;
  if (!cast_type(gl.g.value(n.inputs[0]).dtype, &from) || !cast_type(gl.g.value(n.outputs[0]).dtype, &to)) {
    return error(StatusCode::kUnsupported) << "Cast between these dtypes";
  }
  const int64_t count = shape_numel(gl.g.value(n.inputs[0]).shape);
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(cast(count, env.dev.raw(x), from, env.dev.raw(y), to, env.ctx.stream()), "cast", what);
  };
  return Status();
}

using NodeLowering = Status (*)(GroupLowering&, const Node&);

// The single ops with a CUDA lowering of their own (elementwise ops, row norms and anchors go to
// their kind's), by op: pools, data movement, resampling, ConvTranspose, reductions, logic.
const std::map<OpKind, NodeLowering>& single_lowerings() {
  static const std::map<OpKind, NodeLowering> table = {
      {OpKind::kMaxPool, lower_pool},
      {OpKind::kAveragePool, lower_pool},
      {OpKind::kGlobalAveragePool, lower_pool},
      {OpKind::kTranspose, lower_transpose},
      {OpKind::kConcat, lower_concat},
      {OpKind::kSlice, lower_slice_cuda},
      {OpKind::kSplit, lower_split_cuda},
      {OpKind::kExpand, lower_expand_cuda},
      {OpKind::kPad, lower_pad_cuda},
      {OpKind::kTile, lower_tile_cuda},
      {OpKind::kResize, lower_resize_cuda},
      {OpKind::kConvTranspose, lower_conv_transpose_cuda},
      {OpKind::kGather, lower_gather},
      {OpKind::kBatchNormalization, lower_batch_norm},
      {OpKind::kCast, lower_cast},
      {OpKind::kReduceSum, lower_reduce_cuda},
      {OpKind::kReduceMean, lower_reduce_cuda},
      {OpKind::kReduceMax, lower_reduce_cuda},
      {OpKind::kReduceMin, lower_reduce_cuda},
      {OpKind::kReduceProd, lower_reduce_cuda},
      {OpKind::kReduceLogSumExp, lower_reduce_cuda},
      {OpKind::kReduceL1, lower_reduce_cuda},
      {OpKind::kReduceL2, lower_reduce_cuda},
      {OpKind::kReduceSumSquare, lower_reduce_cuda},
      {OpKind::kReduceLogSum, lower_reduce_cuda},
      {OpKind::kArgMax, lower_arg_extreme_cuda},
      {OpKind::kArgMin, lower_arg_extreme_cuda},
      {OpKind::kLRN, lower_lrn_cuda},
      {OpKind::kCumSum, lower_cumsum_cuda},
      {OpKind::kEqual, lower_logic_cuda},
      {OpKind::kLess, lower_logic_cuda},
      {OpKind::kGreater, lower_logic_cuda},
      {OpKind::kLessOrEqual, lower_logic_cuda},
      {OpKind::kGreaterOrEqual, lower_logic_cuda},
      {OpKind::kAnd, lower_logic_cuda},
      {OpKind::kOr, lower_logic_cuda},
      {OpKind::kXor, lower_logic_cuda},
      {OpKind::kNot, lower_logic_cuda},
      {OpKind::kWhere, lower_where_cuda},
      {OpKind::kMax, lower_nary_cuda},
      {OpKind::kMin, lower_nary_cuda},
      {OpKind::kSum, lower_nary_cuda},
      {OpKind::kMean, lower_nary_cuda},
      {OpKind::kPRelu, lower_nary_cuda},
  };
  return table;
}

}  // namespace

Status lower_single_cuda(GroupLowering& gl) {
  const Node& n = node_at(gl.g, gl.grp.nodes[0]);
  if (op_info(n.op).pattern == PatternKind::kAnchor) return lower_anchor_cuda(gl);
  if (elementwise_op(n.op)) return lower_elementwise_cuda(gl);
  if (n.op == OpKind::kLayerNormalization || n.op == OpKind::kSoftmax) return lower_row_norm_cuda(gl);
  const auto it = single_lowerings().find(n.op);
  if (it != single_lowerings().end()) return it->second(gl, n);
  return error(StatusCode::kUnsupported) << op_name(n.op) << " has no CUDA kernel";
}

}  // namespace fusert::cuda
