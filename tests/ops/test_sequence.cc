// Sequence-model ops end to end (the Transformer rows of graph/ops.def): LayerNormalization,
// Gelu, Erf, Tanh, Sqrt, Pow, ReduceMean, ReduceSum, Split, Slice, Gather, Unsqueeze, Where,
// Cast. Hand-computed values (reference numbers from Python's math module), odd sizes against a
// naive loop where the op computes, and the run-time Gather range check.
#include <doctest/doctest.h>

#include <limits>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

std::vector<float> iota(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

Tensor i64_tensor(const Shape& s, const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, s);
  REQUIRE(t.numel() == static_cast<int64_t>(v.size()));
  std::memcpy(t.raw(), v.data(), v.size() * 8);
  return t;
}

Tensor bool_tensor(const Shape& s, const std::vector<uint8_t>& v) {
  Tensor t(DType::kBool, s);
  REQUIRE(t.numel() == static_cast<int64_t>(v.size()));
  std::memcpy(t.raw(), v.data(), v.size());
  return t;
}

ModelBuilder unary(const std::string& op, const Shape& s, const std::string& attrs = "") {
  ModelBuilder m;
  m.input("x", s).node(op, {"x"}, "y", attrs).output("y");
  return m;
}

template <typename F>
void odd_unary(const std::string& op, const std::string& attrs, float lo, float hi, F f) {
  for (const Shape& s : {Shape{127}, Shape{13, 1}, Shape{1}}) {
    Tensor x = random_tensor(s, 20 + static_cast<uint32_t>(numel(s)), lo, hi);
    std::vector<double> ref;
    for (int64_t i = 0; i < x.numel(); ++i) ref.push_back(f(static_cast<double>(x.f32()[i])));
    INFO(op << " " << shape_str(s));
    expect_close(run1(unary(op, s, attrs), x), s, ref);
  }
}

}  // namespace

TEST_CASE("LayerNormalization over the last axis, by hand") {
  // Row [1, 2, 3, 4]: mean 2.5, population variance 1.25; epsilon 2.75 makes the std exactly 2:
  // normalised [-0.75, -0.25, 0.25, 0.75] * [1, 2, 3, 4] + [0, 0, 0, 1]. A constant row
  // normalises to 0, leaving the bias.
  ModelBuilder m;
  m.input("x", {2, 4}).constant("s", {4}, {1, 2, 3, 4}).constant("b", {4}, {0, 0, 0, 1});
  m.node("LayerNormalization", {"x", "s", "b"}, "y", "epsilon: 2.75").output("y");
  expect_values(run1(m, Tensor::f32({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2})), {2, 4}, {-0.75f, -0.5f, 0.75f, 4, 0, 0, 0, 1});
}

TEST_CASE("LayerNormalization over the last two axes, without bias, and odd sizes") {
  // axis 1 of [2, 2, 2]: each [2, 2] block; block [0, 1, 2, 3]: mean 1.5, var 1.25, eps 2.75 -> std 2.
  ModelBuilder m;
  m.input("x", {2, 2, 2}).constant("s", {2, 2}, {1, 1, 1, 2});
  m.node("LayerNormalization", {"x", "s"}, "y", "axis: 1, epsilon: 2.75").output("y");
  expect_values(run1(m, Tensor::f32({2, 2, 2}, {0, 1, 2, 3, 10, 11, 12, 13})), {2, 2, 2},
                {-0.75f, -0.25f, 0.25f, 1.5f, -0.75f, -0.25f, 0.25f, 1.5f});
  for (const Shape& s : {Shape{3, 13}, Shape{1, 127}, Shape{13, 1}}) {
    const int64_t inner = s[1];
    std::vector<float> sc = random_floats(inner, 3, 0.5f, 1.5f), bi = random_floats(inner, 4);
    ModelBuilder r;
    r.input("x", s).constant("s", {inner}, sc).constant("b", {inner}, bi);
    r.node("LayerNormalization", {"x", "s", "b"}, "y", "epsilon: 0.00001").output("y");
    Tensor x = random_tensor(s, 5, -4.f, 4.f);
    std::vector<double> ref;
    for (int64_t o = 0; o < s[0]; ++o) {
      double mean = 0, var = 0;
      for (int64_t i = 0; i < inner; ++i) mean += x.f32()[o * inner + i];
      mean /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) var += std::pow(x.f32()[o * inner + i] - mean, 2);
      var /= static_cast<double>(inner);
      for (int64_t i = 0; i < inner; ++i) {
        ref.push_back((x.f32()[o * inner + i] - mean) / std::sqrt(var + 1e-5) * sc[static_cast<size_t>(i)] +
                      bi[static_cast<size_t>(i)]);
      }
    }
    INFO(shape_str(s));
    expect_close(run1(r, x), s, ref);
  }
}

TEST_CASE("Gelu exact (erf) and tanh approximation, by hand and odd sizes") {
  Tensor x = Tensor::f32({5}, {0, 1, -1, 3, -3});
  expect_values(run1(unary("Gelu", {5}), x), {5}, {0, 0.841344746f, -0.158655254f, 2.99595031f, -0.00404969409f}, 1e-5);
  expect_values(run1(unary("Gelu", {5}, "approximate: tanh"), x), {5},
                {0, 0.841191991f, -0.158808009f, 2.99636261f, -0.00363739208f}, 1e-5);
  odd_unary("Gelu", "", -6.f, 6.f, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  odd_unary("Gelu", "approximate: tanh", -6.f, 6.f, [](double v) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
  });
}

TEST_CASE("Erf, Tanh, Sqrt, by hand and odd sizes") {
  expect_values(run1(unary("Erf", {4}), Tensor::f32({4}, {0, 0.5f, -1, 3})), {4},
                {0, 0.520499878f, -0.842700793f, 0.999977910f}, 1e-6);
  expect_values(run1(unary("Tanh", {4}), Tensor::f32({4}, {0, 0.5f, -2, 20})), {4}, {0, 0.462117157f, -0.964027580f, 1},
                1e-6);
  Tensor s = run1(unary("Sqrt", {4}), Tensor::f32({4}, {0, 4, 2, -1}));
  expect_values(s, {4}, {0, 2, 1.41421356f, std::numeric_limits<float>::quiet_NaN()}, 1e-7);
  odd_unary("Erf", "", -4.f, 4.f, [](double v) { return std::erf(v); });
  odd_unary("Tanh", "", -10.f, 10.f, [](double v) { return std::tanh(v); });
  odd_unary("Sqrt", "", 0.f, 100.f, [](double v) { return std::sqrt(v); });
}

TEST_CASE("Pow with broadcasting: integer and fractional exponents, negative bases") {
  ModelBuilder m;
  m.input("x", {4}).constant("e", {}, {3}).node("Pow", {"x", "e"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({4}, {2, 3, -2, 0.5f})), {4}, {8, 27, -8, 0.125f});
  ModelBuilder h;
  h.input("x", {2, 1}).constant("e", {3}, {0.5f, 0, -1}).node("Pow", {"x", "e"}, "y").output("y");
  Tensor y = run1(h, Tensor::f32({2, 1}, {4, -4}));
  expect_values(y, {2, 3}, {2, 1, 0.25f, std::numeric_limits<float>::quiet_NaN(), 1, -0.25f});
}

TEST_CASE("ReduceMean: axes, keepdims, all axes, negative axes, noop_with_empty_axes") {
  Tensor x = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(run1(unary("ReduceMean", {2, 3}, "axes: [1]"), x), {2, 1}, {2, 5});
  expect_values(run1(unary("ReduceMean", {2, 3}, "axes: [-1], keepdims: 0"), x), {2}, {2, 5});
  expect_values(run1(unary("ReduceMean", {2, 3}, "axes: [0]"), x), {1, 3}, {2.5f, 3.5f, 4.5f});
  expect_values(run1(unary("ReduceMean", {2, 3}), x), {1, 1}, {3.5f});
  expect_values(run1(unary("ReduceMean", {2, 3}, "keepdims: 0"), x), {}, {3.5f});
  expect_values(run1(unary("ReduceMean", {2, 3}, "noop_with_empty_axes: 1"), x), {2, 3}, {1, 2, 3, 4, 5, 6});
  // Odd: [3, 13, 5] over axis 1 against a naive loop.
  Tensor r = random_tensor({3, 13, 5}, 8);
  std::vector<double> ref;
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < 5; ++c) {
      double s = 0;
      for (int64_t b = 0; b < 13; ++b) s += r.f32()[(a * 13 + b) * 5 + c];
      ref.push_back(s / 13);
    }
  expect_close(run1(unary("ReduceMean", {3, 13, 5}, "axes: [1], keepdims: 0"), r), {3, 5}, ref);
}

TEST_CASE("ReduceSum with axes from an i64 constant input, and over all axes") {
  Tensor x = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  ModelBuilder m;
  m.input("x", {2, 3}).constant_i64("axes", {0}).node("ReduceSum", {"x", "axes"}, "y", "keepdims: 0").output("y");
  expect_values(run1(m, x), {3}, {5, 7, 9});
  expect_values(run1(unary("ReduceSum", {2, 3}), x), {1, 1}, {21});
  ModelBuilder two;
  two.input("x", {2, 3, 127}).constant_i64("axes", {2, 0}).node("ReduceSum", {"x", "axes"}, "y").output("y");
  Tensor r = random_tensor({2, 3, 127}, 12);
  std::vector<double> ref(3, 0.0);
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 127; ++c) ref[static_cast<size_t>(b)] += r.f32()[(a * 3 + b) * 127 + c];
  expect_close(run1(two, r), {1, 3, 1}, ref);
}

TEST_CASE("Split into given sizes and into equal parts") {
  ModelBuilder m;
  m.input("x", {2, 6}).constant_i64("split", {1, 2, 3}).node("Split", {"x", "split"}, "a, b, c", "axis: 1");
  m.output("a").output("b").output("c");
  TensorMap out = run_model(m, {{"x", Tensor::f32({2, 6}, iota(12))}});
  expect_values(out.at("a"), {2, 1}, {0, 6}, 0);
  expect_values(out.at("b"), {2, 2}, {1, 2, 7, 8}, 0);
  expect_values(out.at("c"), {2, 3}, {3, 4, 5, 9, 10, 11}, 0);
  ModelBuilder eq;
  eq.input("x", {3, 2}).node("Split", {"x"}, "p, q, r").output("p").output("q").output("r");
  TensorMap o2 = run_model(eq, {{"x", Tensor::f32({3, 2}, iota(6))}});
  expect_values(o2.at("p"), {1, 2}, {0, 1}, 0);
  expect_values(o2.at("r"), {1, 2}, {4, 5}, 0);
}

TEST_CASE("Slice with axes and steps, negative indices, and a reversal") {
  // x [3, 4] = 0..11: rows 1..2, columns 0 and 2.
  ModelBuilder m;
  m.input("x", {3, 4})
      .constant_i64("st", {1, 0})
      .constant_i64("en", {3, 4})
      .constant_i64("ax", {0, 1})
      .constant_i64("sp", {1, 2});
  m.node("Slice", {"x", "st", "en", "ax", "sp"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({3, 4}, iota(12))), {2, 2}, {4, 6, 8, 10}, 0);
  // Columns reversed: starts -1, ends far below -4 (clamped to -1), step -1.
  ModelBuilder rev;
  rev.input("x", {3, 4})
      .constant_i64("st", {-1})
      .constant_i64("en", {-1000})
      .constant_i64("ax", {1})
      .constant_i64("sp", {-1});
  rev.node("Slice", {"x", "st", "en", "ax", "sp"}, "y").output("y");
  expect_values(run1(rev, Tensor::f32({3, 4}, iota(12))), {3, 4}, {3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}, 0);
  // No axes/steps: leading axes; ends past the end are clamped; negative start counts from the end.
  ModelBuilder lead;
  lead.input("x", {3, 4}).constant_i64("st", {-2}).constant_i64("en", {100});
  lead.node("Slice", {"x", "st", "en"}, "y").output("y");
  expect_values(run1(lead, Tensor::f32({3, 4}, iota(12))), {2, 4}, {4, 5, 6, 7, 8, 9, 10, 11}, 0);
  // Odd: every third of 127 starting at 1 -> 42 values.
  ModelBuilder odd;
  odd.input("x", {127})
      .constant_i64("st", {1})
      .constant_i64("en", {127})
      .constant_i64("ax", {0})
      .constant_i64("sp", {3});
  odd.node("Slice", {"x", "st", "en", "ax", "sp"}, "y").output("y");
  std::vector<float> want;
  for (int i = 1; i < 127; i += 3) want.push_back(static_cast<float>(i));
  expect_values(run1(odd, Tensor::f32({127}, iota(127))), {42}, want, 0);
}

TEST_CASE("Gather: embedding rows by i64 indices (negative allowed), along axis 1, and range errors") {
  // Table [4, 3] = 0..11; indices [[3, 0], [-1, 1]] -> rows 3, 0, 3, 1.
  ModelBuilder m;
  m.input("ids", {2, 2}, "i64").constant("table", {4, 3}, iota(12)).node("Gather", {"table", "ids"}, "y").output("y");
  TensorMap out = run_model(m, {{"ids", i64_tensor({2, 2}, {3, 0, -1, 1})}});
  expect_values(out.at("y"), {2, 2, 3}, {9, 10, 11, 0, 1, 2, 9, 10, 11, 3, 4, 5}, 0);
  ModelBuilder ax;
  ax.input("x", {2, 3}).constant_i64("idx", {2, 2, 0}).node("Gather", {"x", "idx"}, "y", "axis: 1").output("y");
  expect_values(run1(ax, Tensor::f32({2, 3}, iota(6))), {2, 3}, {2, 2, 0, 5, 5, 3}, 0);

  // An index out of range at run time is an error naming the node, the tensor and the index.
  std::string path = scratch_dir() + "/gather_range.yaml";
  {
    std::ofstream f(path);
    f << m.yaml();
  }
  auto s = Session::load(path, SessionOptions());
  REQUIRE(s.ok());
  auto bad = (*s)->run({{"ids", i64_tensor({2, 2}, {0, 4, 1, 1})}});
  REQUIRE_FALSE(bad.ok());
  const std::string msg = bad.status().message();
  INFO(msg);
  CHECK(msg.find("(Gather): index 4 at position 1 of 'ids' is out of range [0, 4)") != std::string::npos);
  auto neg = (*s)->run({{"ids", i64_tensor({2, 2}, {0, -5, 1, 1})}});
  REQUIRE_FALSE(neg.ok());
  CHECK(neg.status().message().find("index -5") != std::string::npos);
}

TEST_CASE("Unsqueeze inserts size-1 axes (negative axes count in the output rank)") {
  ModelBuilder m;
  m.input("x", {3}).constant_i64("ax", {0, -1}).node("Unsqueeze", {"x", "ax"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({3}, {1, 2, 3})), {1, 3, 1}, {1, 2, 3}, 0);
  ModelBuilder mid;
  mid.input("x", {2, 13}).constant_i64("ax", {1}).node("Unsqueeze", {"x", "ax"}, "y").output("y");
  expect_values(run1(mid, Tensor::f32({2, 13}, iota(26))), {2, 1, 13}, iota(26), 0);
}

TEST_CASE("Where selects with a broadcast bool condition") {
  ModelBuilder m;
  m.input("c", {1, 3}, "bool").input("x", {2, 3}).input("o", {2, 1});
  m.node("Where", {"c", "x", "o"}, "y").output("y");
  TensorMap out = run_model(m, {{"c", bool_tensor({1, 3}, {1, 0, 1})},
                                {"x", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                                {"o", Tensor::f32({2, 1}, {-1, -2})}});
  expect_values(out.at("y"), {2, 3}, {1, -1, 3, 4, -2, 6}, 0);
}

TEST_CASE("Cast between f32, i64 and bool") {
  ModelBuilder to_i64;
  to_i64.input("x", {4}).node("Cast", {"x"}, "y", "to: 7").output("y");
  TensorMap a = run_model(to_i64, {{"x", Tensor::f32({4}, {1.7f, -1.7f, 3, 0})}});
  REQUIRE(a.at("y").dtype() == DType::kI64);
  CHECK(std::vector<int64_t>(a.at("y").i64(), a.at("y").i64() + 4) ==
        std::vector<int64_t>{1, -1, 3, 0});  // toward zero
  ModelBuilder to_f32;
  to_f32.input("x", {3}, "i64").node("Cast", {"x"}, "y", "to: 1").output("y");
  TensorMap b = run_model(to_f32, {{"x", i64_tensor({3}, {-3, 0, int64_t{1} << 24})}});
  expect_values(b.at("y"), {3}, {-3, 0, 16777216.f}, 0);
  ModelBuilder to_bool;
  to_bool.input("x", {4}).node("Cast", {"x"}, "y", "to: 9").output("y");
  TensorMap c = run_model(to_bool, {{"x", Tensor::f32({4}, {0, -0.f, 0.5f, -2})}});
  REQUIRE(c.at("y").dtype() == DType::kBool);
  const uint8_t* bv = static_cast<const uint8_t*>(c.at("y").raw());
  CHECK(std::vector<uint8_t>(bv, bv + 4) == std::vector<uint8_t>{0, 0, 1, 1});
}

TEST_CASE("Cast to and from 8 bits: truncation, the low byte of what leaves the range (as numpy / ONNX Runtime)") {
  ModelBuilder to_u8;
  to_u8.input("x", {7}).node("Cast", {"x"}, "y", "to: 2").output("y");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TensorMap a = run_model(to_u8, {{"x", Tensor::f32({7}, {0.f, 1.9f, 255.f, 300.5f, -1.f, -0.9f, nan})}});
  REQUIRE(a.at("y").dtype() == DType::kU8);
  const auto* u = static_cast<const uint8_t*>(a.at("y").raw());
  // 300 -> 300 mod 256 = 44; -1 -> 255; -0.9 -> 0 (toward zero); NaN -> 0 (int32's minimum, low byte)
  CHECK(std::vector<int>(u, u + 7) == std::vector<int>{0, 1, 255, 44, 255, 0, 0});
  ModelBuilder to_i8;
  to_i8.input("x", {5}, "i64").node("Cast", {"x"}, "y", "to: 3").output("y");
  TensorMap b = run_model(to_i8, {{"x", i64_tensor({5}, {-128, 127, 128, -129, 1000})}});
  REQUIRE(b.at("y").dtype() == DType::kI8);
  const auto* s = static_cast<const int8_t*>(b.at("y").raw());
  CHECK(std::vector<int>(s, s + 5) == std::vector<int>{-128, 127, -128, 127, -24});  // 1000 = 3 * 256 + 232
  // And back: u8 -> f32 (the values, not the bytes as signed) and i8 -> i32.
  ModelBuilder back;
  back.input("x", {7})
      .node("Cast", {"x"}, "q", "to: 2")
      .node("Cast", {"q"}, "f", "to: 1")
      .node("Cast", {"q"}, "i", "to: 3")
      .node("Cast", {"i"}, "j", "to: 6")
      .output("f")
      .output("j");
  TensorMap c = run_model(back, {{"x", Tensor::f32({7}, {0.f, 1.9f, 255.f, 300.5f, -1.f, -0.9f, nan})}});
  expect_values(c.at("f"), {7}, {0, 1, 255, 44, 255, 0, 0}, 0);
  REQUIRE(c.at("j").dtype() == DType::kI32);
  const auto* j = static_cast<const int32_t*>(c.at("j").raw());
  CHECK(std::vector<int>(j, j + 7) == std::vector<int>{0, 1, -1, 44, -1, 0, 0});
}
