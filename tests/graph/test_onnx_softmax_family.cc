// ONNX LogSoftmax and Hardmax imported and run, against values computed by hand (Python's math
// module, double precision): the last axis (contiguous rows, the vectorised path) and a middle
// axis (the column path), opset 11 (over the input coerced to 2-D at the axis) and 13, logits whose exp overflows
// float, -inf, +inf and NaN as ONNX's reference treats them, and Hardmax's ties and NaN.
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

// y = op(x) along `axis` (kNoAxis: the op's default), x of shape `xs`.
constexpr int64_t kNoAxis = 99;

Result<Tensor> try_run(const std::string& op, int64_t opset, const Shape& xs, const std::vector<float>& x, int64_t axis,
                       const char* fusion) {
  auto m = model(opset);
  auto* g = m.mutable_graph();
  add_input(g, "x", xs);
  auto* n = add_node(g, op, {"x"}, {"y"}, "s");
  if (axis != kNoAxis) int_attr(n, "axis", axis);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  FUSERT_ASSIGN_OR_RETURN(auto s, Session::load(save(m, op + std::to_string(opset) + ".onnx"), opt));
  FUSERT_ASSIGN_OR_RETURN(auto y, s->run({{"x", Tensor::f32(xs, x)}}));
  return y.at("y");
}

Tensor run(const std::string& op, int64_t opset, const Shape& xs, const std::vector<float>& x, int64_t axis,
           const char* fusion = "all") {
  auto y = try_run(op, opset, xs, x, axis, fusion);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return *y;
}

}  // namespace

TEST_CASE("onnx import: LogSoftmax by hand, last axis and middle axis") {
  const std::vector<float> x = {1, 2, 3, -1, 0, 5};  // [[1, 2, 3], [-1, 0, 5]]
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    const std::vector<float> rows = {-2.40760596f, -1.40760596f, -0.407605964f,
                                     -6.00917448f, -5.00917448f, -0.00917448459f};
    check_f32(run("LogSoftmax", 13, {2, 3}, x, kNoAxis, fusion), {2, 3}, rows);
    check_f32(run("LogSoftmax", 13, {2, 3}, x, -1, fusion), {2, 3}, rows);
    check_f32(run("LogSoftmax", 11, {2, 3}, x, kNoAxis, fusion), {2, 3}, rows);  // opset 11: axis 1
    // Axis 0 of [2, 3]: three columns of two.
    check_f32(run("LogSoftmax", 13, {2, 3}, x, 0, fusion), {2, 3},
              {-0.126928011f, -0.126928011f, -2.12692801f, -2.12692801f, -2.12692801f, -0.126928011f});
    // Axis 1 of [1, 2, 3]: the same columns, inner 3.
    check_f32(run("LogSoftmax", 13, {1, 2, 3}, x, 1, fusion), {1, 2, 3},
              {-0.126928011f, -0.126928011f, -2.12692801f, -2.12692801f, -2.12692801f, -0.126928011f});
  }
}

TEST_CASE("onnx import: LogSoftmax over a long row against the double formula") {
  // 1,000 logits in a row (Eigen's vectorised exp), and the same along a middle axis (columns).
  const int64_t n = 1000;
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * i) * 20.0);
  double mx = -1e300, sum = 0;
  for (float v : x) mx = std::max(mx, static_cast<double>(v));
  for (float v : x) sum += std::exp(v - mx);
  std::vector<float> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = static_cast<float>(x[i] - mx - std::log(sum));
  const Tensor row = run("LogSoftmax", 13, {1, n}, x, -1);
  const Tensor col = run("LogSoftmax", 13, {n, 1}, x, 0);
  for (size_t i = 0; i < x.size(); ++i) {
    CHECK(row.f32()[i] == doctest::Approx(want[i]).epsilon(1e-5));
    CHECK(col.f32()[i] == doctest::Approx(want[i]).epsilon(1e-5));
  }
}

TEST_CASE("onnx import: LogSoftmax of overflowing logits, -inf, +inf and NaN") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  // Rows: [1000, 1000] -> -log 2 each; [-inf, 0] -> [-inf, 0]; all -inf, a +inf, a NaN -> NaN
  // (ONNX's reference: x - max is NaN there, and so is the log of the sum).
  const std::vector<float> x = {1000, 1000, -inf, 0, -inf, -inf, 1, inf, nan, 1};
  for (int64_t axis : {-1, 0}) {
    CAPTURE(axis);
    // axis 0: the same rows laid out as the columns of a [2, 5] tensor.
    std::vector<float> in = x;
    if (axis == 0) {
      for (size_t r = 0; r < 5; ++r) {
        in[r] = x[2 * r];
        in[5 + r] = x[2 * r + 1];
      }
    }
    const Tensor y = axis == -1 ? run("LogSoftmax", 13, {5, 2}, in, -1) : run("LogSoftmax", 13, {2, 5}, in, 0);
    auto at = [&](size_t r, size_t j) { return y.f32()[axis == -1 ? 2 * r + j : 5 * j + r]; };
    CHECK(at(0, 0) == doctest::Approx(-0.693147181f));
    CHECK(at(0, 1) == doctest::Approx(-0.693147181f));
    CHECK(at(1, 0) == -inf);
    CHECK(at(1, 1) == 0.f);
    for (size_t r = 2; r < 5; ++r) {
      CHECK(std::isnan(at(r, 0)));
      CHECK(std::isnan(at(r, 1)));
    }
  }
}

TEST_CASE("onnx import: Hardmax by hand (first largest wins, a NaN wins)") {
  const float nan = std::nanf("");
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    // Rows [1, 3, 3] and [NaN, 0, 5]: the first of the tied 3s, the NaN.
    check_f32(run("Hardmax", 13, {2, 3}, {1, 3, 3, nan, 0, 5}, kNoAxis, fusion), {2, 3}, {0, 1, 0, 1, 0, 0});
    check_f32(run("Hardmax", 11, {2, 3}, {1, 3, 3, 2, 0, 5}, 1, fusion), {2, 3}, {0, 1, 0, 0, 0, 1});
    // Axis 0: columns [1, 2], [3, 0], [3, 5].
    check_f32(run("Hardmax", 13, {2, 3}, {1, 3, 3, 2, 0, 5}, 0, fusion), {2, 3}, {0, 1, 0, 1, 0, 1});
  }
}

TEST_CASE("onnx import: Softmax, LogSoftmax and Hardmax below opset 13 over dims 1..2 of a rank-3 input") {
  // Opset 11's coercion to 2-D: each of the 2 rows of [2, 3*4] is normalised as one; the
  // reference is the formula in double, written here.
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[static_cast<size_t>(i)] = std::sin(1.7f * static_cast<float>(i)) * 3.f;
  x[17] = x[13];  // a tie in row 1 for Hardmax: the first wins
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    CAPTURE(op);
    const Tensor y = run(op, 11, {2, 3, 4}, x, kNoAxis);  // axis 1, the default
    REQUIRE(y.shape() == Shape{2, 3, 4});
    for (int r = 0; r < 2; ++r) {
      double mx = -1e30, sum = 0;
      int arg = 0;
      for (int k = 0; k < 12; ++k) {
        const double v = x[static_cast<size_t>(r * 12 + k)];
        if (v > mx) mx = v, arg = k;
      }
      for (int k = 0; k < 12; ++k) sum += std::exp(x[static_cast<size_t>(r * 12 + k)] - mx);
      for (int k = 0; k < 12; ++k) {
        const double v = x[static_cast<size_t>(r * 12 + k)];
        const double want = std::string(op) == "Softmax"      ? std::exp(v - mx) / sum
                            : std::string(op) == "LogSoftmax" ? v - mx - std::log(sum)
                                                              : (k == arg ? 1.0 : 0.0);
        CHECK(y.f32()[r * 12 + k] == doctest::Approx(want).epsilon(1e-5));
      }
    }
  }
  // An axis out of range is still an error naming it.
  auto bad = try_run("LogSoftmax", 11, {2, 3, 4}, x, 3, "all");
  REQUIRE_FALSE(bad.ok());
  CHECK(has(bad.status().message(), "axis 3 out of range for a rank-3 input"));
}
