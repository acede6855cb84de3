// Elementwise and per-channel ops end to end: BatchNormalization (non-default epsilon), Relu,
// Clip (attributes and opset-17 constant inputs, exact bounds), Sigmoid, HardSigmoid, HardSwish,
// Identity. Hand-computed values, then odd sizes against a naive loop.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

ModelBuilder unary(const std::string& op, const Shape& s, const std::string& attrs = "") {
  ModelBuilder m;
  m.input("x", s).node(op, {"x"}, "y", attrs).output("y");
  return m;
}

// Runs `op` on 127 random values in [-8, 8] and compares with f evaluated in double.
template <typename F>
void odd_size_unary(const std::string& op, const std::string& attrs, F f) {
  for (const Shape& s : {Shape{127}, Shape{1, 13, 1}, Shape{3}, Shape{1}}) {
    INFO(op << " shape size " << numel(s));
    Tensor x = random_tensor(s, 5 + static_cast<uint32_t>(numel(s)), -8.f, 8.f);
    std::vector<double> ref;
    for (int64_t i = 0; i < x.numel(); ++i) ref.push_back(f(static_cast<double>(x.f32()[i])));
    expect_close(run1(unary(op, s, attrs), x), s, ref);
  }
}

}  // namespace

TEST_CASE("BatchNormalization with a non-default epsilon, by hand") {
  // eps 0.25 with var [3.75, 0] gives std [2, 0.5]; y = scale (x - mean) / std + B.
  // ch0 (scale 2, B 1, mean 0.5): x 2.5 -> 3, x -1.5 -> -1. ch1 (scale 0.5, B -1, mean 2):
  // x 3 -> 0, x 1 -> -2. With the default eps 1e-5, ch1 would divide by ~0.0032.
  ModelBuilder m;
  m.input("x", {1, 2, 1, 2})
      .constant("s", {2}, {2, 0.5f})
      .constant("b", {2}, {1, -1})
      .constant("mu", {2}, {0.5f, 2})
      .constant("var", {2}, {3.75f, 0})
      .node("BatchNormalization", {"x", "s", "b", "mu", "var"}, "y", "epsilon: 0.25")
      .output("y");
  expect_values(run1(m, Tensor::f32({1, 2, 1, 2}, {2.5f, -1.5f, 3, 1})), {1, 2, 1, 2}, {3, -1, 0, -2});
}

TEST_CASE("BatchNormalization on [N, C] and odd sizes against a naive loop") {
  for (const Shape& s : {Shape{2, 13, 3, 3}, Shape{3, 127}, Shape{1, 1, 1, 1}, Shape{1, 3, 13, 1}}) {
    const int64_t c = s[1];
    int64_t spatial = 1;
    for (size_t d = 2; d < s.size(); ++d) spatial *= s[d];
    std::vector<float> sc = random_floats(c, 1, 0.5f, 1.5f), bi = random_floats(c, 2), mu = random_floats(c, 3),
                       var = random_floats(c, 4, 0.f, 2.f);
    ModelBuilder m;
    m.input("x", s).constant("s", {c}, sc).constant("b", {c}, bi).constant("mu", {c}, mu).constant("var", {c}, var);
    m.node("BatchNormalization", {"x", "s", "b", "mu", "var"}, "y", "epsilon: 0.001").output("y");
    Tensor x = random_tensor(s, 9, -3.f, 3.f);
    std::vector<double> ref(static_cast<size_t>(x.numel()));
    for (int64_t i = 0; i < x.numel(); ++i) {
      size_t ch = static_cast<size_t>((i / spatial) % c);
      ref[static_cast<size_t>(i)] =
          sc[ch] * (x.f32()[i] - static_cast<double>(mu[ch])) / std::sqrt(var[ch] + 0.001) + bi[ch];
    }
    INFO("shape size " << numel(s));
    expect_close(run1(m, x), s, ref);
  }
}

TEST_CASE("Relu, by hand and odd sizes") {
  expect_values(run1(unary("Relu", {6}), Tensor::f32({6}, {-2, -0.5f, 0, 0.5f, 3, -kInf})), {6}, {0, 0, 0, 0.5f, 3, 0},
                0);
  expect_values(run1(unary("Relu", {2}), Tensor::f32({2}, {kInf, 1e-30f})), {2}, {kInf, 1e-30f}, 0);
  odd_size_unary("Relu", "", [](double v) { return v > 0 ? v : 0.0; });
}

TEST_CASE("Clip with attributes: exact bounds, inside values untouched, NaN propagates") {
  Tensor x = Tensor::f32({8}, {-3, -1, -0.999f, 0, 2, 2.0001f, 5, kNaN});
  expect_values(run1(unary("Clip", {8}, "min: -1, max: 2"), x), {8}, {-1, -1, -0.999f, 0, 2, 2, 2, kNaN}, 0);
  // Only max given: min keeps its default, the lowest float, so -1e30 passes unchanged.
  expect_values(run1(unary("Clip", {3}, "max: 0.5"), Tensor::f32({3}, {-1e30f, 0.25f, 7})), {3}, {-1e30f, 0.25f, 0.5f},
                0);
}

TEST_CASE("Clip with opset-17 constant min/max inputs (ReLU6), and with one of them omitted") {
  ModelBuilder relu6;
  relu6.input("x", {7})
      .constant("lo", {}, {0})
      .constant("hi", {}, {6})
      .node("Clip", {"x", "lo", "hi"}, "y")
      .output("y");
  Tensor x = Tensor::f32({7}, {-1, 0, 0.5f, 5.999f, 6, 6.5f, 100});
  expect_values(run1(relu6, x), {7}, {0, 0, 0.5f, 5.999f, 6, 6, 6}, 0);

  ModelBuilder only_max;
  only_max.input("x", {3}).constant("hi", {}, {1.5f}).node("Clip", {"x", "", "hi"}, "y").output("y");
  expect_values(run1(only_max, Tensor::f32({3}, {-100, 1, 2})), {3}, {-100, 1, 1.5f}, 0);

  ModelBuilder only_min;
  only_min.input("x", {3}).constant("lo", {1}, {-0.25f}).node("Clip", {"x", "lo"}, "y").output("y");
  expect_values(run1(only_min, Tensor::f32({3}, {-100, 1, 200})), {3}, {-0.25f, 1, 200}, 0);

  // Inputs win over attributes when both are present.
  ModelBuilder both;
  both.input("x", {3}).constant("hi", {}, {1}).node("Clip", {"x", "", "hi"}, "y", "max: 50").output("y");
  expect_values(run1(both, Tensor::f32({3}, {-2, 0.5f, 10})), {3}, {-2, 0.5f, 1}, 0);

  odd_size_unary("Clip", "min: -2.5, max: 3", [](double v) { return std::min(std::max(v, -2.5), 3.0); });
}

TEST_CASE("Sigmoid, by hand and odd sizes") {
  // 1 / (1 + e^-x): 0 -> 0.5, 2 -> 0.8807970779778823, -2 -> 0.11920292202211755; saturates
  // without NaN at +-100.
  Tensor y = run1(unary("Sigmoid", {5}), Tensor::f32({5}, {0, 2, -2, 100, -100}));
  expect_values(y, {5}, {0.5f, 0.880797078f, 0.119202922f, 1.f, 0.f}, 1e-6);
  CHECK(y.f32()[4] >= 0.f);
  CHECK(y.f32()[4] < 1e-30f);
  odd_size_unary("Sigmoid", "", [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
}

TEST_CASE("HardSigmoid with default and explicit alpha/beta") {
  // Defaults alpha 0.2, beta 0.5: max(0, min(1, 0.2 x + 0.5)).
  expect_values(run1(unary("HardSigmoid", {6}), Tensor::f32({6}, {-3, -2.5f, 0, 1, 2.5f, 3})), {6},
                {0, 0, 0.5f, 0.7f, 1, 1});
  expect_values(run1(unary("HardSigmoid", {4}, "alpha: 0.5, beta: 0.25"), Tensor::f32({4}, {-1, 0, 1, 2})), {4},
                {0, 0.25f, 0.75f, 1});
  odd_size_unary("HardSigmoid", "alpha: 0.125, beta: 0.375",
                 [](double v) { return std::max(0.0, std::min(1.0, 0.125 * v + 0.375)); });
}

TEST_CASE("HardSwish, by hand and odd sizes") {
  // x * max(0, min(1, x / 6 + 1/2)): -4 -> 0, -3 -> 0, -1 -> -1/3, 0 -> 0, 1 -> 2/3, 3 -> 3, 4 -> 4.
  expect_values(run1(unary("HardSwish", {7}), Tensor::f32({7}, {-4, -3, -1, 0, 1, 3, 4})), {7},
                {0, 0, -1.f / 3, 0, 2.f / 3, 3, 4});
  odd_size_unary("HardSwish", "", [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); });
}

TEST_CASE("Softplus, by hand, at the extremes and odd sizes") {
  // ln(1 + e^x): 0 -> ln 2; 1 -> 1.3132617; -1 -> 0.3132617; 100 -> 100 (no overflow);
  // -100 -> e^-100 = 3.72e-44 (a subnormal float); NaN stays NaN.
  Tensor y = run1(unary("Softplus", {7}), Tensor::f32({7}, {0, 1, -1, 100, -100, 20, kNaN}));
  expect_values(
      y, {7},
      {0.6931471805599453f, 1.3132616875182228f, 0.31326168751822286f, 100, 3.720076e-44f, 20.000000002061153f, kNaN});
  CHECK(y.f32()[3] == 100.f);
  CHECK(y.f32()[4] > 0.f);
  odd_size_unary("Softplus", "", [](double v) { return std::log1p(std::exp(v)); });
}

TEST_CASE("Swish (SiLU), by hand, with alpha, and odd sizes") {
  // x / (1 + e^-x): 1 -> 0.7310586; -1 -> -0.2689414; 2 -> 1.7615942; 100 -> 100; NaN stays NaN.
  expect_values(run1(unary("Swish", {6}), Tensor::f32({6}, {0, 1, -1, 2, 100, kNaN})), {6},
                {0, 0.7310585786300049f, -0.2689414213699951f, 1.7615941559557649f, 100, kNaN});
  // alpha 2: x * sigmoid(2x): 1 -> 0.8807971; -0.5 -> -0.5 * sigmoid(-1) = -0.1344707.
  expect_values(run1(unary("Swish", {2}, "alpha: 2.0"), Tensor::f32({2}, {1, -0.5f})), {2},
                {0.8807970779778823f, -0.13447071068499755f});
  odd_size_unary("Swish", "", [](double v) { return v / (1.0 + std::exp(-v)); });
}

TEST_CASE("Identity copies bits, including NaN, infinities and -0") {
  Tensor x = Tensor::f32({1, 5}, {-0.f, kInf, -kInf, 1e-40f, 3.25f});
  Tensor y = run1(unary("Identity", {1, 5}), x);
  for (int i = 0; i < 5; ++i) CHECK(std::signbit(y.f32()[i]) == std::signbit(x.f32()[i]));
  expect_values(y, {1, 5}, {-0.f, kInf, -kInf, 1e-40f, 3.25f}, 0);
  Tensor z = run1(unary("Identity", {13}), Tensor::f32({13}, std::vector<float>(13, kNaN)));
  for (int i = 0; i < 13; ++i) CHECK(std::isnan(z.f32()[i]));
  odd_size_unary("Identity", "", [](double v) { return v; });
}

TEST_CASE("a chain of elementwise ops on one input (ReLU6 then HardSwish) by hand") {
  ModelBuilder m;
  m.input("x", {4}).node("Clip", {"x"}, "c", "min: 0, max: 6").node("HardSwish", {"c"}, "y").output("y");
  // clip: [0, 1, 6, 3]; hardswish: [0, 2/3, 6, 3].
  expect_values(run1(m, Tensor::f32({4}, {-5, 1, 9, 3})), {4}, {0, 2.f / 3, 6, 3});
}

TEST_CASE("FakeQuantize (QuantizeLinear then DequantizeLinear), by hand and odd sizes") {
  // scale 0.5, low -128 (int8, zero point 0): x / 0.5 rounded half to even, clamped to [-128, 127],
  // times 0.5: 0.25 -> 0, 0.75 -> 1, -0.25 -> -0, 100 -> 63.5, -100 -> -64, NaN -> -64 (low end).
  expect_values(run1(unary("FakeQuantize", {6}, "scale: 0.5, low: -128.0"),
                     Tensor::f32({6}, {0.25f, 0.75f, -0.25f, 100, -100, kNaN})),
                {6}, {0, 1, 0, 63.5f, -64, -64});
  odd_size_unary("FakeQuantize", "scale: 0.0625, low: -3.0", [](double v) {
    const double r = std::nearbyint(v / 0.0625);  // exact: 0.0625 is a power of two
    return std::min(std::max(r, -3.0), 252.0) * 0.0625;
  });
}
