// The fast Resize (resize_2d) and ConvTranspose (conv_transpose_gemm) kernels against the
// naive references of kernels/cpu/import_kernels.h (double accumulation, one output element or
// input pixel at a time), at odd sizes: channels 1, 3, 13, 127, batch > 1, strides, dilations,
// pads, output padding, groups, nearest and linear tables with edge clamping; plus values by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/conv_transpose.h"
#include "kernels/cpu/import_kernels.h"
#include "kernels/cpu/resample.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

cpu::ResizeAxis identity_axis(int64_t len) {
  cpu::ResizeAxis a;
  for (int64_t o = 0; o < len; ++o) a.index.push_back(o), a.weight.push_back(1.0f);
  return a;
}

// A nearest (taps 1), linear (taps 2) or cubic (taps 4: Keys a = -0.75, edge taps clamped) table
// from `in` to `out` coordinates: half-pixel source coordinates, clamped as the lowering clamps them.
cpu::ResizeAxis make_axis(int64_t in, int64_t out, int taps) {
  cpu::ResizeAxis a;
  a.taps = taps;
  const double scale = static_cast<double>(out) / static_cast<double>(in);
  for (int64_t o = 0; o < out; ++o) {
    double x = (static_cast<double>(o) + 0.5) / scale - 0.5;
    if (taps == 4) {
      const double f = std::floor(x), r = x - f, k = -0.75;
      const auto near = [k](double t) { return ((k + 2) * t - (k + 3)) * t * t + 1; };
      const auto far = [k](double t) { return ((k * t - 5 * k) * t + 8 * k) * t - 4 * k; };
      const double w[4] = {far(r + 1), near(r), near(1 - r), far(2 - r)};
      for (int t = 0; t < 4; ++t) {
        a.index.push_back(std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(f) - 1 + t, 0), in - 1));
        a.weight.push_back(static_cast<float>(w[t]));
      }
      continue;
    }
    if (taps == 1) {
      a.index.push_back(std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(x + 0.5)), 0), in - 1));
      a.weight.push_back(1.0f);
      continue;
    }
    x = std::min(std::max(x, 0.0), static_cast<double>(in - 1));
    const int64_t i0 = static_cast<int64_t>(std::floor(x)), i1 = std::min(i0 + 1, in - 1);
    const float r = static_cast<float>(x - static_cast<double>(i0));
    a.index.insert(a.index.end(), {i0, i1});
    a.weight.insert(a.weight.end(), {1.0f - r, r});
  }
  return a;
}

double resize_error(int64_t n, int64_t c, int64_t ih, int64_t iw, int64_t oh, int64_t ow, int row_taps, int col_taps,
                    uint32_t seed) {
  const cpu::ResizeAxis rows = make_axis(ih, oh, row_taps), cols = make_axis(iw, ow, col_taps);
  const std::vector<float> x = random_floats(n * c * ih * iw, seed);
  std::vector<float> got(static_cast<size_t>(n * c * oh * ow), -777.f), ref(got.size(), -555.f);
  cpu::resize_2d(n * c, ih, iw, oh, ow, rows, cols, x.data(), got.data());
  cpu::resize({n, c, ih, iw}, {n, c, oh, ow}, {identity_axis(n), identity_axis(c), rows, cols}, x.data(), ref.data());
  return max_rel_err(got, ref);
}

std::vector<float> run_conv_transpose(const cpu::ConvTransposeParams& p, const std::vector<float>& x,
                                      const std::vector<float>& w, const std::vector<float>* bias, bool fast) {
  std::vector<float> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow), -777.f);
  if (fast) {
    cpu::conv_transpose_gemm(p, x.data(), w.data(), bias ? bias->data() : nullptr, y.data());
  } else {
    cpu::conv_transpose(p, x.data(), w.data(), bias ? bias->data() : nullptr, y.data());
  }
  return y;
}

// ONNX's output size: sh * (h - 1) + output_padding + (kh - 1) * dh + 1 - pads.
cpu::ConvTransposeParams ct_params(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t s,
                                   int64_t d, int64_t pad, int64_t out_pad, int64_t group) {
  const int64_t oh = s * (h - 1) + out_pad + (k - 1) * d + 1 - 2 * pad,
                ow = s * (w - 1) + out_pad + (k - 1) * d + 1 - 2 * pad;
  return {n, c, h, w, m, oh, ow, k, k, group, s, s, d, d, pad, pad};
}

}  // namespace

TEST_CASE("resize_2d: nearest 2x upsample by hand") {
  // [1, 1, 2, 2] -> [1, 1, 4, 4], asymmetric/floor tables: source index o / 2
  cpu::ResizeAxis a;
  for (int64_t o = 0; o < 4; ++o) a.index.push_back(o / 2), a.weight.push_back(1.0f);
  const std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> y(16, -1.f);
  cpu::resize_2d(1, 2, 2, 4, 4, a, a, x.data(), y.data());
  expect_values(y, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0.0);
}

TEST_CASE("resize_2d: bilinear by hand, and NaN at a zero weight propagates as in the reference") {
  // [1, 1, 2, 2] -> [1, 1, 1, 3]: row 0.5 between the two rows, columns 0, 0.5, 1
  cpu::ResizeAxis rows, cols;
  rows.taps = cols.taps = 2;
  rows.index = {0, 1};
  rows.weight = {0.5f, 0.5f};
  cols.index = {0, 1, 0, 1, 1, 1};
  cols.weight = {1.0f, 0.0f, 0.5f, 0.5f, 1.0f, 0.0f};
  std::vector<float> x = {0, 2, 4, 10}, y(3, -1.f);
  cpu::resize_2d(1, 2, 2, 1, 3, rows, cols, x.data(), y.data());
  expect_values(y, {2.0f, 4.0f, 6.0f});
  x[1] = std::numeric_limits<float>::quiet_NaN();  // read with weight 0 by output 0
  std::vector<float> ref(3);
  cpu::resize_2d(1, 2, 2, 1, 3, rows, cols, x.data(), y.data());
  cpu::resize({1, 1, 2, 2}, {1, 1, 1, 3}, {identity_axis(1), identity_axis(1), rows, cols}, x.data(), ref.data());
  for (size_t i = 0; i < 3; ++i) CHECK(std::isnan(y[i]) == std::isnan(ref[i]));
}

TEST_CASE("resize_2d against the reference: odd sizes, nearest, linear and cubic, up and down") {
  struct Case {
    int64_t n, c, ih, iw, oh, ow;
  };
  const Case cases[] = {{1, 1, 1, 1, 3, 5},   {1, 3, 7, 5, 14, 10},  {2, 13, 5, 9, 3, 4},
                        {1, 127, 4, 4, 8, 8}, {2, 3, 13, 11, 27, 1}, {1, 1, 33, 65, 17, 129}};
  uint32_t seed = 1;
  for (const Case& k : cases) {
    for (int rt : {1, 2, 4}) {
      for (int ct : {1, 2, 4}) {
        INFO("n " << k.n << " c " << k.c << " " << k.ih << "x" << k.iw << " -> " << k.oh << "x" << k.ow << " taps "
                  << rt << "/" << ct);
        CHECK(resize_error(k.n, k.c, k.ih, k.iw, k.oh, k.ow, rt, ct, seed++) <= 1e-6);
      }
    }
  }
}

TEST_CASE("resize_axis_is_identity") {
  CHECK(cpu::resize_axis_is_identity(identity_axis(5), 5));
  CHECK(cpu::resize_axis_is_identity(make_axis(7, 7, 2), 7));  // linear at scale 1: weights 1, 0
  CHECK_FALSE(cpu::resize_axis_is_identity(make_axis(3, 6, 1), 6));
}

TEST_CASE("conv_transpose_gemm: 2x2 stride 2 by hand (each input pixel paints its own 2x2 tile)") {
  const cpu::ConvTransposeParams p = ct_params(1, 1, 1, 2, 1, 2, 2, 1, 0, 0, 1);
  const std::vector<float> x = {1, 2}, w = {1, 2, 3, 4}, bias = {0.5f};
  expect_values(run_conv_transpose(p, x, w, &bias, true), {1.5f, 2.5f, 2.5f, 4.5f, 3.5f, 4.5f, 6.5f, 8.5f});
}

TEST_CASE("conv_transpose_gemm against the reference: odd sizes, strides, dilations, pads, groups") {
  struct Case {
    int64_t n, c, h, w, m, k, s, d, pad, out_pad, group;
  };
  const Case cases[] = {
      {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1},
      {1, 3, 5, 7, 13, 3, 2, 1, 1, 1, 1},
      {2, 13, 4, 3, 3, 2, 2, 1, 0, 0, 1},
      {1, 127, 3, 5, 1, 4, 2, 1, 1, 0, 1},
      {2, 6, 7, 5, 9, 3, 3, 2, 2, 1, 3},
      {1, 4, 9, 9, 4, 3, 1, 1, 1, 0, 4},
      {1, 8, 13, 11, 16, 2, 2, 1, 0, 0, 2},
      {1, 64, 40, 40, 64, 2, 2, 1, 0, 0, 1},
      {1, 3, 6, 2, 5, 5, 1, 3, 0, 0, 1},
      {1, 5, 4, 3, 7, 3, 3, 1, 0, 0, 1},
      {2, 8, 5, 6, 12, 2, 2, 1, 0, 0, 4},
      {1, 0, 3, 3, 4, 2, 2, 1, 0, 0, 1},
      // 2x2 stride 2, one group: the direct kernel's 24- and 8-column runs and its scalar tail
      {3, 1, 2, 7, 1, 2, 2, 1, 0, 0, 1},
      {1, 3, 3, 8, 13, 2, 2, 1, 0, 0, 1},
      {2, 13, 5, 17, 3, 2, 2, 1, 0, 0, 1},
      {1, 127, 2, 24, 1, 2, 2, 1, 0, 0, 1},
      {1, 24, 4, 57, 24, 2, 2, 1, 0, 0, 1},
      {3, 5, 3, 33, 2, 2, 2, 1, 0, 0, 1},
  };
  uint32_t seed = 100;
  for (const Case& k : cases) {
    const cpu::ConvTransposeParams p = ct_params(k.n, k.c, k.h, k.w, k.m, k.k, k.s, k.d, k.pad, k.out_pad, k.group);
    INFO("n " << k.n << " c " << k.c << " " << k.h << "x" << k.w << " m " << k.m << " k " << k.k << " s " << k.s
              << " d " << k.d << " pad " << k.pad << " out_pad " << k.out_pad << " group " << k.group);
    const std::vector<float> x = random_floats(p.n * p.c * p.h * p.w, seed++),
                             w = random_floats(p.c * (p.m / p.group) * p.kh * p.kw, seed++),
                             bias = random_floats(p.m, seed++);
    for (const std::vector<float>* b : {&bias, static_cast<const std::vector<float>*>(nullptr)}) {
      CHECK(max_rel_err(run_conv_transpose(p, x, w, b, true), run_conv_transpose(p, x, w, b, false)) <= 1e-5);
    }
  }
}
