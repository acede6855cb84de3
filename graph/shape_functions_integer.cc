// Shape functions of integer arithmetic at run time and Mod (numpy broadcasting of two inputs
// of one dtype): IntegerArithmetic (i32, i64), Mod (i32, i64; f32 with fmod 1, as ONNX says).
#include "graph/shape_inference.h"

namespace fusert {

namespace {

Status broadcast_out(ShapeContext& c) {
  const size_t b = c.num_inputs() > 1 ? 1 : 0;
  if (c.in_dtype(b) != c.in_dtype(0))
    return c.fail() << "inputs are " << dtype_name(c.in_dtype(0)) << " and " << dtype_name(c.in_dtype(b))
                    << " (the same dtype)";
  Shape out;
  if (!broadcast_shapes(c.in(0), c.in(b), &out))
    return c.fail() << "shapes " << shape_str(c.in(0)) << " and " << shape_str(c.in(b)) << " do not broadcast";
  c.set_out(0, out, c.in_dtype(0));
  return Status();
}

bool integer(DType t) { return t == DType::kI32 || t == DType::kI64; }

}  // namespace

Status shape_IntegerArithmetic(ShapeContext& c) {
  const std::string& op = c.node.attr_s("op");
  const bool unary = op == "neg";
  if (!unary && op != "add" && op != "sub" && op != "mul" && op != "div" && op != "pow")
    return c.fail() << "op '" << op << "' (add, sub, mul, div, pow, neg)";
  if (c.num_inputs() != (unary ? 1u : 2u)) return c.fail() << op << " takes " << (unary ? 1 : 2) << " inputs";
  if (!integer(c.in_dtype(0))) return c.fail() << "input 0 is " << dtype_name(c.in_dtype(0)) << " (i32, i64)";
  return broadcast_out(c);
}

Status shape_Mod(ShapeContext& c) {
  const DType t = c.in_dtype(0);
  if (t == DType::kF32 && c.node.attr_i("fmod") != 1)
    return c.fail() << "fmod 0 on f32 inputs (ONNX: floating-point Mod takes fmod 1)";
  if (t != DType::kF32 && !integer(t)) return c.unsupported() << "input 0 is " << dtype_name(t) << " (f32, i32, i64)";
  return broadcast_out(c);
}

}  // namespace fusert
