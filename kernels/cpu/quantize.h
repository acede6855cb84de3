// CPU kernels of the quantisation ops (ONNX QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger): i8 / u8 values with f32 scales and
// integer zero points per tensor or per channel. The element formulas are graph/base/quant_math.h
// (shared with constant folding). MatMulInteger and ConvInteger accumulate exactly in int32
// (Eigen's integer GEMM over operands widened with their zero points subtracted; ConvInteger
// through im2col, padding counting as the zero point). Kernels see buffers only.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/base/quant_math.h"
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

/// QLinearConv's requantisation: the parameters of y = saturate(round_half_even(clip((acc + bias[c]) *
/// multiplier[c], lo, hi)) + zero_point) per output channel c (multiplier = x_scale * w_scale[c] /
/// y_scale; lo, hi: an activation's bounds in units of y_scale).
struct Requant {
  std::vector<float> multiplier;      ///< [M]
  std::vector<int32_t> bias;          ///< [M], or empty
  float lo = -3.4e38f, hi = 3.4e38f;  ///< activation clip, in y units
  int32_t zero_point = 0;
  DType out = DType::kU8;
};

/// One output of the requantisation: the int32 accumulator `acc` of channel c (bias not yet added).
inline int requantize_one(const Requant& r, int32_t acc, int64_t c) {
  float v = static_cast<float>(acc + (r.bias.empty() ? 0 : r.bias[static_cast<size_t>(c)])) *
            r.multiplier[static_cast<size_t>(c)];
  v = v < r.lo ? r.lo : (v > r.hi ? r.hi : v);
  return quant::quantize_one(v, 1.f, r.zero_point, r.out == DType::kI8 ? quant::kI8Range : quant::kU8Range);
}

/// y[n, c, p] (i8 / u8, NCHW) = requantize_one(acc[n, p, c]) for `acc` [n, pixels, m] int32 (NHWC);
/// with `nhwc_out`, y[n, p, c] (NHWC, the layout a following int8 convolution reads).
void requantize_nhwc(const Requant& r, int64_t n, int64_t pixels, int64_t m, const int32_t* acc, void* y,
                     bool nhwc_out = false);

/// QLinearAdd over n elements: y = saturate(round_half_even(clip((a - za) * sa + (b - zb) * sb, lo, hi) / sy)
/// + zy), DequantizeLinear, Add, (Relu / Clip,) QuantizeLinear, in ONNX Runtime's f32 arithmetic for the
/// same pattern (where it fuses one, its QLinearAdd kernel's scale ratios and fused multiply-adds:
/// quantize.cc); a, b, y of types `at`, `bt`, `yt` (i8 / u8).
struct QAddParams {
  float sa = 1, sb = 1, sy = 1, lo = -3.4e38f, hi = 3.4e38f;
  int32_t za = 0, zb = 0, zy = 0;
  DType at = DType::kU8, bt = DType::kU8, yt = DType::kU8;
};
void qlinear_add(const QAddParams& p, int64_t n, const void* a, const void* b, void* y);
/// The layouts of QLinearAdd's operands: each NCHW or NHWC (int8 activations kept in the layout of
/// the int8 convolutions around them), over a 4-D [n, c, pixels] shape.
struct QAddLayouts {
  int64_t n = 1, c = 1, pixels = 1;
  bool a_nhwc = false, b_nhwc = false, y_nhwc = false;
};
/// dequantize_linear per tensor of 8-bit x [n, pixels, c] (NHWC) into y [n, c, pixels] (NCHW): the
/// same values, the transposition in the same pass.
void dequantize_nhwc(const void* x, DType t, int64_t n, int64_t c, int64_t pixels, float scale, int32_t zero_point,
                     float* y);
/// x [n, c, pixels] of 8-bit values copied from one layout into the other: NCHW -> NHWC, or
/// (`from_nhwc`) NHWC -> NCHW.
void relayout_8bit(const void* x, bool from_nhwc, int64_t n, int64_t c, int64_t pixels, void* y);
/// qlinear_add over operands in the layouts `l`: an operand in another layout than y's is read
/// through a transposed copy (per-thread scratch), then the elementwise pass.
void qlinear_add(const QAddParams& p, const QAddLayouts& l, const void* a, const void* b, void* y);

/// QLinearConv on our kernels: ConvInteger, then the requantisation, into y (i8 / u8).
void qlinear_conv(const ConvParams& p, const void* x, DType xt, const void* x_zero_point, const void* w, DType wt,
                  const void* w_zero_point, int64_t wz_count, const Requant& r, void* y);

}  // namespace fusert::cpu
