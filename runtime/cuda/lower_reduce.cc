// CUDA lowering of the reductions: ReduceSum / ReduceMean as a GEMM by a vector of ones (cuBLASLt),
// the others (Max, Min, Prod, LogSumExp, L1, L2, SumSquare, LogSum) and ArgMax / ArgMin on the
// kernels of kernels/cuda/reduce.cuh, in the CPU's arithmetic. Axes must be adjacent (one
// [outer, len, inner] view); otherwise the op stays on the host. LRN (a sum over neighbouring
// channels) and CumSum (a scan) on reduce.cuh too.
#include <algorithm>
#include <memory>
#include <vector>

#include "kernels/cuda/reduce.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

// The [outer, len, inner] view of x's reduced (sorted, adjacent) axes; false when they are not
// adjacent or absent.
bool axis_view(const Shape& xs, std::vector<int64_t> axes, int64_t* outer, int64_t* len, int64_t* inner) {
  if (axes.empty()) return false;
  for (int64_t& a : axes)
    if (a < 0) a += static_cast<int64_t>(xs.size());
  std::sort(axes.begin(), axes.end());
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] != axes[i - 1] + 1) return false;
  *outer = *len = *inner = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t ax = static_cast<int64_t>(d);
    (ax < axes.front() ? *outer : ax > axes.back() ? *inner : *len) *= xs[d];
  }
  return true;
}

// ReduceSum / ReduceMean over one contiguous run of axes as a GEMM with a ones vector on cuBLASLt:
// x viewed as [outer, len, inner]; y[o, :] = (1/len if mean) * ones[1, len] x[o] ([len, inner]),
// batched over outer (or x [outer, len] * ones [len, 1] when inner == 1).
Status reduce_by_gemm(GroupLowering& gl, const Node& n, int64_t outer, int64_t len, int64_t inner) {
  GemmDesc d;
  d.alpha = n.op == OpKind::kReduceMean ? 1.f / static_cast<float>(len) : 1.f;
  const bool rows = inner == 1;
  if (rows) {  // [outer, len] x ones[len, 1]
    d.m = outer;
    d.k = len;
    d.n = 1;
  } else {  // ones[1, len] x [len, inner], per outer
    d.m = 1;
    d.k = len;
    d.n = inner;
    d.batch = outer;
    d.stride_a = 0;
    d.stride_b = len * inner;
    d.stride_c = d.stride_d = inner;
  }
  struct State {
    std::unique_ptr<LtGemm> gemm;
    ConstPtr ones;
  };
  auto state = std::make_shared<State>();
  state->ones = make_const(std::vector<float>(static_cast<size_t>(len), 1.f));
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.library_calls = 1;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_RETURN_IF_ERROR(state->ones->upload(what));
    FUSERT_ASSIGN_OR_RETURN(state->gemm, LtGemm::create(ctx, d, what));
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) {
    const float* a = rows ? env.dev.f32(x) : state->ones->get();
    const float* b = rows ? state->ones->get() : env.dev.f32(x);
    return state->gemm->run(env.ctx, a, b, nullptr, nullptr, env.dev.f32(y));
  };
  return Status();
}

ReduceKind reduce_kind(OpKind op) {
  ReduceKind k;
  switch (op) {
    case OpKind::kReduceMax:
      k.combine = ReduceKind::kMax;
      break;
    case OpKind::kReduceMin:
      k.combine = ReduceKind::kMin;
      break;
    case OpKind::kReduceProd:
      k.combine = ReduceKind::kProd;
      break;
    case OpKind::kReduceLogSumExp:
      k.combine = ReduceKind::kLogSumExp;
      break;
    case OpKind::kReduceL1:
      k.pre = ReduceKind::kAbs;
      break;
    case OpKind::kReduceL2:
      k.pre = ReduceKind::kSquare;
      k.post = ReduceKind::kSqrt;
      break;
    case OpKind::kReduceSumSquare:
      k.pre = ReduceKind::kSquare;
      break;
    case OpKind::kReduceLogSum:
      k.post = ReduceKind::kLog;
      break;
    default:  // ReduceSum: the plain sum
      break;
  }
  return k;
}

}  // namespace

Status lower_reduce_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape xs = g.value(n.inputs[0]).shape;
  int64_t outer, len, inner;
  if (g.value(n.inputs[0]).dtype != DType::kF32 || !axis_view(xs, n.attr_ints("axes"), &outer, &len, &inner))
    return error(StatusCode::kUnsupported)
           << "a reduction of a non-f32 tensor, without axes, or over non-adjacent axes";
  if (n.op == OpKind::kReduceSum || n.op == OpKind::kReduceMean) return reduce_by_gemm(gl, n, outer, len, inner);
  const ReduceKind k = reduce_kind(n.op);
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(reduce_axis(outer, len, inner, k, env.dev.f32(x), env.dev.f32(y), env.ctx.stream()),
                       "reduce_axis", what);
  };
  return Status();
}

Status lower_arg_extreme_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape xs = g.value(n.inputs[0]).shape;
  int64_t outer, len, inner;
  if (g.value(n.inputs[0]).dtype != DType::kF32 || !axis_view(xs, {n.attr_i("axis")}, &outer, &len, &inner) || len == 0)
    return error(StatusCode::kUnsupported) << "ArgMax/ArgMin of a non-f32 tensor or an empty axis";
  const bool min = n.op == OpKind::kArgMin, last = n.attr_i("select_last_index") != 0;
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(arg_extreme(outer, len, inner, min, last, env.dev.f32(x), static_cast<int64_t*>(env.dev.raw(y)),
                                   env.ctx.stream()),
                       "arg_extreme", what);
  };
  return Status();
}

Status lower_cumsum_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape xs = g.value(n.inputs[0]).shape;
  const DType dt = g.value(n.inputs[0]).dtype;
  const Tensor& a = g.value(n.inputs[1]).data;
  if ((dt != DType::kF32 && dt != DType::kI32 && dt != DType::kI64) || a.numel() != 1 || xs.empty())
    return error(StatusCode::kUnsupported)
           << "CumSum of a dtype other than f32, i32, i64, or an axis computed at run time";
  int64_t axis = a.dtype() == DType::kI32 ? *static_cast<const int32_t*>(a.raw()) : a.i64()[0];
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  int64_t outer, len, inner;
  if (!axis_view(xs, {axis}, &outer, &len, &inner)) return error(StatusCode::kUnsupported) << "CumSum's axis";
  const bool exclusive = n.attr_i("exclusive") != 0, reverse = n.attr_i("reverse") != 0;
  const ScanType t = dt == DType::kF32 ? ScanType::kF32 : dt == DType::kI32 ? ScanType::kI32 : ScanType::kI64;
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(
        cumsum(outer, len, inner, exclusive, reverse, t, env.dev.raw(x), env.dev.raw(y), env.ctx.stream()), "cumsum",
        what);
  };
  return Status();
}

Status lower_lrn_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape xs = g.value(n.inputs[0]).shape;
  if (g.value(n.inputs[0]).dtype != DType::kF32 || xs.size() < 2 || n.attr_i("size") < 1)
    return error(StatusCode::kUnsupported) << "LRN of a non-f32 tensor, rank below 2, or size below 1";
  const int64_t batch = xs[0], c = xs[1], s = shape_numel(xs) / std::max<int64_t>(1, xs[0] * xs[1]),
                size = n.attr_i("size");
  const float alpha = static_cast<float>(n.attr_f("alpha")), beta = static_cast<float>(n.attr_f("beta")),
              bias = static_cast<float>(n.attr_f("bias"));
  const ValueId x = n.inputs[0], y = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(lrn(batch, c, s, size, alpha, beta, bias, env.dev.f32(x), env.dev.f32(y), env.ctx.stream()),
                       "lrn", what);
  };
  return Status();
}

}  // namespace fusert::cuda
