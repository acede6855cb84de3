// Gemm (alpha, beta, transA/transB, C broadcast) and MatMul (1-D operands, batch broadcasting)
// end to end, by hand and at odd sizes against a naive triple loop.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// A [2, 3] = [[1, 2, 3], [4, 5, 6]], B [3, 2] = [[1, 0], [0, 1], [1, -1]]: A B = [[4, -1], [10, -1]].
const std::vector<float> kA{1, 2, 3, 4, 5, 6};
const std::vector<float> kB{1, 0, 0, 1, 1, -1};

std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = v[static_cast<size_t>(r * cols + c)];
  return t;
}

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  float alpha, beta;
  Shape c;  // empty: no C
  bool has_c;
};

void gemm_against_naive(const GemmCase& g, uint32_t seed) {
  const Shape as = g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k};
  const Shape bs = g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n};
  Tensor a = random_tensor(as, seed);
  std::vector<float> b = random_floats(numel(bs), seed + 1);
  std::vector<float> c = random_floats(numel(g.c), seed + 2);
  ModelBuilder mb;
  mb.input("x", as).constant("b", bs, b);
  std::vector<std::string> ins{"x", "b"};
  if (g.has_c) {
    mb.constant("c", g.c, c);
    ins.push_back("c");
  }
  char attrs[128];
  std::snprintf(attrs, sizeof attrs, "alpha: %.9g, beta: %.9g, transA: %d, transB: %d", static_cast<double>(g.alpha),
                static_cast<double>(g.beta), g.ta ? 1 : 0, g.tb ? 1 : 0);
  mb.node("Gemm", ins, "y", attrs).output("y");
  Shape cs = g.c;
  cs.insert(cs.begin(), 2 - cs.size(), 1);
  std::vector<double> ref;
  for (int64_t i = 0; i < g.m; ++i)
    for (int64_t j = 0; j < g.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        double av = a.f32()[g.ta ? p * g.m + i : i * g.k + p];
        double bv = b[static_cast<size_t>(g.tb ? j * g.k + p : p * g.n + j)];
        acc += av * bv;
      }
      double cv = g.has_c ? c[static_cast<size_t>((cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j))] : 0.0;
      ref.push_back(g.alpha * acc + g.beta * cv);
    }
  expect_close(run1(mb, a), {g.m, g.n}, ref);
}

}  // namespace

TEST_CASE("Gemm plain, with alpha/beta and a row-broadcast C, by hand") {
  ModelBuilder m;
  m.input("x", {2, 3}).constant("b", {3, 2}, kB).node("Gemm", {"x", "b"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({2, 3}, kA)), {2, 2}, {4, -1, 10, -1}, 0);
  // 0.5 * A B + 2 * [100, 200] (C [2] broadcast over rows).
  ModelBuilder c;
  c.input("x", {2, 3}).constant("b", {3, 2}, kB).constant("c", {2}, {100, 200});
  c.node("Gemm", {"x", "b", "c"}, "y", "alpha: 0.5, beta: 2.0").output("y");
  expect_values(run1(c, Tensor::f32({2, 3}, kA)), {2, 2}, {202, 399.5f, 205, 399.5f}, 0);
}

TEST_CASE("Gemm transA / transB give the same product from transposed storage, by hand") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      ModelBuilder m;
      m.input("x", ta ? Shape{3, 2} : Shape{2, 3});
      m.constant("b", tb ? Shape{2, 3} : Shape{3, 2}, tb ? transposed(kB, 3, 2) : kB);
      m.node("Gemm", {"x", "b"}, "y", "transA: " + std::to_string(ta) + ", transB: " + std::to_string(tb)).output("y");
      Tensor x = ta ? Tensor::f32({3, 2}, transposed(kA, 2, 3)) : Tensor::f32({2, 3}, kA);
      INFO("transA " << ta << " transB " << tb);
      expect_values(run1(m, x), {2, 2}, {4, -1, 10, -1}, 0);
    }
}

TEST_CASE("Gemm C broadcasts as a column [M, 1], a scalar, and a full [M, N]") {
  ModelBuilder col;
  col.input("x", {2, 3}).constant("b", {3, 2}, kB).constant("c", {2, 1}, {1, 2});
  col.node("Gemm", {"x", "b", "c"}, "y").output("y");
  expect_values(run1(col, Tensor::f32({2, 3}, kA)), {2, 2}, {5, 0, 12, 1}, 0);
  ModelBuilder sc;
  sc.input("x", {2, 3}).constant("b", {3, 2}, kB).constant("c", {}, {-4});
  sc.node("Gemm", {"x", "b", "c"}, "y", "beta: 0.5").output("y");
  expect_values(run1(sc, Tensor::f32({2, 3}, kA)), {2, 2}, {2, -3, 8, -3}, 0);
  ModelBuilder full;
  full.input("x", {2, 3}).constant("b", {3, 2}, kB).constant("c", {2, 2}, {1, 2, 3, 4});
  full.node("Gemm", {"x", "b", "c"}, "y", "alpha: -1.0, beta: 0").output("y");
  expect_values(run1(full, Tensor::f32({2, 3}, kA)), {2, 2}, {-4, 1, -10, 1}, 0);
}

TEST_CASE("Gemm odd sizes against a naive loop") {
  const GemmCase cases[] = {
      {13, 127, 3, false, false, 1.f, 1.f, {3}, true},
      {13, 127, 3, true, true, 0.75f, -1.5f, {13, 1}, true},
      {1, 1, 1, false, true, 2.f, 1.f, {}, true},
      {3, 13, 127, true, false, 1.f, 1.f, {3, 127}, true},
      {127, 3, 13, false, true, 1.f, 0.f, {}, false},
      {1, 1000, 1, false, false, 1.f, 1.f, {1}, true},  // a long reduction
  };
  uint32_t seed = 500;
  for (const GemmCase& g : cases) {
    INFO("M " << g.m << " K " << g.k << " N " << g.n << " transA " << g.ta << " transB " << g.tb);
    gemm_against_naive(g, seed);
    seed += 3;
  }
}

TEST_CASE("MatMul 2-D, 1-D operands and batch broadcasting, by hand") {
  auto mm = [](const Tensor& a, const Tensor& b) {
    ModelBuilder m;
    m.input("a", a.shape()).input("b", b.shape()).node("MatMul", {"a", "b"}, "y").output("y");
    return run_model(m, {{"a", a}, {"b", b}}).at("y");
  };
  Tensor a = Tensor::f32({2, 3}, kA), b = Tensor::f32({3, 2}, kB);
  expect_values(mm(a, b), {2, 2}, {4, -1, 10, -1}, 0);
  // 1-D on the left: [1, 2, 3] @ B = [1 + 3, 2 - 3] = [4, -1].
  expect_values(mm(Tensor::f32({3}, {1, 2, 3}), b), {2}, {4, -1}, 0);
  // 1-D on the right: A @ [1, 0, -1] = [1 - 3, 4 - 6] = [-2, -2].
  expect_values(mm(a, Tensor::f32({3}, {1, 0, -1})), {2}, {-2, -2}, 0);
  // Dot product of two 1-D vectors: a scalar.
  expect_values(mm(Tensor::f32({3}, {1, 2, 3}), Tensor::f32({3}, {4, 5, 6})), {}, {32}, 0);
  // Batch [2, 2, 3] @ [3, 2] (B shared by both batches); the second batch is 10 * A.
  std::vector<float> a2 = kA;
  for (float v : kA) a2.push_back(10 * v);
  expect_values(mm(Tensor::f32({2, 2, 3}, a2), b), {2, 2, 2}, {4, -1, 10, -1, 40, -10, 100, -10}, 0);
  // A shared by batches of B: [2, 3] @ [2, 3, 2], second B = -B.
  std::vector<float> b2 = kB;
  for (float v : kB) b2.push_back(-v);
  expect_values(mm(a, Tensor::f32({2, 3, 2}, b2)), {2, 2, 2}, {4, -1, 10, -1, -4, 1, -10, 1}, 0);
}

TEST_CASE("MatMul odd batch-broadcast shapes against a naive loop") {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {
      {{3, 1, 13, 7}, {5, 7, 3}},  // batch [3, 1] x [5] -> [3, 5]
      {{127}, {127, 13}},         {{13, 127}, {127}}, {{1, 1, 1}, {1, 1}}, {{2, 13, 1}, {2, 1, 127}},  // outer products
      {{4, 3, 13}, {1, 13, 3}},
  };
  uint32_t seed = 900;
  for (const Case& c : cases) {
    Tensor a = random_tensor(c.a, seed++), b = random_tensor(c.b, seed++);
    Shape as = c.a, bs = c.b;
    const bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as.insert(as.begin(), 1);
    if (b1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t r = std::max(ab.size(), bb.size());
    ab.insert(ab.begin(), r - ab.size(), 1);
    bb.insert(bb.begin(), r - bb.size(), 1);
    Shape ob(r);
    for (size_t d = 0; d < r; ++d) ob[d] = std::max(ab[d], bb[d]);
    std::vector<int64_t> ast = strides_of(ab), bst = strides_of(bb);
    std::vector<double> ref;
    for (int64_t o = 0; o < numel(ob); ++o) {
      int64_t rem = o, ia = 0, ib = 0;
      for (size_t d = r; d-- > 0;) {
        int64_t idx = rem % ob[d];
        rem /= ob[d];
        ia += (ab[d] == 1 ? 0 : idx) * ast[d];
        ib += (bb[d] == 1 ? 0 : idx) * bst[d];
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += static_cast<double>(a.f32()[(ia * m + i) * k + p]) * b.f32()[(ib * k + p) * n + j];
          ref.push_back(acc);
        }
    }
    Shape ys = ob;
    if (!a1) ys.push_back(m);
    if (!b1) ys.push_back(n);
    ModelBuilder mb;
    mb.input("a", c.a).input("b", c.b).node("MatMul", {"a", "b"}, "y").output("y");
    INFO(shape_str(c.a) << " @ " << shape_str(c.b));
    expect_close(run_model(mb, {{"a", a}, {"b", b}}).at("y"), ys, ref);
  }
}
