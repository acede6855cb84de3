// Constant folding of DequantizeLinear (graph/passes/fold_quant.h).
#include "graph/passes/fold_quant.h"

#include <cstring>

#include "graph/base/quant_math.h"

namespace fusert {

std::optional<Tensor> fold_dequantize(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis) {
  const DType t = x.dtype();
  if (t != DType::kI8 && t != DType::kU8 && t != DType::kI32) return std::nullopt;
  if (scale.dtype() != DType::kF32 || (zero_point && zero_point->dtype() != t)) return std::nullopt;
  const Shape& s = x.shape();
  int64_t channels = 1, inner = x.numel();
  if (scale.numel() > 1) {
    if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return std::nullopt;
    channels = s[static_cast<size_t>(axis)];
    inner = shape_numel(Shape(s.begin() + axis + 1, s.end()));
    if (channels != scale.numel()) return std::nullopt;
  }
  Tensor y(DType::kF32, s);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = inner == 0 ? 0 : (i / inner) % channels;
    y.f32()[i] =
        quant::dequantize_one(quant::value_at(x, i), zero_point ? quant::value_at(*zero_point, c) : 0, scale.f32()[c]);
  }
  return y;
}

}  // namespace fusert
