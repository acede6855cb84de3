// CPU kernels of the quantisation ops (ONNX QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger): i8 / u8 values with f32 scales and
// integer zero points per tensor or per channel. The element formulas are graph/base/quant_math.h
// (shared with constant folding). MatMulInteger and ConvInteger accumulate exactly in int32
// (Eigen's integer GEMM over operands widened with their zero points subtracted; ConvInteger
// through im2col, padding counting as the zero point). Kernels see buffers only.
#pragma once

#include <cstdint>

#include "graph/base/tensor.h"
#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {

/// X viewed as [outer, channels, inner] around the quantisation axis: channels = 1 per tensor.
struct QuantAxis {
  int64_t outer = 1, channels = 1, inner = 1;
};

/// y (i8 or u8: `t`) = saturate(round_half_even(x / scale[c]) + zero_point[c]); zero_point of
/// type `t`, nullable (0).
void quantize_linear(const QuantAxis& a, const float* x, const float* scale, const void* zero_point, DType t, void* y);

/// y = (x - zero_point[c]) * scale[c]; x and zero_point (nullable: 0) of type `t` (i8, u8, i32).
void dequantize_linear(const QuantAxis& a, const void* x, DType t, const float* scale, const void* zero_point,
                       float* y);

/// ONNX DynamicQuantizeLinear over n values: the u8 scale and zero point of [min(0, x), max(0, x)],
/// then y. All of x 0 (or empty): scale 0 is avoided, y and the zero point 0, scale 1.
void dynamic_quantize_linear(int64_t n, const float* x, uint8_t* y, float* scale, uint8_t* zero_point);

/// One matrix product of MatMulInteger: y[m, n] (i32) = sum_k (a[m, k] - za[m]) * (b[k, n] - zb[n]),
/// a [M, K] and b [K, N] row-major of types `at` / `bt` (i8 or u8). za: nullable, 1 value, or M
/// (`za_count`); zb: nullable, 1 or N.
struct IntGemm {
  int64_t m = 0, k = 0, n = 0;
  DType at = DType::kU8, bt = DType::kI8;
  const void* za = nullptr;
  int64_t za_count = 1;
  const void* zb = nullptr;
  int64_t zb_count = 1;
};
void matmul_integer(const IntGemm& g, const void* a, const void* b, int32_t* y);

/// ConvInteger over NCHW (ConvParams as Conv): y [N, M, OH, OW] i32; x of type `xt` with one zero
/// point (nullable), w [M, C/group, KH, KW] of type `wt` with zero points per tensor or per M
/// (`wz_count` 1 or M, nullable).
void conv_integer(const ConvParams& p, const void* x, DType xt, const void* x_zero_point, const void* w, DType wt,
                  const void* w_zero_point, int64_t wz_count, int32_t* y);

}  // namespace fusert::cpu
