// ONNX Range on host tensors (graph/base/range.h).
#include "graph/base/range.h"

#include <algorithm>
#include <cmath>

namespace fusert {

Result<Tensor> range_tensor(const Tensor& a, const Tensor& b, const Tensor& c, const std::string& where) {
  if (a.numel() != 1 || b.numel() != 1 || c.numel() != 1 || a.dtype() != b.dtype() || a.dtype() != c.dtype())
    return error(StatusCode::kParseError) << where << ": Range inputs must be scalars of one dtype";
  const DType t = a.dtype();
  if (t != DType::kF32 && t != DType::kI64 && t != DType::kI32)
    return error(StatusCode::kUnsupported) << where << ": Range of " << dtype_name(t);
  auto at = [t](const Tensor& x) {
    return t == DType::kF32   ? static_cast<double>(x.f32()[0])
           : t == DType::kI64 ? static_cast<double>(x.i64()[0])
                              : static_cast<double>(static_cast<const int32_t*>(x.raw())[0]);
  };
  const double start = at(a), limit = at(b), delta = at(c);
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return error(StatusCode::kInvalidArgument) << where << ": Range with delta 0 or a non-finite bound";
  const double n = std::max(0.0, std::ceil((limit - start) / delta));
  if (n > static_cast<double>(int64_t{16} << 20))
    return error(StatusCode::kUnsupported) << where << ": Range of " << n << " elements is too large";
  Tensor y(t, {static_cast<int64_t>(n)});
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
    if (t == DType::kF32)  // start + i * delta in the input type, as ONNX's reference accumulates
      y.f32()[i] = static_cast<float>(a.f32()[0] + static_cast<float>(i) * c.f32()[0]);
    else if (t == DType::kI64)
      y.i64()[i] = a.i64()[0] + i * c.i64()[0];
    else
      static_cast<int32_t*>(y.raw())[i] = static_cast<int32_t>(start + static_cast<double>(i) * delta);
  }
  return y;
}

}  // namespace fusert
