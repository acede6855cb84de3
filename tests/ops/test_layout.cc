// Data-movement ops end to end: Flatten, Reshape (0 and -1 from an i64 constant, and the shape
// attribute), Transpose (default and explicit perm) and Concat (negative axis, several inputs),
// by hand and at odd sizes against a naive index loop.
#include <doctest/doctest.h>

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

// Naive transpose: y[i_0..i_r] = x[j] with j_perm[d] = i_d.
std::vector<double> naive_transpose(const Tensor& x, const std::vector<int64_t>& perm, Shape* out) {
  const Shape& xs = x.shape();
  Shape ys;
  for (int64_t p : perm) ys.push_back(xs[static_cast<size_t>(p)]);
  std::vector<int64_t> xst = strides_of(xs);
  std::vector<double> y(static_cast<size_t>(numel(ys)));
  for (int64_t i = 0; i < numel(ys); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = ys.size(); d-- > 0;) {
      src += (rem % ys[d]) * xst[static_cast<size_t>(perm[d])];
      rem /= ys[d];
    }
    y[static_cast<size_t>(i)] = x.f32()[src];
  }
  *out = ys;
  return y;
}

}  // namespace

TEST_CASE("Flatten keeps row-major order for every axis") {
  Tensor x = Tensor::f32({2, 3, 2}, iota(12));
  for (int64_t axis : {0, 1, 2, 3, -1}) {
    ModelBuilder m;
    m.input("x", {2, 3, 2}).node("Flatten", {"x"}, "y", "axis: " + std::to_string(axis)).output("y");
    int64_t a = axis < 0 ? axis + 3 : axis, outer = 1;
    for (int64_t d = 0; d < a; ++d) outer *= x.shape()[static_cast<size_t>(d)];
    INFO("axis " << axis);
    expect_values(run1(m, x), {outer, 12 / outer}, iota(12), 0);
  }
}

TEST_CASE("Reshape with 0 (copy) and -1 (infer) from an i64 constant, and from the shape attribute") {
  Tensor x = Tensor::f32({2, 3, 4}, iota(24));
  ModelBuilder m;
  m.input("x", {2, 3, 4}).constant_i64("s", {0, -1}).node("Reshape", {"x", "s"}, "y").output("y");
  expect_values(run1(m, x), {2, 12}, iota(24), 0);
  ModelBuilder m2;
  m2.input("x", {2, 3, 4}).constant_i64("s", {4, 0, -1}).node("Reshape", {"x", "s"}, "y").output("y");
  expect_values(run1(m2, x), {4, 3, 2}, iota(24), 0);
  ModelBuilder m3;
  m3.input("x", {2, 3, 4}).node("Reshape", {"x"}, "y", "shape: [-1, 8]").output("y");
  expect_values(run1(m3, x), {3, 8}, iota(24), 0);
  // Reshape feeding an op: the consumer sees the new shape (a [1, 127] row summed with a column).
  ModelBuilder m4;
  m4.input("x", {127}).constant_i64("s", {1, -1}).constant("c", {2, 1}, {0, 1000});
  m4.node("Reshape", {"x", "s"}, "r").node("Add", {"r", "c"}, "y").output("y");
  std::vector<float> want = iota(127);
  for (int64_t i = 0; i < 127; ++i) want.push_back(1000.f + static_cast<float>(i));
  expect_values(run1(m4, Tensor::f32({127}, iota(127))), {2, 127}, want, 0);
}

TEST_CASE("Transpose: default perm reverses the axes; explicit perm, by hand") {
  // x [2, 3] = [[0, 1, 2], [3, 4, 5]] -> [[0, 3], [1, 4], [2, 5]].
  ModelBuilder m;
  m.input("x", {2, 3}).node("Transpose", {"x"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({2, 3}, iota(6))), {3, 2}, {0, 3, 1, 4, 2, 5}, 0);
  // x [2, 2, 3] with perm [1, 0, 2]: y[i][j][k] = x[j][i][k].
  ModelBuilder p;
  p.input("x", {2, 2, 3}).node("Transpose", {"x"}, "y", "perm: [1, 0, 2]").output("y");
  expect_values(run1(p, Tensor::f32({2, 2, 3}, iota(12))), {2, 2, 3}, {0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11}, 0);
}

TEST_CASE("Transpose odd sizes and ranks against a naive loop") {
  struct Case {
    Shape s;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{3, 13, 5}, {2, 0, 1}},
      {{1, 127, 3}, {2, 1, 0}},
      {{2, 3, 5, 7}, {0, 2, 3, 1}},  // NCHW -> NHWC
      {{2, 7, 3, 5}, {0, 3, 1, 2}},  // NHWC -> NCHW
      {{13}, {0}},
      {{2, 1, 3, 1, 5}, {4, 3, 2, 1, 0}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    Tensor x = random_tensor(c.s, seed++);
    Shape ys;
    std::vector<double> ref = naive_transpose(x, c.perm, &ys);
    ModelBuilder m;
    m.input("x", c.s).node("Transpose", {"x"}, "y", "perm: " + yaml_list(c.perm)).output("y");
    INFO(shape_str(c.s) << " perm " << shape_str(c.perm));
    expect_close(run1(m, x), ys, ref, 0.0);
  }
}

TEST_CASE("Concat along a middle axis, a negative axis, and axis 0, by hand") {
  ModelBuilder m;
  m.input("a", {2, 1, 2}).input("b", {2, 2, 2}).node("Concat", {"a", "b"}, "y", "axis: -2").output("y");
  TensorMap out = run_model(m, {{"a", Tensor::f32({2, 1, 2}, {0, 1, 2, 3})},
                                {"b", Tensor::f32({2, 2, 2}, {10, 11, 12, 13, 14, 15, 16, 17})}});
  expect_values(out.at("y"), {2, 3, 2}, {0, 1, 10, 11, 12, 13, 2, 3, 14, 15, 16, 17}, 0);
  ModelBuilder z;
  z.input("a", {1, 2}).constant("c", {2, 2}, {5, 6, 7, 8}).node("Concat", {"c", "a", "c"}, "y", "axis: 0").output("y");
  TensorMap out2 = run_model(z, {{"a", Tensor::f32({1, 2}, {1, 2})}});
  expect_values(out2.at("y"), {5, 2}, {5, 6, 7, 8, 1, 2, 5, 6, 7, 8}, 0);
  // A single input is a copy.
  ModelBuilder one;
  one.input("x", {3}).node("Concat", {"x"}, "y", "axis: 0").output("y");
  expect_values(run1(one, Tensor::f32({3}, {1, 2, 3})), {3}, {1, 2, 3}, 0);
}

TEST_CASE("Concat odd sizes: three inputs of 1, 13 and 127 along each axis against a naive loop") {
  for (int64_t axis = 0; axis < 3; ++axis) {
    Shape base{3, 5, 2};
    std::vector<Shape> shapes;
    for (int64_t len : {1, 13, 127}) {
      Shape s = base;
      s[static_cast<size_t>(axis)] = len;
      shapes.push_back(s);
    }
    ModelBuilder m;
    TensorMap in;
    std::vector<std::string> names{"p", "q", "r"};
    for (size_t i = 0; i < 3; ++i) {
      m.input(names[i], shapes[i]);
      in[names[i]] = random_tensor(shapes[i], 70 + static_cast<uint32_t>(i + 3 * axis));
    }
    m.node("Concat", names, "y", "axis: " + std::to_string(axis - 3)).output("y");  // negative spelling
    Shape ys = base;
    ys[static_cast<size_t>(axis)] = 1 + 13 + 127;
    // Naive: walk the output, find which input and offset each index along `axis` comes from.
    std::vector<double> ref(static_cast<size_t>(numel(ys)));
    std::vector<int64_t> yst = strides_of(ys);
    for (int64_t i = 0; i < numel(ys); ++i) {
      std::vector<int64_t> idx(3);
      int64_t rem = i;
      for (size_t d = 3; d-- > 0;) {
        idx[d] = rem % ys[d];
        rem /= ys[d];
      }
      size_t which = 0;
      int64_t along = idx[static_cast<size_t>(axis)];
      while (along >= shapes[which][static_cast<size_t>(axis)]) along -= shapes[which++][static_cast<size_t>(axis)];
      idx[static_cast<size_t>(axis)] = along;
      std::vector<int64_t> st = strides_of(shapes[which]);
      ref[static_cast<size_t>(i)] = in[names[which]].f32()[idx[0] * st[0] + idx[1] * st[1] + idx[2] * st[2]];
    }
    INFO("axis " << axis);
    expect_close(run_model(m, in).at("y"), ys, ref, 0.0);
  }
}
