// Add / Sub / Mul / Div with numpy broadcasting end to end: hand-computed small cases (row,
// column, scalar, constant on either side, both sides broadcasting) and odd sizes against a
// naive broadcasting loop.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// y = a OP b where a is the input "x" and b the input "b" (or a constant when `b_const`).
Tensor binary(const std::string& op, const Tensor& a, const Tensor& b, bool b_first = false) {
  ModelBuilder m;
  m.input("x", a.shape()).input("b", b.shape());
  m.node(op, b_first ? std::vector<std::string>{"b", "x"} : std::vector<std::string>{"x", "b"}, "y").output("y");
  TensorMap out = run_model(m, {{"x", a}, {"b", b}});
  return out.at("y");
}

double apply(const std::string& op, double a, double b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  return a / b;
}

// Naive numpy broadcasting: index each output element back into both inputs.
std::vector<double> naive_broadcast(const std::string& op, const Tensor& a, const Tensor& b, Shape* out_shape) {
  const size_t r = std::max(a.shape().size(), b.shape().size());
  Shape as = a.shape(), bs = b.shape();
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  Shape os(r);
  for (size_t d = 0; d < r; ++d) os[d] = std::max(as[d], bs[d]);
  std::vector<int64_t> ast = strides_of(as), bst = strides_of(bs);
  std::vector<double> y(static_cast<size_t>(numel(os)));
  for (int64_t i = 0; i < numel(os); ++i) {
    int64_t rem = i, ia = 0, ib = 0;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % os[d];
      rem /= os[d];
      if (as[d] != 1) ia += idx * ast[d];
      if (bs[d] != 1) ib += idx * bst[d];
    }
    y[static_cast<size_t>(i)] = apply(op, a.f32()[ia], b.f32()[ib]);
  }
  *out_shape = os;
  return y;
}

}  // namespace

TEST_CASE("Add broadcasts a row, a column and a scalar, by hand") {
  Tensor a = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(binary("Add", a, Tensor::f32({3}, {10, 20, 30})), {2, 3}, {11, 22, 33, 14, 25, 36}, 0);
  expect_values(binary("Add", a, Tensor::f32({2, 1}, {100, 200})), {2, 3}, {101, 102, 103, 204, 205, 206}, 0);
  expect_values(binary("Add", a, Tensor::f32({}, {0.5f})), {2, 3}, {1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}, 0);
  // Both sides broadcast: [2, 1] + [1, 3] -> [2, 3].
  expect_values(binary("Add", Tensor::f32({2, 1}, {1, 2}), Tensor::f32({1, 3}, {10, 20, 30})), {2, 3},
                {11, 21, 31, 12, 22, 32}, 0);
}

TEST_CASE("Sub is not commutative: the broadcast operand on either side") {
  Tensor a = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor col = Tensor::f32({2, 1}, {1, 2});
  expect_values(binary("Sub", a, col), {2, 3}, {0, 1, 2, 2, 3, 4}, 0);
  expect_values(binary("Sub", a, col, /*b_first=*/true), {2, 3}, {0, -1, -2, -2, -3, -4}, 0);
}

TEST_CASE("Mul with a per-channel constant [C, 1, 1] on NCHW (the BN-scale pattern)") {
  ModelBuilder m;
  m.input("x", {1, 2, 2, 2}).constant("s", {2, 1, 1}, {2, -0.5f}).node("Mul", {"x", "s"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})), {1, 2, 2, 2},
                {2, 4, 6, 8, -2.5f, -3, -3.5f, -4}, 0);
  // The constant first.
  ModelBuilder k;
  k.input("x", {3}).constant("c", {}, {3}).node("Mul", {"c", "x"}, "y").output("y");
  expect_values(run1(k, Tensor::f32({3}, {1, -2, 0.5f})), {3}, {3, -6, 1.5f}, 0);
}

TEST_CASE("Div: broadcasting, division by zero gives IEEE infinities and NaN") {
  Tensor a = Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_values(binary("Div", a, Tensor::f32({1, 3}, {1, 2, 4})), {2, 3}, {1, 1, 0.75f, 4, 2.5f, 1.5f}, 0);
  expect_values(binary("Div", a, Tensor::f32({2, 1}, {2, 8}), true), {2, 3}, {2, 1, 2.f / 3, 2, 1.6f, 8.f / 6}, 1e-6);
  Tensor z = binary("Div", Tensor::f32({3}, {1, -1, 0}), Tensor::f32({1}, {0}));
  CHECK(z.f32()[0] == std::numeric_limits<float>::infinity());
  CHECK(z.f32()[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(z.f32()[2]));
}

TEST_CASE("Add / Sub / Mul / Div odd broadcast shapes against a naive loop") {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{3, 1, 13}, {1, 127, 1}},  // both sides broadcast, rank 3
      {{13}, {127, 13}},          // lower rank on the left
      {{2, 3, 1, 5}, {3, 7, 1}},  // rank 4 vs rank 3
      {{127}, {127}},             // same shape, odd length
      {{1}, {3, 1, 1}},           // a size-1 tensor against a column
      {{1, 1, 1}, {1}},           // all ones
  };
  uint32_t seed = 100;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    for (const Case& c : cases) {
      INFO(op << " " << shape_str(c.a) << " with " << shape_str(c.b));
      Tensor a = random_tensor(c.a, seed++, -2.f, 2.f);
      // Keep divisors away from zero so the relative bound is meaningful.
      Tensor b = random_tensor(c.b, seed++, 0.5f, 2.f);
      Shape os;
      std::vector<double> ref = naive_broadcast(op, a, b, &os);
      expect_close(binary(op, a, b), os, ref);
    }
  }
}
