// MaxPool / AveragePool / GlobalAveragePool: hand-computed windows (padding excluded from max,
// both count_include_pad divisors, ceil_mode clipping, asymmetric pads, NaN), then a table of
// shapes against a naive loop.
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

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ONNX output size; with ceil_mode the last window must still start inside input + left pad.
int64_t out_size(int64_t len, int64_t k, int64_t s, int64_t d, int64_t pl, int64_t pr, bool ceil_mode) {
  const int64_t span = len + pl + pr - ((k - 1) * d + 1);
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= len + pl) --out;
  return out;
}

struct PoolCase {
  const char* name;
  int64_t n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool ceil_mode;
};

cpu::PoolParams make_params(const PoolCase& k, bool include_pad) {
  cpu::PoolParams p;
  p.n = k.n, p.c = k.c, p.h = k.h, p.w = k.w, p.kh = k.kh, p.kw = k.kw;
  p.stride_h = k.sh, p.stride_w = k.sw, p.dil_h = k.dh, p.dil_w = k.dw;
  p.pad_top = k.pt, p.pad_left = k.pl, p.pad_bottom = k.pb, p.pad_right = k.pr;
  p.oh = out_size(k.h, k.kh, k.sh, k.dh, k.pt, k.pb, k.ceil_mode);
  p.ow = out_size(k.w, k.kw, k.sw, k.dw, k.pl, k.pr, k.ceil_mode);
  p.count_include_pad = include_pad;
  return p;
}

// Naive pooling: visit every tap, classify it as real, padding, or beyond the padded border.
std::vector<float> naive_pool(const cpu::PoolParams& p, const std::vector<float>& x, bool is_max) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c * p.oh * p.ow));
  for (int64_t pl = 0; pl < p.n * p.c; ++pl)
    for (int64_t oy = 0; oy < p.oh; ++oy)
      for (int64_t ox = 0; ox < p.ow; ++ox) {
        double sum = 0, mx = -std::numeric_limits<double>::infinity();
        int64_t real = 0, padded = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
            const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
            const bool in_padded =
                iy >= -p.pad_top && iy < p.h + p.pad_bottom && ix >= -p.pad_left && ix < p.w + p.pad_right;
            padded += in_padded;
            if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
            const double v = x[(pl * p.h + iy) * p.w + ix];
            ++real, sum += v, mx = std::max(mx, v);
          }
        const int64_t div = p.count_include_pad ? padded : real;
        y[(pl * p.oh + oy) * p.ow + ox] = static_cast<float>(is_max ? mx : sum / div);
      }
  return y;
}

std::vector<float> run_pool(const cpu::PoolParams& p, const std::vector<float>& x, bool is_max) {
  std::vector<float> y(static_cast<size_t>(p.n * p.c * p.oh * p.ow), -777.f);
  if (is_max) {
    cpu::max_pool2d(p, x.data(), y.data());
  } else {
    cpu::avg_pool2d(p, x.data(), y.data());
  }
  return y;
}

const std::vector<float> kX3x3 = {1, 2, 3, 4, 5, 6, 7, 8, 9};

PoolCase plane(int64_t h, int64_t w, int64_t k, int64_t s, int64_t pad) {
  return {"", 1, 1, h, w, k, k, s, s, 1, 1, pad, pad, pad, pad, false};
}

}  // namespace

TEST_CASE("pool: 2x2 stride 1 windows on a 3x3 plane") {
  const cpu::PoolParams p = make_params(plane(3, 3, 2, 1, 0), false);
  expect_values(run_pool(p, kX3x3, true), {5, 6, 8, 9});
  expect_values(run_pool(p, kX3x3, false), {3, 4, 6, 7});
}

TEST_CASE("max_pool2d: padding never wins, even over negative inputs") {
  const cpu::PoolParams p = make_params(plane(3, 3, 3, 2, 1), false);
  REQUIRE(p.oh == 2);
  expect_values(run_pool(p, kX3x3, true), {5, 6, 8, 9});
  const std::vector<float> neg = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
  expect_values(run_pool(p, neg, true), {-1, -2, -4, -5});  // a zero pad would give 0s
}

TEST_CASE("avg_pool2d: count_include_pad selects the divisor") {
  // Windows of 3x3/s2/pad 1 on [1..9] hold 4 real values: sums 12, 16, 24, 28.
  const cpu::PoolParams excl = make_params(plane(3, 3, 3, 2, 1), false);
  expect_values(run_pool(excl, kX3x3, false), {3, 4, 6, 7});
  const cpu::PoolParams incl = make_params(plane(3, 3, 3, 2, 1), true);
  expect_values(run_pool(incl, kX3x3, false), {12.f / 9, 16.f / 9, 24.f / 9, 28.f / 9});
}

TEST_CASE("avg_pool2d: asymmetric pads (0 top/left, 1 bottom/right)") {
  PoolCase k = plane(3, 3, 2, 2, 0);
  k.pb = k.pr = 1;
  // Windows: {1,2,4,5}, {3,6}+pad, {7,8}+pad, {9}+pad; padded windows always hold 4 taps.
  expect_values(run_pool(make_params(k, false), kX3x3, false), {3, 4.5f, 7.5f, 9});
  expect_values(run_pool(make_params(k, true), kX3x3, false), {3, 2.25f, 3.75f, 2.25f});
  expect_values(run_pool(make_params(k, false), kX3x3, true), {5, 6, 8, 9});
}

TEST_CASE("pool: ceil_mode window is clipped at the padded border") {
  // 4x4 plane x[i][j] = 4i + j + 1, k 3, s 2, pad 1, ceil_mode: 3x3 outputs. Along each axis
  // the windows hold real rows {0,1}, {1,2,3}, {3} and padded taps 3, 3, 2 (the last window's
  // third tap lies beyond the bottom pad, so it counts for neither divisor).
  PoolCase k = plane(4, 4, 3, 2, 1);
  k.ceil_mode = true;
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i + 1);
  const cpu::PoolParams excl = make_params(k, false);
  REQUIRE(excl.oh == 3);
  REQUIRE(excl.ow == 3);
  expect_values(run_pool(excl, x, false), {3.5f, 5, 6, 9.5f, 11, 12, 13.5f, 15, 16});
  expect_values(run_pool(make_params(k, true), x, false), {14.f / 9, 30.f / 9, 2, 57.f / 9, 11, 6, 4.5f, 7.5f, 4});
  expect_values(run_pool(excl, x, true), {6, 8, 8, 14, 16, 16, 14, 16, 16});
}

TEST_CASE("max_pool2d: NaN anywhere in a window propagates") {
  const cpu::PoolParams p = make_params(plane(2, 2, 2, 1, 0), false);
  expect_values(run_pool(p, {kNaN, 1, 2, 3}, true), {kNaN});
  expect_values(run_pool(p, {1, kNaN, 5, 3}, true), {kNaN});
  expect_values(run_pool(p, {1, 4, 2, kNaN}, true), {kNaN});
  // Only the windows that contain the NaN are NaN.
  const cpu::PoolParams q = make_params(plane(3, 3, 2, 1, 0), false);
  expect_values(run_pool(q, {1, 2, 3, 4, 5, 6, 7, 8, kNaN}, true), {5, 6, 8, kNaN});
}

TEST_CASE("pool: matches naive loop over strides, dilations, pads and ceil_mode") {
  // clang-format off
  const PoolCase cases[] = {
      // name                n  c  h    w   kh kw sh sw dh dw pt pl pb pr ceil
      {"resnet 3x3 s2 p1",   1, 3, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {"ceil 3x3 s2",        2, 3, 13, 11, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true},
      {"ceil with pads",     1, 2, 13, 13, 3, 2, 2, 3, 1, 1, 1, 1, 1, 1, true},
      {"asym pads",          1, 3, 13, 13, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, false},
      {"dilation 2",         1, 2, 13, 11, 3, 3, 1, 2, 2, 2, 2, 1, 2, 1, false},
      {"odd kernel 1x127",   1, 1, 1, 127, 1, 5, 1, 3, 1, 1, 0, 2, 0, 2, true},
      {"127 channels",       1, 127, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, false},
      {"1x1 everything",     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false},
      {"big kernel",         1, 1, 7, 5, 7, 5, 1, 1, 1, 1, 3, 2, 3, 2, false},
  };
  // clang-format on
  uint32_t seed = 300;
  for (const PoolCase& k : cases) {
    for (bool include_pad : {false, true}) {
      const cpu::PoolParams p = make_params(k, include_pad);
      const auto x = random_floats(p.n * p.c * p.h * p.w, seed++);
      INFO(k.name << " include_pad=" << include_pad << " oh=" << p.oh << " ow=" << p.ow);
      CHECK(max_rel_err(run_pool(p, x, false), naive_pool(p, x, false)) <= kTol);
      CHECK(max_rel_err(run_pool(p, x, true), naive_pool(p, x, true)) == 0.0);
    }
  }
}

// x [N, C, H, W] -> [N, H, W, C] (to_nhwc) or back.
std::vector<float> transpose(const std::vector<float>& x, int64_t n, int64_t c, int64_t hw, bool to_nhwc) {
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < hw; ++s) {
        const int64_t nchw = (i * c + ch) * hw + s, nhwc = (i * hw + s) * c + ch;
        y[static_cast<size_t>(to_nhwc ? nhwc : nchw)] = x[static_cast<size_t>(to_nhwc ? nchw : nhwc)];
      }
  return y;
}

TEST_CASE("max_pool2d_nhwc: hand values with NaN, and the naive loop over strides, dilations, pads, ceil_mode") {
  // Two channels of a 3x3 plane, 2x2 windows stride 1; NaN at (2, 2) of channel 1 only.
  cpu::PoolParams p = make_params({"", 1, 2, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, false}, false);
  const std::vector<float> x = {1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8, 9, kNaN};  // NHWC
  std::vector<float> y(8, -777.f);
  cpu::max_pool2d_nhwc(p, x.data(), y.data());
  expect_values(y, {5, -1, 6, -2, 8, -4, 9, kNaN});
  // clang-format off
  const PoolCase cases[] = {
      {"resnet 3x3 s2 p1",   2, 16, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false},
      {"ceil 3x3 s2",        2, 3, 13, 11, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true},
      {"inception 3x3 s1",   1, 24, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false},
      {"dilation 2",         1, 5, 13, 11, 3, 3, 1, 2, 2, 2, 2, 1, 2, 1, false},
      {"asym pads",          1, 17, 13, 13, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, false},
  };
  // clang-format on
  uint32_t seed = 900;
  for (const PoolCase& k : cases) {
    const cpu::PoolParams q = make_params(k, false);
    std::vector<float> xc = random_floats(q.n * q.c * q.h * q.w, seed++);
    for (int special = 0; special < 2; ++special) {
      INFO(k.name << " special=" << special);
      if (special) xc[xc.size() / 3] = kNaN;
      std::vector<float> got(static_cast<size_t>(q.n * q.c * q.oh * q.ow), -777.f);
      cpu::max_pool2d_nhwc(q, transpose(xc, q.n, q.c, q.h * q.w, true).data(), got.data());
      got = transpose(got, q.n, q.c, q.oh * q.ow, false);
      if (special) {
        expect_values(got, run_pool(q, xc, true));  // NaN where max_pool2d (hand-checked above) puts it
      } else {
        CHECK(max_rel_err(got, naive_pool(q, xc, true)) == 0.0);
      }
    }
  }
}

TEST_CASE("global_avg_pool: hand values and naive loop") {
  std::vector<float> y(2);
  const std::vector<float> x = {1, 2, 3, 4, 5, 9};
  cpu::global_avg_pool(1, 2, 3, x.data(), y.data());
  expect_values(y, {2, 6});
  for (int64_t spatial : {1, 3, 13, 127, 50176}) {
    const int64_t n = 2, c = 3;
    const auto xs = random_floats(n * c * spatial, static_cast<uint32_t>(spatial));
    std::vector<float> got(static_cast<size_t>(n * c)), ref(static_cast<size_t>(n * c));
    cpu::global_avg_pool(n, c, spatial, xs.data(), got.data());
    for (int64_t i = 0; i < n * c; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < spatial; ++j) sum += xs[i * spatial + j];
      ref[i] = static_cast<float>(sum / spatial);
    }
    INFO("spatial=" << spatial);
    CHECK(max_rel_err(got, ref) <= kTol);
  }
}
