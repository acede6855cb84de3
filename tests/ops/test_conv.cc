// Conv end to end through Session: hand-computed small cases (bias, stride 2 with asymmetric
// pads and no bias, dilation, group, depthwise, auto_pad) and odd sizes against a naive loop.
#include <doctest/doctest.h>

#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

std::vector<float> iota(int64_t n, float start = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw;
  int64_t sh, sw, dh, dw;
  int64_t pt, pl, pb, pr;
  int64_t group;
  bool bias;
};

// ONNX Conv in double precision, one output element at a time.
std::vector<double> naive_conv(const ConvCase& k, const std::vector<float>& x, const std::vector<float>& w,
                               const std::vector<float>& b, int64_t oh, int64_t ow) {
  std::vector<double> y(static_cast<size_t>(k.n * k.m * oh * ow));
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = k.bias ? b[static_cast<size_t>(m)] : 0.0;
          const int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < k.kh; ++ky)
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = oy * k.sh - k.pt + ky * k.dh, ix = ox * k.sw - k.pl + kx * k.dw;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t c = g * cg + ci;
                acc += static_cast<double>(x[static_cast<size_t>(((n * k.c + c) * k.h + iy) * k.w + ix)]) *
                       w[static_cast<size_t>(((m * cg + ci) * k.kh + ky) * k.kw + kx)];
              }
          y[static_cast<size_t>(((n * k.m + m) * oh + oy) * ow + ox)] = acc;
        }
  return y;
}

void run_against_naive(const ConvCase& k, uint32_t seed) {
  const int64_t oh = (k.h + k.pt + k.pb - ((k.kh - 1) * k.dh + 1)) / k.sh + 1;
  const int64_t ow = (k.w + k.pl + k.pr - ((k.kw - 1) * k.dw + 1)) / k.sw + 1;
  const Shape xs{k.n, k.c, k.h, k.w}, ws{k.m, k.c / k.group, k.kh, k.kw};
  std::vector<float> x = random_floats(numel(xs), seed), w = random_floats(numel(ws), seed + 1);
  std::vector<float> b = random_floats(k.m, seed + 2);
  ModelBuilder mb;
  mb.input("x", xs).constant("w", ws, w).output("y");
  std::vector<std::string> ins{"x", "w"};
  if (k.bias) {
    mb.constant("b", {k.m}, b);
    ins.push_back("b");
  }
  mb.node("Conv", ins, "y",
          "strides: " + yaml_list(std::vector<int64_t>{k.sh, k.sw}) +
              ", dilations: " + yaml_list(std::vector<int64_t>{k.dh, k.dw}) + ", pads: " +
              yaml_list(std::vector<int64_t>{k.pt, k.pl, k.pb, k.pr}) + ", group: " + std::to_string(k.group));
  Tensor y = run1(mb, Tensor::f32(xs, x));
  expect_close(y, {k.n, k.m, oh, ow}, naive_conv(k, x, w, b, oh, ow));
}

}  // namespace

TEST_CASE("Conv 2x2 with bias, by hand") {
  // y[i][j] = x[i][j] - x[i+1][j+1] + 0.5 = -4 + 0.5 on x = 1..9.
  ModelBuilder m;
  m.input("x", {1, 1, 3, 3}).constant("w", {1, 1, 2, 2}, {1, 0, 0, -1}).constant("b", {1}, {0.5f});
  m.node("Conv", {"x", "w", "b"}, "y").output("y");
  expect_values(run1(m, Tensor::f32({1, 1, 3, 3}, iota(9))), {1, 1, 2, 2}, {-3.5f, -3.5f, -3.5f, -3.5f}, 0);
}

TEST_CASE("Conv stride 2, asymmetric pads [top 1, left 0, bottom 0, right 1], no bias, by hand") {
  // x = 1..16 (4x4), 3x3 ones: windows rows {-1..1, 1..3}, cols {0..2, 2..4}, padding = 0.
  // (0,0): 1+2+3+5+6+7 = 24; (0,1): 3+4+7+8 = 22; (1,0): 5+6+7+9+10+11+13+14+15 = 90;
  // (1,1): 7+8+11+12+15+16 = 69.
  ModelBuilder m;
  m.input("x", {1, 1, 4, 4}).constant("w", {1, 1, 3, 3}, std::vector<float>(9, 1.f));
  m.node("Conv", {"x", "w"}, "y", "strides: [2, 2], pads: [1, 0, 0, 1]").output("y");
  expect_values(run1(m, Tensor::f32({1, 1, 4, 4}, iota(16))), {1, 1, 2, 2}, {24, 22, 90, 69}, 0);
}

TEST_CASE("Conv dilation 2, by hand") {
  // 2x2 ones dilated by 2 on x = 1..25 (5x5): y[i][j] = x[i][j] + x[i][j+2] + x[i+2][j] + x[i+2][j+2]
  // = 28 + 4 * (5 i + j).
  ModelBuilder m;
  m.input("x", {1, 1, 5, 5}).constant("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  m.node("Conv", {"x", "w"}, "y", "dilations: [2, 2]").output("y");
  std::vector<float> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) want.push_back(static_cast<float>(28 + 4 * (5 * i + j)));
  expect_values(run1(m, Tensor::f32({1, 1, 5, 5}, iota(25))), {1, 1, 3, 3}, want, 0);
}

TEST_CASE("Conv group 2 (1x1), by hand") {
  // x [1, 4, 1, 2]: channels c0..c3 = [1, 2], [3, 4], [5, 6], [7, 8].
  // Group 0 (c0, c1) -> m0 = 1 c0 + 10 c1, m1 = -c0; group 1 (c2, c3) -> m2 = c2 + c3, m3 = 2 c3.
  ModelBuilder m;
  m.input("x", {1, 4, 1, 2}).constant("w", {4, 2, 1, 1}, {1, 10, -1, 0, 1, 1, 0, 2});
  m.node("Conv", {"x", "w"}, "y", "group: 2").output("y");
  expect_values(run1(m, Tensor::f32({1, 4, 1, 2}, iota(8))), {1, 4, 1, 2}, {31, 42, -1, -2, 12, 14, 14, 16}, 0);
}

TEST_CASE("Conv depthwise (group = C = M) with padding, by hand") {
  // Each channel: 3x3 kernel of value (c + 1) at the centre only, pads 1 -> y = (c + 1) x, plus bias c.
  std::vector<float> w(27, 0.f);
  for (int c = 0; c < 3; ++c) w[static_cast<size_t>(c * 9 + 4)] = static_cast<float>(c + 1);
  ModelBuilder m;
  m.input("x", {1, 3, 2, 2}).constant("w", {3, 1, 3, 3}, w).constant("b", {3}, {0, 1, 2});
  m.node("Conv", {"x", "w", "b"}, "y", "group: 3, pads: [1, 1, 1, 1]").output("y");
  std::vector<float> x = iota(12), want;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i)
      want.push_back(static_cast<float>(c + 1) * x[static_cast<size_t>(c * 4 + i)] + static_cast<float>(c));
  expect_values(run1(m, Tensor::f32({1, 3, 2, 2}, x)), {1, 3, 2, 2}, want, 0);
}

TEST_CASE("Conv auto_pad SAME_UPPER puts the extra padding at the end, by hand") {
  // 1x1x4x4 ones, 2x2 ones, stride 1: total pad 1 -> [0 | 1]: last row/column see one padded tap
  // row/column: y = 4 inside, 2 on the last row/column, 1 in the corner.
  ModelBuilder m;
  m.input("x", {1, 1, 4, 4}).constant("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  m.node("Conv", {"x", "w"}, "y", "auto_pad: SAME_UPPER").output("y");
  expect_values(run1(m, Tensor::f32({1, 1, 4, 4}, std::vector<float>(16, 1.f))), {1, 1, 4, 4},
                {4, 4, 4, 2, 4, 4, 4, 2, 4, 4, 4, 2, 2, 2, 2, 1}, 0);
  ModelBuilder lower;
  lower.input("x", {1, 1, 4, 4}).constant("w", {1, 1, 2, 2}, {1, 1, 1, 1});
  lower.node("Conv", {"x", "w"}, "y", "auto_pad: SAME_LOWER").output("y");
  expect_values(run1(lower, Tensor::f32({1, 1, 4, 4}, std::vector<float>(16, 1.f))), {1, 1, 4, 4},
                {1, 2, 2, 2, 2, 4, 4, 4, 2, 4, 4, 4, 2, 4, 4, 4}, 0);
}

TEST_CASE("Conv odd sizes against a naive loop") {
  const ConvCase cases[] = {
      // n  c   h   w   m  kh kw sh sw dh dw pt pl pb pr group bias
      {1, 3, 13, 13, 5, 3, 3, 2, 2, 1, 2, 1, 2, 0, 1, 1, true},    // stride 2, dilation, asymmetric pads
      {2, 6, 7, 9, 9, 3, 1, 1, 2, 1, 1, 0, 1, 2, 0, 3, false},     // group 3, non-square kernel, batch 2
      {1, 13, 7, 9, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 13, true},   // depthwise, odd channel count
      {1, 13, 5, 5, 13, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 13, false},  // depthwise stride 2, pads [0,1,1,0]
      {1, 1, 1, 127, 3, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, true},    // a 1-pixel-high 127-wide row
      {1, 127, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, false},   // 1x1 reduction over 127 channels
      {1, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, true},      // a 1x1 image
  };
  uint32_t seed = 11;
  for (const ConvCase& k : cases) {
    INFO("c " << k.c << " h " << k.h << " w " << k.w << " m " << k.m << " group " << k.group);
    run_against_naive(k, seed);
    seed += 7;
  }
}
