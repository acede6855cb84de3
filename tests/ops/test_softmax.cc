// Softmax end to end: the default last axis, an axis that is not last, numerical stability for
// large logits, a -inf row, and odd sizes against a naive loop.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

Tensor softmax(const Tensor& x, const std::string& attrs = "") {
  ModelBuilder m;
  m.input("x", x.shape()).node("Softmax", {"x"}, "y", attrs).output("y");
  return run1(m, x);
}

// Softmax over `axis` in double, max-subtracted.
std::vector<double> naive_softmax(const Tensor& x, int64_t axis) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t len = s[static_cast<size_t>(axis)];
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, static_cast<double>(x.f32()[(o * len + k) * inner + i]));
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.f32()[(o * len + k) * inner + i] - mx);
      for (int64_t k = 0; k < len; ++k) {
        size_t at = static_cast<size_t>((o * len + k) * inner + i);
        y[at] = std::exp(x.f32()[at] - mx) / sum;
      }
    }
  return y;
}

}  // namespace

TEST_CASE("Softmax over the last axis, by hand") {
  // exp([0, ln 2, ln 5]) = [1, 2, 5] / 8; a second row of equal values gives thirds.
  const float l2 = std::log(2.f), l5 = std::log(5.f);
  expect_values(softmax(Tensor::f32({2, 3}, {0, l2, l5, 7, 7, 7})), {2, 3},
                {0.125f, 0.25f, 0.625f, 1.f / 3, 1.f / 3, 1.f / 3}, 1e-6);
}

TEST_CASE("Softmax over a middle axis (axis 1 of [2, 3, 2]), by hand") {
  // Element (n, k, w) = x[(n * 3 + k) * 2 + w]; each (n, w) column of 3 is normalised.
  // n = 0, w = 0: [0, ln 2, ln 5] -> [1/8, 2/8, 5/8]; n = 0, w = 1: [1, 1, 1] -> thirds;
  // n = 1: w = 0 all 0 -> thirds; w = 1: [ln 3, 0, 0] -> [3/5, 1/5, 1/5].
  const float l2 = std::log(2.f), l3 = std::log(3.f), l5 = std::log(5.f);
  Tensor x = Tensor::f32({2, 3, 2}, {0, 1, l2, 1, l5, 1, 0, l3, 0, 0, 0, 0});
  const float t = 1.f / 3;
  std::vector<float> want{0.125f, t, 0.25f, t, 0.625f, t, t, 0.6f, t, 0.2f, t, 0.2f};
  expect_values(softmax(x, "axis: 1"), {2, 3, 2}, want, 1e-6);
  expect_values(softmax(x, "axis: -2"), {2, 3, 2}, want, 1e-6);
}

TEST_CASE("Softmax is stable for large logits and gives zeros for a row of -inf") {
  const float inf = std::numeric_limits<float>::infinity();
  expect_values(softmax(Tensor::f32({1, 2}, {1000, 1000})), {1, 2}, {0.5f, 0.5f}, 1e-6);
  expect_values(softmax(Tensor::f32({1, 3}, {-1000, 0, 1000})), {1, 3}, {0, 0, 1}, 1e-6);
  Tensor y = softmax(Tensor::f32({2, 2}, {-inf, -inf, 0, -inf}));
  expect_values(y, {2, 2}, {0, 0, 1, 0}, 0);
}

TEST_CASE("Softmax odd sizes along every axis against a naive loop") {
  const Shape shapes[] = {{3, 13, 5}, {1, 127}, {127, 1}, {2, 1, 13}, {13}};
  uint32_t seed = 60;
  for (const Shape& s : shapes) {
    Tensor x = random_tensor(s, seed++, -6.f, 6.f);
    for (int64_t axis = 0; axis < static_cast<int64_t>(s.size()); ++axis) {
      INFO(shape_str(s) << " axis " << axis);
      expect_close(softmax(x, "axis: " + std::to_string(axis)), s, naive_softmax(x, axis));
    }
  }
}
