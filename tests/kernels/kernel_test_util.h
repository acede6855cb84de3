// Helpers shared by the CPU kernel tests: seeded random data, the abs+rel error measure that every
// naive-reference comparison uses, and an element-wise check for hand-computed expectations.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::test {

/// Bound for comparisons against a naive double-precision reference: err <= kTol * (1 + |ref|).
constexpr double kTol = 1e-4;

/// Number of elements of a shape (1 for a scalar).
inline int64_t volume(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

/// max_i |got_i - ref_i| / (1 + |ref_i|). NaN matches only NaN, an infinity only the same
/// infinity; any other mismatch (or a size mismatch) counts as an infinite error.
inline double max_rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (got.size() != ref.size()) return kInf;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    if (std::isnan(g) || std::isnan(r)) {
      if (std::isnan(g) != std::isnan(r)) return kInf;
      continue;
    }
    if (std::isinf(g) || std::isinf(r)) {
      if (g != r) return kInf;
      continue;
    }
    const double err = std::fabs(g - r) / (1.0 + std::fabs(r));
    if (err > worst) worst = err;
  }
  return worst;
}

/// Checks each element against a hand-computed value; NaN expects NaN, eps 0 means exact.
inline void expect_values(const std::vector<float>& got, const std::vector<float>& want, double eps = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("index " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (eps == 0.0 || std::isinf(want[i])) {  // Approx cannot express either
      CHECK(got[i] == want[i]);
    } else {
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(eps));
    }
  }
}

/// Conv parameters: n images of c x h x w, m filters k x k, stride, dilation, groups, pads (top, left,
/// bottom, right); the output size from them.
inline fusert::cpu::ConvParams conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t stride,
                                    int64_t dil, int64_t group, int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
  fusert::cpu::ConvParams p;
  p.n = n, p.c = c, p.h = h, p.w = w, p.m = m, p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.dil_h = p.dil_w = dil;
  p.group = group;
  p.pad_top = pt, p.pad_left = pl, p.pad_bottom = pb, p.pad_right = pr;
  p.oh = (h + pt + pb - dil * (k - 1) - 1) / stride + 1;
  p.ow = (w + pl + pr - dil * (k - 1) - 1) / stride + 1;
  return p;
}

}  // namespace fusert::test
