// CPU kernels of integer arithmetic at run time (ONNX Add, Sub, Mul, Div, Pow, Neg on i32 / i64
// tensors, imported as the op IntegerArithmetic) and of ONNX Mod (f32, i32, i64). Opaque ops:
// one pass with numpy broadcasting, never inside a fusion group (the fused kernels compute in
// f32). Operand shapes are padded to the output's rank. The steps check divisors and exponents
// before these run (an error names node, tensor and position), so no element traps.
#pragma once

#include "graph/base/tensor.h"
#include "kernels/cpu/import_kernels.h"

namespace fusert::cpu {

/// kAdd, kSub, kMul wrap on overflow (two's complement, as numpy); kDiv truncates toward 0
/// (C's /, as ONNX Runtime); kMod takes the divisor's sign (Python's %, ONNX Mod fmod 0), kFmod
/// the dividend's (C's %, fmod 1); kPow is exact repeated squaring, wrapping; kNeg reads `a`
/// only. The minimum value divided by -1 wraps to itself (mod 0).
enum class IntOp { kAdd, kSub, kMul, kDiv, kMod, kFmod, kPow, kNeg };

/// y (shape `ys`, element type `t`: kI32 or kI64) = a op b.
/// Preconditions: for kDiv, kMod and kFmod no element of b is 0; for kPow none is negative.
void integer_op(IntOp op, ElemType t, const Shape& ys, const Shape& as, const void* a, const Shape& bs, const void* b,
                void* y);

/// ONNX Mod with fmod 1 on f32: y = std::fmod(a, b) (the dividend's sign; NaN for b = 0).
void fmod_f32(const Shape& ys, const Shape& as, const float* a, const Shape& bs, const float* b, float* y);

}  // namespace fusert::cpu
