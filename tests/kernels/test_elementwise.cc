// Unary activations (cpu::unary over the rows of graph/base/unary_ops.def), Clip, HardSigmoid,
// HardSwish: exact values at the kinks, NaN propagation,
// in-place use, and a naive std:: loop over odd and parallel-sized counts.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> run_unary(cpu::EpOp kind, const std::vector<float>& x) {
  std::vector<float> y(x.size(), -777.f);
  cpu::unary(kind, 0.f, 0.f, static_cast<int64_t>(x.size()), x.data(), y.data());
  return y;
}

double reference(cpu::EpOp kind, double v) {
  switch (kind) {
    case cpu::EpOp::kRelu:
      return v > 0 ? v : 0;
    case cpu::EpOp::kSigmoid:
      return 1 / (1 + std::exp(-v));
    case cpu::EpOp::kTanh:
      return std::tanh(v);
    case cpu::EpOp::kErf:
      return std::erf(v);
    case cpu::EpOp::kSqrt:
      return std::sqrt(std::fabs(v));  // inputs made non-negative
    case cpu::EpOp::kNeg:
      return -v;
    case cpu::EpOp::kExp:
      return std::exp(v);
    case cpu::EpOp::kAbs:
      return std::fabs(v);
    case cpu::EpOp::kSoftplus:
      return std::log1p(std::exp(v));
    case cpu::EpOp::kIdentity:
      return v;
    default:
      return 0;
  }
}

}  // namespace

TEST_CASE("unary: hand values, including NaN and infinities") {
  using K = cpu::EpOp;
  expect_values(run_unary(K::kRelu, {-1, 0, 2.5f, kNaN, -kInf, kInf}), {0, 0, 2.5f, kNaN, 0, kInf});
  expect_values(run_unary(K::kSigmoid, {0, -100, 100, kNaN}), {0.5f, 0, 1, kNaN});
  expect_values(run_unary(K::kTanh, {0, 1, -20}), {0, 0.7615941559557649f, -1});
  expect_values(run_unary(K::kErf, {0, 1, -1}), {0, 0.8427007929497149f, -0.8427007929497149f});
  expect_values(run_unary(K::kSqrt, {4, 2, 0, -1}), {2, 1.4142135623730951f, 0, kNaN});
  expect_values(run_unary(K::kNeg, {1, -2, 0}), {-1, 2, 0});
  expect_values(run_unary(K::kExp, {0, 1, -kInf}), {1, 2.718281828459045f, 0});
  expect_values(run_unary(K::kAbs, {-2, 3, kNaN}), {2, 3, kNaN});
  expect_values(run_unary(K::kIdentity, {-2, 3, kNaN}), {-2, 3, kNaN});
}

TEST_CASE("unary: Sigmoid at the ends of its range: exact 0 and 1, no denormal, infinities") {
  // 1 / (1 + e^87) = 1.65e-38 is normal and stays; 1 / (1 + e^88.5) = 3.5e-39 is under FLT_MIN: 0.
  const auto y = run_unary(cpu::EpOp::kSigmoid, {-87.f, -88.5f, -1e4f, 1e4f, -kInf, kInf, 1.f, -1.f});
  CHECK(y[0] == doctest::Approx(1.0 / (1.0 + std::exp(87.0))).epsilon(1e-5));
  CHECK(y[1] == 0.f);
  CHECK(y[2] == 0.f);
  CHECK(y[3] == 1.f);
  CHECK(y[4] == 0.f);
  CHECK(y[5] == 1.f);
  CHECK(y[6] == doctest::Approx(0.7310585786).epsilon(1e-6));
  CHECK(y[7] == doctest::Approx(0.2689414214).epsilon(1e-6));
  for (float v : y) CHECK(std::fpclassify(v) != FP_SUBNORMAL);
}

TEST_CASE("unary: in place and against std:: over odd and large counts") {
  using K = cpu::EpOp;
  for (K kind :
       {K::kRelu, K::kSigmoid, K::kTanh, K::kErf, K::kSqrt, K::kNeg, K::kExp, K::kAbs, K::kSoftplus, K::kIdentity}) {
    for (int64_t count : {1, 3, 13, 127, 100003}) {
      auto x = random_floats(count, static_cast<uint32_t>(count), -4.f, 4.f);
      if (kind == K::kSqrt) {
        for (float& v : x) v = std::fabs(v);
      }
      std::vector<float> ref(x.size());
      for (size_t i = 0; i < x.size(); ++i) ref[i] = static_cast<float>(reference(kind, x[i]));
      INFO("kind=" << static_cast<int>(kind) << " count=" << count);
      CHECK(max_rel_err(run_unary(kind, x), ref) <= kTol);
      cpu::unary(kind, 0.f, 0.f, count, x.data(), x.data());
      CHECK(max_rel_err(x, ref) <= kTol);
    }
  }
}

TEST_CASE("clip: exact bounds and NaN") {
  const std::vector<float> x = {-2, -1, 0.5f, 1, 2, kNaN, -kInf, kInf};
  std::vector<float> y(x.size());
  cpu::unary(cpu::EpOp::kClip, -1.f, 1.f, static_cast<int64_t>(x.size()), x.data(), y.data());
  expect_values(y, {-1, -1, 0.5f, 1, 1, kNaN, -1, 1}, 0.0);
  // lo == hi collapses everything but NaN; ReLU6 style bounds.
  cpu::unary(cpu::EpOp::kClip, 0.25f, 0.25f, static_cast<int64_t>(x.size()), x.data(), y.data());
  expect_values(y, {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, kNaN, 0.25f, 0.25f}, 0.0);
  cpu::unary(cpu::EpOp::kClip, 0.f, 6.f, static_cast<int64_t>(x.size()), x.data(), y.data());
  expect_values(y, {0, 0, 0.5f, 1, 2, kNaN, 0, 6}, 0.0);
}

TEST_CASE("hard_sigmoid: exact values at -3, 0, 3 and the clamp edges") {
  const std::vector<float> x = {-3, 0, 3, -2.5f, 2.5f, 1, kNaN};
  std::vector<float> y(x.size());
  cpu::unary(cpu::EpOp::kHardSigmoid, 0.2f, 0.5f, static_cast<int64_t>(x.size()), x.data(), y.data());
  expect_values(y, {0, 0.5f, 1, 0, 1, 0.7f, kNaN});
  CHECK(y[0] == 0.f);
  CHECK(y[2] == 1.f);
  // The HardSwish gate (alpha 1/6) lands exactly on 0 and 1 at -3 and 3.
  cpu::unary(cpu::EpOp::kHardSigmoid, 1.f / 6.f, 0.5f, 3, x.data(), y.data());
  CHECK(y[0] == 0.f);
  CHECK(y[1] == 0.5f);
  CHECK(y[2] == 1.f);
}

TEST_CASE("hard_swish: exact values at -3, 0, 3, outside and NaN") {
  const std::vector<float> x = {-3, 0, 3, -4, 4, 1, -1.5f, kNaN};
  std::vector<float> y(x.size());
  cpu::unary(cpu::EpOp::kHardSwish, 0.f, 0.f, static_cast<int64_t>(x.size()), x.data(), y.data());
  // 1 * (1/6 + 1/2) = 2/3; -1.5 * (-0.25 + 0.5) = -0.375.
  expect_values(y, {0, 0, 3, 0, 4, 2.f / 3.f, -0.375f, kNaN});
  CHECK(y[0] == 0.f);
  CHECK(y[2] == 3.f);
  CHECK(y[4] == 4.f);
}

TEST_CASE("clip, hard_sigmoid, hard_swish: naive loop over odd and large counts") {
  for (int64_t count : {1, 3, 13, 127, 100003}) {
    const auto x = random_floats(count, static_cast<uint32_t>(count) + 7, -8.f, 8.f);
    std::vector<float> y(x.size()), ref(x.size());
    INFO("count=" << count);
    cpu::unary(cpu::EpOp::kClip, -1.5f, 2.f, count, x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) ref[i] = std::min(std::max(x[i], -1.5f), 2.f);
    CHECK(max_rel_err(y, ref) == 0.0);
    cpu::unary(cpu::EpOp::kHardSigmoid, 0.2f, 0.5f, count, x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ref[i] = static_cast<float>(std::max(0.0, std::min(1.0, 0.2 * x[i] + 0.5)));
    }
    CHECK(max_rel_err(y, ref) <= kTol);
    cpu::unary(cpu::EpOp::kHardSwish, 0.f, 0.f, count, x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ref[i] = static_cast<float>(x[i] * std::max(0.0, std::min(1.0, x[i] / 6.0 + 0.5)));
    }
    CHECK(max_rel_err(y, ref) <= kTol);
  }
}

TEST_CASE("unary: Erf and Gelu (Eigen's vectorised erf) within 1e-6 / 2e-6 of double precision; NaN, infinities") {
  // A dense grid over [-6, 6] against std::erf in double, errors over max(|value|, 0.4). Eigen's
  // rational approximation is off by 3.2e-7 at most (near +-3.9, about 5 ulps of 1; libm's erff 6e-8),
  // which Gelu's 1 + erf(x / sqrt(2)) carries to 7e-7 absolute near x = -5.6 (libm: 2e-7 over 0.4).
  std::vector<float> x;
  for (float v = -6.f; v <= 6.f; v += 1.f / 1024) x.push_back(v);
  for (float v : {1e-30f, -1e-20f, 3e-8f, 0.f, -0.f}) x.push_back(v);
  const std::vector<float> erf = run_unary(cpu::EpOp::kErf, x), gelu = run_unary(cpu::EpOp::kGelu, x);
  double worst_erf = 0, worst_gelu = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::erf(static_cast<double>(x[i]));
    const double g = 0.5 * x[i] * (1 + std::erf(x[i] / std::sqrt(2.0)));
    worst_erf = std::max(worst_erf, std::fabs(erf[i] - e) / std::max(std::fabs(e), 0.4));
    worst_gelu = std::max(worst_gelu, std::fabs(gelu[i] - g) / std::max(std::fabs(g), 0.4));
    if (std::fabs(x[i]) < 1e-3f) CHECK(std::fabs(erf[i] - e) <= 1e-6 * std::fabs(e));  // relative near 0
  }
  CHECK(worst_erf <= 1e-6);
  CHECK(worst_gelu <= 2e-6);
  // NaN anywhere in a span stays NaN (Eigen's clamp would turn it into +-1); the span's other values
  // stay right; infinities saturate as libm's.
  expect_values(run_unary(cpu::EpOp::kErf, {0.5f, kNaN, kInf, -kInf}), {0.5204998778f, kNaN, 1, -1});
  expect_values(run_unary(cpu::EpOp::kGelu, {1.f, kNaN, kInf, -1.f}), {0.8413447461f, kNaN, kInf, -0.1586552539f});
}
