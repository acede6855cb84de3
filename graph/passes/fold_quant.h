// Constant folding of DequantizeLinear (internal to graph/passes): a quantised constant (the
// weights of a QDQ model, i8 or u8 with their scales and zero points) becomes the f32 constant
// the model computes from it, once at load, with the kernel's formula (graph/base/quant_math.h).
#pragma once

#include <optional>

#include "graph/base/tensor.h"

namespace fusert {

/// (x - zero_point) * scale per tensor, or per `axis` (normalised) when scale has several
/// values; zero_point nullable. nullopt for a dtype the op does not take.
std::optional<Tensor> fold_dequantize(const Tensor& x, const Tensor& scale, const Tensor* zero_point, int64_t axis);

}  // namespace fusert
