// The arithmetic of ONNX's quantisation ops, one element at a time, shared by the CPU kernels
// (kernels/cpu/quantize.cc) and the import's tests: QuantizeLinear rounds half to even (the
// default floating-point rounding mode, as ONNX and numpy) and saturates to the target's range;
// DequantizeLinear subtracts the zero point in integers, then multiplies by the scale in f32.
#pragma once

#include <cmath>
#include <cstdint>

#include "graph/base/tensor.h"

namespace fusert::quant {

/// The range of an integer target: [-128, 127] for i8, [0, 255] for u8.
struct Range {
  int lo, hi;
};
constexpr Range kI8Range{-128, 127};
constexpr Range kU8Range{0, 255};

/// saturate(round_half_even(x / scale) + zero_point); +-inf saturate, NaN gives the low end of
/// the range (ONNX leaves it undefined; ONNX Runtime's kernels give the same). Branch-free so that
/// a loop of it vectorises (std::rint under the default rounding mode: half to even).
inline int quantize_one(float x, float scale, int zero_point, Range r) {
  float q = std::rint(x / scale) + static_cast<float>(zero_point);
  const float lo = static_cast<float>(r.lo), hi = static_cast<float>(r.hi);
  q = q > lo ? q : lo;
  q = q < hi ? q : hi;
  return static_cast<int>(q);
}

/// Element i of an i8, u8 or i32 tensor (a quantised value, a zero point, a bias) as int32.
inline int32_t value_at(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kI8:
      return static_cast<const int8_t*>(t.raw())[i];
    case DType::kU8:
      return static_cast<const uint8_t*>(t.raw())[i];
    default:
      return static_cast<const int32_t*>(t.raw())[i];
  }
}

/// (x - zero_point) * scale.
inline float dequantize_one(int32_t x, int32_t zero_point, float scale) {
  return static_cast<float>(static_cast<int64_t>(x) - zero_point) * scale;
}

}  // namespace fusert::quant
