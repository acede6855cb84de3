// Erf and Gelu (graph/base/unary_ops.def's erf form) over a span with Eigen's vectorised erf: a
// rational approximation within a couple of ulps of libm's erff, which runs scalar (10-20 ns an
// element: 20% of a quantised MiniLM's time was erff). The formulas are the table's, in its order.
// Eigen clamps its argument to [-4, 4] first, which would turn NaN into +-1: a span holding a NaN
// is computed with libm instead, so NaN stays NaN. `x` and `y` may be the same buffer. Used by the
// unfused unary kernel and the epilogue steps alike, so fused and unfused plans compute the same.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <unsupported/Eigen/SpecialFunctions>

namespace fusert::cpu::detail {

inline bool has_nan(const float* x, int64_t n) {
  bool any = false;
  for (int64_t i = 0; i < n; ++i) any |= x[i] != x[i];
  return any;
}

/// y = erf(x)
inline void erf_span(const float* x, int64_t n, float* y) {
  if (n <= 0) return;
  if (has_nan(x, n)) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::erf(x[i]);
    return;
  }
  Eigen::Map<Eigen::ArrayXf>(y, n) = Eigen::Map<const Eigen::ArrayXf>(x, n).erf();
}

/// y = 0.5 * x * (1 + erf(x * 1/sqrt(2)))
inline void gelu_span(const float* x, int64_t n, float* y) {
  if (n <= 0) return;
  if (has_nan(x, n)) {
    for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.70710678118654752f));
    return;
  }
  const Eigen::Map<const Eigen::ArrayXf> xa(x, n);
  Eigen::Map<Eigen::ArrayXf>(y, n) = (0.5f * xa) * (1.0f + (xa * 0.70710678118654752f).erf());
}

}  // namespace fusert::cpu::detail
