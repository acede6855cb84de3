// CUDA lowering of the comparisons and logic (Equal, Less, Greater, LessOrEqual, GreaterOrEqual,
// And, Or, Xor, Not: kernels/cuda/logic.cuh), of Where (kernels/cuda/layout.cuh where, f32 values)
// and of the element-wise ops of several f32 inputs (Max, Min, Sum, Mean, PRelu:
// kernels/cuda/nary.cuh), each one launch with numpy broadcasting, instead of host fallback. Rank
// above kMaxCopyRank, other dtypes, or more than kMaxNaryInputs inputs stay on the host.
#include "kernels/cuda/layout.cuh"
#include "kernels/cuda/logic.cuh"
#include "kernels/cuda/nary.cuh"
#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

namespace {

bool logic_type(DType t, LogicType* out) {
  switch (t) {
    case DType::kF32:
      *out = LogicType::kF32;
      return true;
    case DType::kI32:
      *out = LogicType::kI32;
      return true;
    case DType::kI64:
      *out = LogicType::kI64;
      return true;
    case DType::kBool:
      *out = LogicType::kBool;
      return true;
    default:
      return false;
  }
}

LogicOp logic_op(OpKind op) {
  switch (op) {
    case OpKind::kLess:
      return LogicOp::kLess;
    case OpKind::kGreater:
      return LogicOp::kGreater;
    case OpKind::kLessOrEqual:
      return LogicOp::kLessOrEqual;
    case OpKind::kGreaterOrEqual:
      return LogicOp::kGreaterOrEqual;
    case OpKind::kAnd:
      return LogicOp::kAnd;
    case OpKind::kOr:
      return LogicOp::kOr;
    case OpKind::kXor:
      return LogicOp::kXor;
    default:
      return LogicOp::kEqual;
  }
}

}  // namespace

Status lower_logic_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape out = g.value(n.outputs[0]).shape;
  const ValueId y = n.outputs[0];
  const std::string what = gl.grp.name;
  if (out.size() > static_cast<size_t>(kMaxCopyRank))
    return error(StatusCode::kUnsupported) << "rank above " << kMaxCopyRank;
  gl.ds.copy_launches = 1;
  if (n.op == OpKind::kNot) {
    const ValueId x = n.inputs[0];
    const int64_t count = shape_numel(out);
    gl.ds.run = [=](const RunEnv& env) {
      return cuda_status(logical_not(count, static_cast<const uint8_t*>(env.dev.raw(x)),
                                     static_cast<uint8_t*>(env.dev.raw(y)), env.ctx.stream()),
                         "logical_not", what);
    };
    return Status();
  }
  LogicType t;
  if (!logic_type(g.value(n.inputs[0]).dtype, &t)) return error(StatusCode::kUnsupported) << "operand dtype";
  const ValueId a = n.inputs[0], b = n.inputs[1];
  const std::vector<int64_t> as = broadcast_strides(g.value(a).shape, out),
                             bs = broadcast_strides(g.value(b).shape, out);
  const LogicOp op = logic_op(n.op);
  const int rank = static_cast<int>(out.size());
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(compare(rank, out.data(), op, t, env.dev.raw(a), as.data(), env.dev.raw(b), bs.data(),
                               static_cast<uint8_t*>(env.dev.raw(y)), env.ctx.stream()),
                       "compare", what);
  };
  return Status();
}

Status lower_where_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape out = g.value(n.outputs[0]).shape;
  if (out.size() > static_cast<size_t>(kMaxCopyRank) || g.value(n.outputs[0]).dtype != DType::kF32)
    return error(StatusCode::kUnsupported) << "Where of other than f32 values, or rank above " << kMaxCopyRank;
  const ValueId c = n.inputs[0], a = n.inputs[1], b = n.inputs[2], y = n.outputs[0];
  const std::vector<int64_t> cs = broadcast_strides(g.value(c).shape, out),
                             as = broadcast_strides(g.value(a).shape, out),
                             bs = broadcast_strides(g.value(b).shape, out);
  const int rank = static_cast<int>(out.size());
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    return cuda_status(where(rank, out.data(), static_cast<const uint8_t*>(env.dev.raw(c)), cs.data(), env.dev.f32(a),
                             as.data(), env.dev.f32(b), bs.data(), env.dev.f32(y), env.ctx.stream()),
                       "where", what);
  };
  return Status();
}

Status lower_nary_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape out = g.value(n.outputs[0]).shape;
  if (out.size() > static_cast<size_t>(kMaxCopyRank) || n.inputs.size() > static_cast<size_t>(kMaxNaryInputs))
    return error(StatusCode::kUnsupported)
           << "rank above " << kMaxCopyRank << " or more than " << kMaxNaryInputs << " inputs";
  for (ValueId v : n.inputs)
    if (g.value(v).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "an input other than f32";
  const NaryOp op = n.op == OpKind::kMax    ? NaryOp::kMax
                    : n.op == OpKind::kMin  ? NaryOp::kMin
                    : n.op == OpKind::kSum  ? NaryOp::kSum
                    : n.op == OpKind::kMean ? NaryOp::kMean
                                            : NaryOp::kPRelu;
  std::vector<int64_t> strides;
  for (ValueId v : n.inputs) {
    const std::vector<int64_t> s = broadcast_strides(g.value(v).shape, out);
    strides.insert(strides.end(), s.begin(), s.end());
  }
  const std::vector<ValueId> ins = n.inputs;
  const ValueId y = n.outputs[0];
  const int rank = static_cast<int>(out.size()), count = static_cast<int>(ins.size());
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) {
    std::vector<const float*> xs;
    for (ValueId v : ins) xs.push_back(env.dev.f32(v));
    return cuda_status(nary(rank, out.data(), op, count, xs.data(), strides.data(), env.dev.f32(y), env.ctx.stream()),
                       "nary", what);
  };
  return Status();
}

}  // namespace fusert::cuda
