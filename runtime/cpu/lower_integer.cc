// CPU lowering of integer arithmetic at run time and Mod (kernels/cpu/integer_kernels.h): one
// opaque step each; a divisor of 0 (div, mod) or a negative integer exponent (pow) is found by
// the step's check before the kernel runs, an error naming node, tensor and position. The CUDA
// backend runs the same steps through its host fallback.
#include "kernels/cpu/integer_kernels.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

namespace {

using cpu_lowering::padded;
using cpu_lowering::shape_of;

cpu::IntOp int_op(const std::string& op, bool fmod) {
  if (op == "add") return cpu::IntOp::kAdd;
  if (op == "sub") return cpu::IntOp::kSub;
  if (op == "mul") return cpu::IntOp::kMul;
  if (op == "div") return cpu::IntOp::kDiv;
  if (op == "pow") return cpu::IntOp::kPow;
  if (op == "mod") return fmod ? cpu::IntOp::kFmod : cpu::IntOp::kMod;
  return cpu::IntOp::kNeg;
}

// Checks every element of `bi` (i32 or i64): none 0 (a divisor) or none negative (an exponent).
void check_operand(const Graph& g, const Node& n, ValueId bi, bool exponent, Step& s) {
  const int64_t count = shape_numel(shape_of(g, bi));
  const bool i32 = g.value(bi).dtype == DType::kI32;
  const std::string node = n.name, op = op_name(n.op), tensor = g.value(bi).name;
  s.check = [=](const BufferTable& b) -> Status {
    for (int64_t k = 0; k < count; ++k) {
      const int64_t v = i32 ? static_cast<const int32_t*>(b.raw(bi))[k] : static_cast<const int64_t*>(b.raw(bi))[k];
      if (exponent ? v >= 0 : v != 0) continue;
      return error(StatusCode::kInvalidArgument)
             << "node '" << node << "' (" << op << "): " << (exponent ? "exponent " : "divisor ") << v
             << " at position " << k << " of '" << tensor << "'"
             << (exponent ? " (integers to negative powers are not integers)" : " (integer division by zero)");
    }
    return Status();
  };
}

Status lower_integer(const Graph& g, const Node& n, cpu::IntOp op, Step& s) {
  const Shape ys = shape_of(g, n.outputs[0]);
  const ValueId ai = n.inputs[0], bi = n.inputs.size() > 1 ? n.inputs[1] : n.inputs[0], yi = n.outputs[0];
  const Shape as = padded(shape_of(g, ai), ys.size()), bs = padded(shape_of(g, bi), ys.size());
  const cpu::ElemType t = g.value(ai).dtype == DType::kI32 ? cpu::ElemType::kI32 : cpu::ElemType::kI64;
  if (op == cpu::IntOp::kDiv || op == cpu::IntOp::kMod || op == cpu::IntOp::kFmod) check_operand(g, n, bi, false, s);
  if (op == cpu::IntOp::kPow) check_operand(g, n, bi, true, s);
  s.run = [=](const BufferTable& b) { cpu::integer_op(op, t, ys, as, b.raw(ai), bs, b.raw(bi), b.raw(yi)); };
  return Status();
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(IntegerArithmetic) {
  const Node& n = NODE;
  return lower_integer(g, n, int_op(n.attr_s("op"), false), s);
}

LOWER(Mod) {
  const Node& n = NODE;
  const bool fmod = n.attr_i("fmod") != 0;
  if (g.value(n.inputs[0]).dtype != DType::kF32) return lower_integer(g, n, int_op("mod", fmod), s);
  const Shape ys = shape_of(g, n.outputs[0]);
  const Shape as = padded(shape_of(g, n.inputs[0]), ys.size()), bs = padded(shape_of(g, n.inputs[1]), ys.size());
  const ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::fmod_f32(ys, as, b.f32(ai), bs, b.f32(bi), b.f32(yi)); };
  return Status();
}

}  // namespace fusert
