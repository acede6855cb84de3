// Softmax: hand values, the all -inf row (zeros), huge magnitudes (no NaN), inner > 1, NaN, and
// a naive double loop over odd sizes including an inner size wider than one column block.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> run_softmax(int64_t outer, int64_t len, int64_t inner, const std::vector<float>& x) {
  std::vector<float> y(x.size(), -777.f);
  cpu::softmax(outer, len, inner, x.data(), y.data());
  return y;
}

std::vector<float> naive_softmax(int64_t outer, int64_t len, int64_t inner, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * len * inner + i;
      double mx = -1e300, sum = 0;
      for (int64_t r = 0; r < len; ++r) mx = std::max(mx, double(x[base + r * inner]));
      for (int64_t r = 0; r < len; ++r) sum += std::exp(x[base + r * inner] - mx);
      for (int64_t r = 0; r < len; ++r) {
        y[base + r * inner] = static_cast<float>(std::exp(x[base + r * inner] - mx) / sum);
      }
    }
  return y;
}

}  // namespace

TEST_CASE("softmax: hand values") {
  // [0, ln 3] -> [1, 3] / 4; [1, 2, 3] -> e^k / (e + e^2 + e^3); a single entry is 1.
  expect_values(run_softmax(1, 2, 1, {0, std::log(3.f)}), {0.25f, 0.75f});
  expect_values(run_softmax(1, 3, 1, {1, 2, 3}), {0.09003057f, 0.24472847f, 0.66524096f});
  expect_values(run_softmax(2, 1, 1, {-5, 7}), {1, 1});
}

TEST_CASE("softmax: an all -inf row gives zeros, partial -inf rows stay finite") {
  const auto y = run_softmax(3, 3, 1, {-kInf, -kInf, -kInf, -kInf, 0, -kInf, 1, 2, 3});
  expect_values(y, {0, 0, 0, 0, 1, 0, 0.09003057f, 0.24472847f, 0.66524096f});
}

TEST_CASE("softmax: magnitudes of 1e30 produce no NaN") {
  expect_values(run_softmax(1, 3, 1, {1e30f, 1e30f, -1e30f}), {0.5f, 0.5f, 0});
  expect_values(run_softmax(1, 2, 1, {1e30f, 0}), {1, 0});
  expect_values(run_softmax(1, 2, 1, {-1e30f, -1e30f}), {0.5f, 0.5f});
  expect_values(run_softmax(1, 2, 1, {3e38f, -3e38f}), {1, 0});  // the difference overflows
}

TEST_CASE("softmax: inner > 1 reduces over the strided axis") {
  // [axis=2, inner=2]: column 0 is [0, ln 3] -> [0.25, 0.75], column 1 is [1, 1] -> [0.5, 0.5].
  expect_values(run_softmax(1, 2, 2, {0, 1, std::log(3.f), 1}), {0.25f, 0.5f, 0.75f, 0.5f});
  // A column of all -inf gives zeros without disturbing its neighbour.
  expect_values(run_softmax(1, 2, 2, {-kInf, 0, -kInf, 0}), {0, 0.5f, 0, 0.5f});
  expect_values(run_softmax(1, 2, 2, {1e30f, 5, -1e30f, 5}), {1, 0.5f, 0, 0.5f});
}

TEST_CASE("softmax: NaN in a row makes that row NaN only") {
  const auto y = run_softmax(2, 2, 1, {kNaN, 1, 0, 0});
  expect_values(y, {kNaN, kNaN, 0.5f, 0.5f});
  const auto z = run_softmax(1, 2, 2, {kNaN, 0, 1, 0});
  expect_values(z, {kNaN, 0.5f, kNaN, 0.5f});
}

TEST_CASE("softmax: matches naive loop over odd sizes") {
  const int64_t shapes[][3] = {{1, 1, 1},   {3, 13, 1},  {13, 127, 1}, {1, 1000, 1}, {3, 3, 3},
                               {2, 13, 13}, {1, 127, 3}, {2, 5, 300},  {127, 1, 3}};
  uint32_t seed = 700;
  for (const auto& s : shapes) {
    const auto x = random_floats(s[0] * s[1] * s[2], seed++, -20.f, 20.f);
    INFO("outer=" << s[0] << " len=" << s[1] << " inner=" << s[2]);
    CHECK(max_rel_err(run_softmax(s[0], s[1], s[2], x), naive_softmax(s[0], s[1], s[2], x)) <= kTol);
  }
}

TEST_CASE("softmax: rows of 30,000 with most logits equal stay within 1e-5 (the row sum in double)") {
  // 70% of the row at one value, as padding leaves it: a float sum drifted by 2.7e-5 here.
  for (int64_t inner : {int64_t{1}, int64_t{3}}) {
    const int64_t len = 30000;
    std::vector<float> x(static_cast<size_t>(len * inner));
    uint64_t state = 10;
    for (float& v : x) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double u = static_cast<double>(state >> 11) * 0x1.0p-53;
      v = u < 0.7 ? 0.f : static_cast<float>((u - 0.7) / 0.3 * 4);  // else uniform in [0, 4)
    }
    const std::vector<float> got = run_softmax(1, len, inner, x), want = naive_softmax(1, len, inner, x);
    double diff = 0, norm = 0;  // relative L2 (max_rel_err is absolute for values this small)
    for (size_t i = 0; i < got.size(); ++i) {
      diff += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      norm += double(want[i]) * want[i];
    }
    INFO("inner " << inner);
    CHECK(std::sqrt(diff / norm) <= 1e-5);
  }
}
