// MaxPool / AveragePool / GlobalAveragePool end to end: hand-computed windows (padding never the
// max, ceil_mode's partial last window, both count_include_pad divisors) and odd sizes against a
// naive loop.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "tests/ops/ops_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

std::vector<float> iota(int64_t n, float start = 1.f, float step = 1.f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + step * static_cast<float>(i);
  return v;
}

Tensor pool(const std::string& op, const Tensor& x, const std::string& attrs) {
  ModelBuilder m;
  m.input("x", x.shape()).node(op, {"x"}, "y", attrs).output("y");
  return run1(m, x);
}

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr;
  bool ceil_mode;
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, bool ceil_mode) {
  const int64_t span = in + pb + pe - k;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;  // the last window must start inside
  return out;
}

// ONNX pooling in double precision. Average divisor: real taps, or (count_include_pad) taps
// inside the padded input.
std::vector<double> naive_pool(const PoolCase& k, const std::vector<float>& x, bool is_max, bool include_pad,
                               int64_t oh, int64_t ow) {
  std::vector<double> y;
  for (int64_t p = 0; p < k.n * k.c; ++p)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t real = 0, padded = 0;
        for (int64_t ky = 0; ky < k.kh; ++ky)
          for (int64_t kx = 0; kx < k.kw; ++kx) {
            int64_t iy = oy * k.sh - k.pt + ky, ix = ox * k.sw - k.pl + kx;
            if (iy >= -k.pt && iy < k.h + k.pb && ix >= -k.pl && ix < k.w + k.pr) ++padded;
            if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
            double v = x[static_cast<size_t>((p * k.h + iy) * k.w + ix)];
            mx = std::max(mx, v);
            sum += v;
            ++real;
          }
        y.push_back(is_max ? mx : sum / static_cast<double>(include_pad ? padded : real));
      }
  return y;
}

std::string pool_attrs(const PoolCase& k) {
  return "kernel_shape: " + yaml_list(std::vector<int64_t>{k.kh, k.kw}) +
         ", strides: " + yaml_list(std::vector<int64_t>{k.sh, k.sw}) +
         ", pads: " + yaml_list(std::vector<int64_t>{k.pt, k.pl, k.pb, k.pr}) +
         ", ceil_mode: " + (k.ceil_mode ? "1" : "0");
}

}  // namespace

TEST_CASE("MaxPool 2x2 stride 2, and padding that is never the maximum") {
  Tensor x = Tensor::f32({1, 1, 4, 4}, iota(16));
  expect_values(pool("MaxPool", x, "kernel_shape: [2, 2], strides: [2, 2]"), {1, 1, 2, 2}, {6, 8, 14, 16}, 0);
  expect_values(pool("MaxPool", x, "kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]"), {1, 1, 2, 2},
                {6, 8, 14, 16}, 0);
  // All values negative: a padded tap (0) must not win. Windows rows/cols {-1..1, 1..3}.
  Tensor neg = Tensor::f32({1, 1, 4, 4}, iota(16, -1.f, -1.f));
  expect_values(pool("MaxPool", neg, "kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]"), {1, 1, 2, 2},
                {-1, -2, -5, -6}, 0);
}

TEST_CASE("MaxPool ceil_mode keeps the partial last window and drops one starting in the padding") {
  // 5x5 = 1..25, k 2, s 2: floor gives 2x2, ceil 3x3 with 1-wide last windows.
  Tensor x = Tensor::f32({1, 1, 5, 5}, iota(25));
  expect_values(pool("MaxPool", x, "kernel_shape: [2, 2], strides: [2, 2]"), {1, 1, 2, 2}, {7, 9, 17, 19}, 0);
  expect_values(pool("MaxPool", x, "kernel_shape: [2, 2], strides: [2, 2], ceil_mode: 1"), {1, 1, 3, 3},
                {7, 9, 10, 17, 19, 20, 22, 24, 25}, 0);
  // pads 1 on 5: ceil would give 4 windows, the 4th starting at padded index 6 (all padding) is
  // dropped: 3x3. Windows rows {-1..0, 1..2, 3..4}.
  expect_values(pool("MaxPool", x, "kernel_shape: [2, 2], strides: [2, 2], pads: [1, 1, 1, 1], ceil_mode: 1"),
                {1, 1, 3, 3}, {1, 3, 5, 11, 13, 15, 21, 23, 25}, 0);
}

TEST_CASE("AveragePool: count_include_pad 0 and 1 differ only where the window covers padding") {
  // x = 1..9 (3x3), k 2, s 1, pads top/left 1: out 3x3; window (0, 0) holds x00 = 1 only.
  Tensor x = Tensor::f32({1, 1, 3, 3}, iota(9));
  const std::string attrs = "kernel_shape: [2, 2], pads: [1, 1, 0, 0]";
  expect_values(pool("AveragePool", x, attrs), {1, 1, 3, 3}, {1, 1.5f, 2.5f, 2.5f, 3, 4, 5.5f, 6, 7});
  expect_values(pool("AveragePool", x, attrs + ", count_include_pad: 1"), {1, 1, 3, 3},
                {0.25f, 0.75f, 1.25f, 1.25f, 3, 4, 2.75f, 6, 7});
  // No padding: both divisors are k*k.
  expect_values(pool("AveragePool", x, "kernel_shape: [2, 2], count_include_pad: 1"), {1, 1, 2, 2}, {3, 4, 6, 7});
}

TEST_CASE("AveragePool ceil_mode: the partial window divides by its real size") {
  // 3x3 = 1..9, k 2, s 2, ceil: windows {0..1, 2}: (0,0) = 3, (0,1) = (3 + 6) / 2, (1,0) = (7 + 8) / 2, (1,1) = 9.
  Tensor x = Tensor::f32({1, 1, 3, 3}, iota(9));
  expect_values(pool("AveragePool", x, "kernel_shape: [2, 2], strides: [2, 2], ceil_mode: 1"), {1, 1, 2, 2},
                {3, 4.5f, 7.5f, 9});
  // count_include_pad without pads: the part beyond the input is not padding, so still / 2 and / 1.
  expect_values(pool("AveragePool", x, "kernel_shape: [2, 2], strides: [2, 2], ceil_mode: 1, count_include_pad: 1"),
                {1, 1, 2, 2}, {3, 4.5f, 7.5f, 9});
}

TEST_CASE("MaxPool / AveragePool odd sizes against a naive loop") {
  const PoolCase cases[] = {
      // n c  h    w   kh kw sh sw pt pl pb pr ceil
      {1, 3, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, false}, {1, 3, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {2, 13, 7, 9, 2, 3, 2, 1, 0, 1, 1, 0, true},    // asymmetric pads, non-square
      {1, 1, 1, 127, 1, 3, 1, 2, 0, 1, 0, 1, false},  // a 127-wide row
      {1, 2, 5, 5, 5, 5, 1, 1, 0, 0, 0, 0, false},    // window = image
      {1, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, false},    // identity window
      {1, 2, 14, 14, 3, 3, 2, 2, 0, 0, 0, 0, true},   // ResNet-style ceil without pads
  };
  uint32_t seed = 300;
  for (const PoolCase& k : cases) {
    const int64_t oh = out_size(k.h, k.kh, k.sh, k.pt, k.pb, k.ceil_mode),
                  ow = out_size(k.w, k.kw, k.sw, k.pl, k.pr, k.ceil_mode);
    const Shape xs{k.n, k.c, k.h, k.w}, ys{k.n, k.c, oh, ow};
    Tensor x = random_tensor(xs, seed++, -3.f, 3.f);
    std::vector<float> xv = values(x);
    INFO("h " << k.h << " w " << k.w << " k " << k.kh << "x" << k.kw << " ceil " << k.ceil_mode);
    expect_close(pool("MaxPool", x, pool_attrs(k)), ys, naive_pool(k, xv, true, false, oh, ow));
    expect_close(pool("AveragePool", x, pool_attrs(k)), ys, naive_pool(k, xv, false, false, oh, ow));
    expect_close(pool("AveragePool", x, pool_attrs(k) + ", count_include_pad: 1"), ys,
                 naive_pool(k, xv, false, true, oh, ow));
  }
}

TEST_CASE("GlobalAveragePool, by hand and odd sizes") {
  expect_values(pool("GlobalAveragePool", Tensor::f32({1, 2, 2, 2}, iota(8)), ""), {1, 2, 1, 1}, {2.5f, 6.5f});
  for (const Shape& s : {Shape{2, 3, 13, 13}, Shape{1, 127, 1, 1}, Shape{1, 1, 1, 127}, Shape{3, 2, 7, 1}}) {
    Tensor x = random_tensor(s, 17, -2.f, 2.f);
    const int64_t spatial = s[2] * s[3];
    std::vector<double> ref;
    for (int64_t p = 0; p < s[0] * s[1]; ++p) {
      double sum = 0;
      for (int64_t i = 0; i < spatial; ++i) sum += x.f32()[p * spatial + i];
      ref.push_back(sum / static_cast<double>(spatial));
    }
    INFO(shape_str(s));
    expect_close(pool("GlobalAveragePool", x, ""), {s[0], s[1], 1, 1}, ref);
  }
}
