// Shape inference driver: dispatches each node to its op's shape function (from ops.def).
#include "graph/shape_inference.h"

namespace fusert {

#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) Status shape_##name(ShapeContext& c);
#include "graph/ops.def"
#undef FUSERT_OP

namespace {
using ShapeFn = Status (*)(ShapeContext&);
const ShapeFn kShapeFns[] = {
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) &shape_##name,
#include "graph/ops.def"
#undef FUSERT_OP
};
}  // namespace

const Tensor* ShapeContext::constant(size_t i) const {
  if (!has_input(i)) return nullptr;
  const Value& v = graph.value(node.inputs[i]);
  return v.is_initializer && !v.data.empty() ? &v.data : nullptr;
}

static bool value_constant_derived(const Graph& g, ValueId v, int depth) {
  const Value& val = g.value(v);
  if (val.is_initializer) return !val.data.empty();
  if (val.producer < 0 || depth > 64) return false;
  for (ValueId in : g.nodes[static_cast<size_t>(val.producer)].inputs) {
    if (in != kNoValue && !value_constant_derived(g, in, depth + 1)) return false;
  }
  return true;
}

bool ShapeContext::constant_derived(size_t i) const {
  return has_input(i) && value_constant_derived(graph, node.inputs[i], 0);
}

void ShapeContext::set_out(size_t i, Shape s, DType t) {
  Value& v = graph.value(node.outputs[i]);
  v.shape = std::move(s);
  v.dtype = t;
  v.shape_known = true;
}

ErrorBuilder ShapeContext::fail() const {
  ErrorBuilder b(StatusCode::kShapeMismatch);
  b << node.loc.str() << ": node '" << node.name << "' (" << op_name(node.op) << "): ";
  return b;
}

ErrorBuilder ShapeContext::unsupported() const {
  ErrorBuilder b(StatusCode::kUnsupported);
  b << node.loc.str() << ": node '" << node.name << "' (" << op_name(node.op) << "): ";
  return b;
}

bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    s[i] = da == 1 ? db : da;
  }
  *out = s;
  return true;
}

// Kernels compute in f32; data-movement ops move raw elements of any dtype. An input index
// listed here may hold another dtype (integer shapes, axes, indices, conditions).
static bool dtype_free_input(OpKind op, size_t i) {
  switch (op) {
    case OpKind::kCast:
    case OpKind::kIdentity:
    case OpKind::kFlatten:
    case OpKind::kReshape:
    case OpKind::kUnsqueeze:
    case OpKind::kSlice:
    case OpKind::kSplit:
    case OpKind::kGather:
    case OpKind::kWhere:
    case OpKind::kExpand:
    case OpKind::kTile:
    case OpKind::kEqual:  // comparisons, logic and extrema: their shape functions check dtypes
    case OpKind::kLess:
    case OpKind::kGreater:
    case OpKind::kLessOrEqual:
    case OpKind::kGreaterOrEqual:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
    case OpKind::kNot:
    case OpKind::kMax:
    case OpKind::kMin:
    case OpKind::kGatherElements:  // element-indexed ops: their shape functions check dtypes
    case OpKind::kScatterElements:
    case OpKind::kTrilu:
    case OpKind::kCumSum:
    case OpKind::kTopK:
    case OpKind::kGatherND:
    case OpKind::kScatterND:
    case OpKind::kOneHot:
    case OpKind::kNegativeLogLikelihoodLoss:  // targets i64/i32: checked by its shape function
    case OpKind::kIntegerArithmetic:
    case OpKind::kReverseSequence:
    case OpKind::kRoiAlign:
    case OpKind::kRNN:  // sequence_lens i32 / i64: checked by the shape functions
    case OpKind::kGRU:
    case OpKind::kLSTM:
    case OpKind::kMod:
    case OpKind::kNonZero:  // data-dependent ops: their shape functions check dtypes
    case OpKind::kNonMaxSuppression:
    case OpKind::kUnique:
    case OpKind::kCompress:
    case OpKind::kRange:
    case OpKind::kDynamicSlice:  // data of any dtype; starts, ends, steps checked by the shape function
    case OpKind::kDynamicReshape:
    case OpKind::kDynamicExpand:
    case OpKind::kIf:              // the condition and the outer values a branch reads, of any dtype
    case OpKind::kLoop:            // M, the condition, carried and outer values: checked by shape_Loop
    case OpKind::kQuantizeLinear:  // quantisation: i8, u8, i32 checked by graph/shape_functions_quant.cc
    case OpKind::kDequantizeLinear:
    case OpKind::kDynamicQuantizeLinear:
    case OpKind::kMatMulInteger:
    case OpKind::kConvInteger:
    case OpKind::kQLinearConv:
    case OpKind::kQLinearAdd:
      return true;
    case OpKind::kResize:
      return i >= 1;  // roi, scales (f32), sizes (i64): checked by shape_Resize
    case OpKind::kReduceSum:
      return i == 1;
    case OpKind::kPad:
      return true;  // data (f32, i32, i64: checked by shape_Pad), pads, constant_value, axes
    default:
      return false;
  }
}

// Ops that take i8 / u8 tensors: the quantisation ops, the views (no kernel of their own), Gather,
// Transpose and Cast.
// Every other op refuses them before its kernel could read a byte as a wider element.
static bool takes_int8(OpKind op) {
  switch (op) {
    case OpKind::kQuantizeLinear:
    case OpKind::kDequantizeLinear:
    case OpKind::kMatMulInteger:
    case OpKind::kConvInteger:
    case OpKind::kQLinearConv:
    case OpKind::kQLinearAdd:
    case OpKind::kMaxPool:  // of quantised values too (ONNX opset 12), as a QDQ model's (qdq_maxpool)
    case OpKind::kIdentity:
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kUnsqueeze:
    case OpKind::kGather:  // moves elements by size: a quantised embedding table (quantize_dynamic)
    case OpKind::kTranspose:
    case OpKind::kCast:  // to and from 8 bits (DynamicQuantizeLinear written out, as ONNX's expanded tests do)
      return true;
    default:
      return false;
  }
}

static Status check_dtypes(ShapeContext& c) {
  const OpKind op = c.node.op;
  for (size_t i = 0; i < c.num_inputs() && !takes_int8(op); ++i) {
    if (!c.has_input(i) || (c.in_dtype(i) != DType::kI8 && c.in_dtype(i) != DType::kU8)) continue;
    return c.unsupported() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name << "') is "
                           << dtype_name(c.in_dtype(i)) << "; " << op_name(op)
                           << " does not take quantised values (DequantizeLinear first)";
  }
  // Concat and Transpose move f32, i32 and i64 (Transpose's i64 up to rank 5); on other constants both are
  // folded before running.
  if ((op == OpKind::kConcat || op == OpKind::kTranspose)) {
    bool all_const = true;
    for (size_t i = 0; i < c.num_inputs(); ++i) all_const &= c.constant_derived(i);
    if (all_const) return Status();
  }
  if (op == OpKind::kConcat && (c.in_dtype(0) == DType::kI32 || c.in_dtype(0) == DType::kI64)) {
    for (size_t i = 1; i < c.num_inputs(); ++i)  // moves 4- or 8-byte elements (shapes computed at run time)
      if (c.in_dtype(i) != c.in_dtype(0))
        return c.fail() << "input " << i << " is " << dtype_name(c.in_dtype(i)) << ", input 0 "
                        << dtype_name(c.in_dtype(0)) << " (Concat's inputs share one dtype)";
    return Status();
  }
  if (op == OpKind::kTranspose && (c.in_dtype(0) == DType::kI32 || dtype_size(c.in_dtype(0)) == 1 ||
                                   (c.in_dtype(0) == DType::kI64 && c.in(0).size() < 6)))
    return Status();  // moves 4- or 8-byte elements (NonZero's indices); an i64 one as 2 x 4 bytes, rank <= 5
  if (op == OpKind::kMaxPool && (c.in_dtype(0) == DType::kI8 || c.in_dtype(0) == DType::kU8))
    return Status();  // the max of 8-bit values (lower_max_pool_8bit)
  if (op == OpKind::kAdd || op == OpKind::kSub || op == OpKind::kMul || op == OpKind::kDiv)
    return Status();  // own rule
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.has_input(i) || dtype_free_input(op, i) || c.in_dtype(i) == DType::kF32) continue;
    return c.unsupported() << "input " << i << " ('" << c.graph.value(c.node.inputs[i]).name << "') is "
                           << dtype_name(c.in_dtype(i)) << "; " << op_name(op) << " computes in f32 (use Cast to: 1)";
  }
  return Status();
}

Status infer_node_shapes(Graph& g, Node& n) {
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    // Shape functions read inputs below min_inputs unconditionally: an empty one ("") is an
    // error here, before any of them sees kNoValue.
    if (n.inputs[i] == kNoValue && static_cast<int>(i) < op_info(n.op).min_inputs) {
      return error(StatusCode::kInvalidArgument)
             << n.loc.str() << ": node '" << n.name << "': required input " << i << " is empty";
    }
    if (n.inputs[i] != kNoValue && !g.value(n.inputs[i]).shape_known) {
      return error(StatusCode::kShapeMismatch)
             << n.loc.str() << ": node '" << n.name << "': input '" << g.value(n.inputs[i]).name
             << "' has no known shape (is it produced before this node?)";
    }
  }
  ShapeContext c{g, n};
  FUSERT_RETURN_IF_ERROR(check_dtypes(c));
  FUSERT_RETURN_IF_ERROR(kShapeFns[static_cast<size_t>(n.op)](c));
  for (ValueId out : n.outputs) {
    int64_t count = 0;
    if (!checked_numel(g.value(out).shape, &count)) {
      return c.fail() << "output '" << g.value(out).name << "' " << shape_str(g.value(out).shape)
                      << " exceeds the largest tensor fusert allocates (" << kMaxTensorElements << " elements)";
    }
  }
  return Status();
}

Status infer_shapes(Graph& g) {
  for (Node& n : g.nodes) FUSERT_RETURN_IF_ERROR(infer_node_shapes(g, n));
  return Status();
}

}  // namespace fusert
