// BatchNormalization (inference): a hand-computed case and a naive loop over odd shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

TEST_CASE("batch_norm: hand-computed per-channel affine") {
  // ch0: (x - 1) * 2 / sqrt(3 + 1) + 1 = x;  ch1: (x - 2) * 1 / sqrt(0 + 1) + 0 = x - 2.
  const std::vector<float> x = {1, 2, 3, 4};
  const float scale[] = {2, 1}, bias[] = {1, 0}, mean[] = {1, 2}, var[] = {3, 0};
  std::vector<float> y(4);
  cpu::batch_norm(1, 2, 2, x.data(), scale, bias, mean, var, 1.f, y.data());
  expect_values(y, {1, 2, 1, 2});
  // In place, spatial == 1 (as after a Gemm): [N=2, C=2].
  std::vector<float> z = {1, 4, 3, 6};
  cpu::batch_norm(2, 2, 1, z.data(), scale, bias, mean, var, 1.f, z.data());
  expect_values(z, {1, 2, 3, 4});
}

TEST_CASE("batch_norm: matches naive formula over odd shapes") {
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 3, 13}, {2, 13, 127}, {3, 127, 3}, {1, 5, 20000}};
  uint32_t seed = 500;
  for (const auto& s : shapes) {
    const int64_t n = s[0], c = s[1], sp = s[2];
    const auto x = random_floats(n * c * sp, seed++, -3.f, 3.f);
    const auto scale = random_floats(c, seed++), bias = random_floats(c, seed++);
    const auto mean = random_floats(c, seed++), var = random_floats(c, seed++, 0.f, 2.f);
    const float eps = 1e-5f;
    std::vector<float> y(x.size()), ref(x.size());
    cpu::batch_norm(n, c, sp, x.data(), scale.data(), bias.data(), mean.data(), var.data(), eps, y.data());
    for (int64_t i = 0; i < n * c * sp; ++i) {
      const int64_t ch = (i / sp) % c;
      ref[i] = static_cast<float>((x[i] - double(mean[ch])) / std::sqrt(double(var[ch]) + eps) * scale[ch] + bias[ch]);
    }
    INFO("n=" << n << " c=" << c << " spatial=" << sp);
    CHECK(max_rel_err(y, ref) <= kTol);
  }
}
