// Broadcast binary ops: hand-computed broadcasts for every kind, then [2,3,4] against [3,1],
// [1], [2,1,4] and friends (both operand orders) and large per-channel / scalar shapes
// against a naive index-by-index loop.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;
using fusert::test::volume;
using Shape = std::vector<int64_t>;

namespace {

std::vector<float> run_binary(cpu::BinaryKind kind, const Shape& out, const Shape& as, const std::vector<float>& a,
                              const Shape& bs, const std::vector<float>& b) {
  std::vector<float> y(static_cast<size_t>(volume(out)), -777.f);
  cpu::binary(kind, out, as, a.data(), bs, b.data(), y.data());
  return y;
}

double apply(cpu::BinaryKind kind, double u, double v) {
  switch (kind) {
    case cpu::BinaryKind::kAdd:
      return u + v;
    case cpu::BinaryKind::kSub:
      return u - v;
    case cpu::BinaryKind::kMul:
      return u * v;
    case cpu::BinaryKind::kDiv:
      return u / v;
    case cpu::BinaryKind::kPow:
      return std::pow(u, v);
  }
  return 0;
}

// Walks every output index and maps it to each operand by zeroing broadcast coordinates.
std::vector<float> naive_binary(cpu::BinaryKind kind, const Shape& out, const Shape& as, const std::vector<float>& a,
                                const Shape& bs, const std::vector<float>& b) {
  const int64_t total = volume(out), rank = static_cast<int64_t>(out.size());
  std::vector<float> y(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) {
    int64_t rem = i, ai = 0, bi = 0, a_mul = 1, b_mul = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      ai += (as[d] == 1 ? 0 : idx) * a_mul;
      bi += (bs[d] == 1 ? 0 : idx) * b_mul;
      a_mul *= as[d], b_mul *= bs[d];
    }
    y[i] = static_cast<float>(apply(kind, a[ai], b[bi]));
  }
  return y;
}

}  // namespace

TEST_CASE("binary: hand-computed broadcasts for every kind") {
  using K = cpu::BinaryKind;
  const std::vector<float> a23 = {1, 2, 3, 4, 5, 6}, b3 = {10, 20, 30};
  expect_values(run_binary(K::kAdd, {2, 3}, {2, 3}, a23, {1, 3}, b3), {11, 22, 33, 14, 25, 36});
  expect_values(run_binary(K::kSub, {2, 3}, {1, 3}, b3, {2, 3}, a23), {9, 18, 27, 6, 15, 24});
  expect_values(run_binary(K::kMul, {2, 3}, {2, 1}, {1, 2}, {1, 3}, b3), {10, 20, 30, 20, 40, 60});
  expect_values(run_binary(K::kDiv, {2, 2}, {2, 2}, {1, 2, 3, 4}, {1, 1}, {2}), {0.5f, 1, 1.5f, 2});
  expect_values(run_binary(K::kPow, {2, 2}, {2, 2}, {1, 2, 3, 4}, {2, 1}, {2, 0.5f}), {1, 4, 1.7320508075688772f, 2});
  // [2,3,4] + [3,1] (padded to [1,3,1]): y[i][j][k] = a[i][j][k] + b[j].
  std::vector<float> a(24);
  for (int i = 0; i < 24; ++i) a[i] = static_cast<float>(i);
  const auto y = run_binary(K::kAdd, {2, 3, 4}, {2, 3, 4}, a, {1, 3, 1}, b3);
  CHECK(y[0] == 10);                   // a[0][0][0] + b[0]
  CHECK(y[1 * 12 + 2 * 4 + 3] == 53);  // a[1][2][3] = 23, + b[2] = 30
  CHECK(y[1 * 12 + 1 * 4 + 0] == 36);  // a[1][1][0] = 16, + b[1] = 20
}

TEST_CASE("binary: NaN and division by zero follow IEEE") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  expect_values(run_binary(cpu::BinaryKind::kAdd, {3}, {3}, {1, nan, 2}, {1}, {1}), {2, nan, 3});
  expect_values(run_binary(cpu::BinaryKind::kDiv, {3}, {3}, {1, -1, 0}, {1}, {0}), {inf, -inf, nan});
}

TEST_CASE("binary: matches naive loop for broadcast shapes in both operand orders") {
  // clang-format off
  const Shape shapes[][3] = {
      // out            a               b
      {{2, 3, 4}, {2, 3, 4}, {1, 3, 1}},
      {{2, 3, 4}, {2, 3, 4}, {1, 1, 1}},
      {{2, 3, 4}, {2, 3, 4}, {2, 1, 4}},
      {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},
      {{2, 3, 4}, {2, 1, 4}, {1, 3, 1}},
      {{3, 13, 127}, {3, 13, 127}, {1, 13, 1}},
      {{1, 127, 13, 3}, {1, 127, 13, 3}, {1, 127, 1, 1}},
      {{2, 64, 33, 31}, {2, 64, 33, 31}, {1, 64, 1, 1}},
      {{2, 64, 33, 31}, {2, 64, 33, 31}, {2, 64, 33, 31}},
      {{100003}, {100003}, {1}},
      {{1}, {1}, {1}},
      {{13, 1, 127}, {13, 1, 1}, {1, 1, 127}},
      // Short rows (a per-image gate in a 16-channel-blocked layout), work items of 1024 rows
      // that end mid-image, and an odometer over four outer dims that carries at item edges.
      {{3, 5, 1031, 16}, {3, 5, 1031, 16}, {3, 5, 1, 16}},
      {{4, 17, 5, 29, 8}, {4, 17, 5, 29, 8}, {4, 1, 5, 1, 8}},
      {{4, 17, 5, 29, 8}, {4, 1, 5, 1, 8}, {1, 17, 1, 29, 1}},
  };
  // clang-format on
  using K = cpu::BinaryKind;
  uint32_t seed = 900;
  for (const auto& s : shapes) {
    for (bool swap : {false, true}) {
      const Shape& as = swap ? s[2] : s[1];
      const Shape& bs = swap ? s[1] : s[2];
      const auto a = random_floats(volume(as), seed++, 0.5f, 2.f);  // positive: Pow stays real
      const auto b = random_floats(volume(bs), seed++, 0.5f, 2.f);
      for (K kind : {K::kAdd, K::kSub, K::kMul, K::kDiv, K::kPow}) {
        INFO("out volume " << volume(s[0]) << " swap=" << swap << " kind=" << int(kind));
        CHECK(max_rel_err(run_binary(kind, s[0], as, a, bs, b), naive_binary(kind, s[0], as, a, bs, b)) <= kTol);
      }
    }
  }
}

TEST_CASE("binary: output may alias a full-shape operand") {
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {10, 20};
  cpu::binary(cpu::BinaryKind::kMul, {2, 3}, {2, 3}, a.data(), {2, 1}, b.data(), a.data());
  expect_values(a, {10, 20, 30, 80, 100, 120});
}
