// Constant folding of DequantizeLinear (internal to graph/passes): a quantised constant (the
// weights of a QDQ model, i8 or u8 with their scales and zero points) becomes the f32 constant
// the model computes from it, once at load, with the kernel's formula (graph/base/quant_math.h).
#pragma once

#include <optional>

#include "graph/base/tensor.h"

namespace fusert {

/// Element i of an i8, u8 or i32 tensor (a quantised value, a zero point, a bias) as int32.
int32_t quantised_value(const Tensor& t, int64_t i);

/// (x - zero_point) * scale per tensor, or per `axis` (normalised) when scale has several
/// values; zero_point nullable. nullopt for a dtype the op does not take.
std::optional<Tensor> fold_dequantize(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis);

}  // namespace fusert
