// The helpers the unary-op expressions of graph/base/unary_ops.def may call, written once for
// the host (inline C++ here) and for generated CUDA kernels (the same text, stringified, in
// every kernel's prelude: unary_math_cuda_source()). Comparisons fail for NaN, so NaN falls
// through unchanged: Relu(NaN) and Clip(NaN) stay NaN, as in ONNX Runtime. fz_fake_quant is
// QuantizeLinear then DequantizeLinear per tensor (graph/base/quant_math.h) in one: the integer
// r = round_half_even(v / s) - zero_point clamped to [lo, lo + 255] (lo = the 8-bit range's low
// end - zero point; NaN to lo, as QuantizeLinear), times s: the same bits as the two ops.
#pragma once

#include <cmath>

#define FUSERT_UNARY_HELPERS(FN)                            \
  FN float fz_relu(float v) { return v < 0.0f ? 0.0f : v; } \
  FN float fz_clip(float v, float lo, float hi) {           \
    v = v < lo ? lo : v;                                    \
    return v > hi ? hi : v;                                 \
  }                                                         \
  FN float fz_fake_quant(float v, float s, float lo) {      \
    float r = rintf(v / s);                                 \
    r = r > lo ? r : lo;                                    \
    r = r < lo + 255.0f ? r : lo + 255.0f;                  \
    return r * s;                                           \
  }

namespace fusert {

FUSERT_UNARY_HELPERS(inline)

#define FUSERT_UNARY_STR_(...) #__VA_ARGS__
#define FUSERT_UNARY_STR(...) FUSERT_UNARY_STR_(__VA_ARGS__)

/// CUDA C++ text of the helpers and of one device function per table row:
/// `__device__ __forceinline__ float fz_op_<Name>(float v, float a, float b)`.
inline const char* unary_math_cuda_source() {
  return FUSERT_UNARY_STR(FUSERT_UNARY_HELPERS(__device__ __forceinline__))
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) \
  "\n__device__ __forceinline__ float fz_op_" #Name "(float v, float a, float b) { return " #Expr "; }"
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
      "\n";
}

}  // namespace fusert
