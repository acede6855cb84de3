// Conv2d: hand-computed windows (padding, stride, dilation, groups, depthwise), then a table of
// shapes against a naive direct-convolution loop covering every code path in conv.cc and
// depthwise.cc.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

// Shape of one test convolution; oh/ow are derived as ONNX does for explicit pads.
struct ConvCase {
  const char* name;
  int64_t n, c, h, w, m, kh, kw;
  int64_t stride_h, stride_w, dil_h, dil_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right;
  int64_t group;
  bool bias;
};

cpu::ConvParams make_params(const ConvCase& k) {
  cpu::ConvParams p;
  p.n = k.n, p.c = k.c, p.h = k.h, p.w = k.w, p.m = k.m, p.kh = k.kh, p.kw = k.kw;
  p.stride_h = k.stride_h, p.stride_w = k.stride_w, p.dil_h = k.dil_h, p.dil_w = k.dil_w;
  p.pad_top = k.pad_top, p.pad_left = k.pad_left;
  p.pad_bottom = k.pad_bottom, p.pad_right = k.pad_right;
  p.group = k.group;
  p.oh = (p.h + p.pad_top + p.pad_bottom - ((p.kh - 1) * p.dil_h + 1)) / p.stride_h + 1;
  p.ow = (p.w + p.pad_left + p.pad_right - ((p.kw - 1) * p.dil_w + 1)) / p.stride_w + 1;
  return p;
}

std::vector<float> run_conv(const cpu::ConvParams& p, const std::vector<float>& x, const std::vector<float>& w,
                            const float* bias) {
  std::vector<float> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow), -777.f);
  cpu::conv2d(p, x.data(), w.data(), bias, y.data());
  return y;
}

// Direct definition of ONNX Conv, accumulated in double.
std::vector<float> naive_conv(const cpu::ConvParams& p, const std::vector<float>& x, const std::vector<float>& w,
                              const float* bias) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<float> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t oy = 0; oy < p.oh; ++oy)
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          double acc = bias ? bias[m] : 0.0;
          const int64_t g = m / mg;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                acc += double(x[((n * p.c + g * cg + ci) * p.h + iy) * p.w + ix]) *
                       w[((m * cg + ci) * p.kh + ky) * p.kw + kx];
              }
          y[((n * p.m + m) * p.oh + oy) * p.ow + ox] = static_cast<float>(acc);
        }
  return y;
}

const std::vector<float> kX3x3 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
const std::vector<float> kW2x2 = {1, 2, 3, 4};

ConvCase single_channel(int64_t h, int64_t w, int64_t k) {
  return {"", 1, 1, h, w, 1, k, k, 1, 1, 1, 1, 0, 0, 0, 0, 1, false};
}

}  // namespace

TEST_CASE("conv2d: 3x3 input, 2x2 kernel, with and without bias") {
  const cpu::ConvParams p = make_params(single_channel(3, 3, 2));
  REQUIRE(p.oh == 2);
  // [1,2;4,5].[1,2;3,4] = 1+4+12+20 = 37; then 47, 67, 77 for the other windows.
  expect_values(run_conv(p, kX3x3, kW2x2, nullptr), {37, 47, 67, 77});
  const float bias[] = {0.5f};
  expect_values(run_conv(p, kX3x3, kW2x2, bias), {37.5f, 47.5f, 67.5f, 77.5f});
}

TEST_CASE("conv2d: asymmetric pads (0 top/left, 1 bottom/right) with stride 2") {
  ConvCase k = single_channel(3, 3, 2);
  k.stride_h = k.stride_w = 2, k.pad_bottom = k.pad_right = 1;
  const cpu::ConvParams p = make_params(k);
  REQUIRE(p.oh == 2);
  REQUIRE(p.ow == 2);
  // (0,1): 3*1 + 6*3 = 21; (1,0): 7*1 + 8*2 = 23; (1,1): 9*1; the rest is padding.
  expect_values(run_conv(p, kX3x3, kW2x2, nullptr), {37, 21, 23, 9});
}

TEST_CASE("conv2d: dilation 2 spreads a 2x2 kernel over the 3x3 corners") {
  ConvCase k = single_channel(3, 3, 2);
  k.dil_h = k.dil_w = 2;
  const cpu::ConvParams p = make_params(k);
  REQUIRE(p.oh == 1);
  expect_values(run_conv(p, kX3x3, kW2x2, nullptr), {1 * 1 + 3 * 2 + 7 * 3 + 9 * 4});
}

TEST_CASE("conv2d: group 2 keeps channels apart") {
  const ConvCase k = {"", 1, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, false};
  expect_values(run_conv(make_params(k), {2, 3}, {10, 100}, nullptr), {20, 300});
}

TEST_CASE("conv2d: depthwise 3x3 pad 1 on 2x2 planes") {
  const ConvCase k = {"", 1, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true};
  const cpu::ConvParams p = make_params(k);
  // Channel 0: ones kernel, every window covers the whole plane: 1+2+3+4 = 10.
  // Channel 1: a single 1 at (0,0) picks kernel tap (1-oy, 1-ox): 5, 4, 2, 1.
  const std::vector<float> x = {1, 2, 3, 4, 1, 0, 0, 0};
  const std::vector<float> w = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  const float bias[] = {0.5f, -1.f};
  expect_values(run_conv(p, x, w, bias), {10.5f, 10.5f, 10.5f, 10.5f, 4, 3, 1, 0});
}

TEST_CASE("conv2d: matches naive loop across strides, pads, dilations and groups") {
  // clang-format off
  const ConvCase cases[] = {
      // name                   n  c   h   w   m  kh kw sh sw dh dw pt pl pb pr  g  bias
      {"3x3 pad 1",             1, 3, 13, 13, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"1x1 direct, batch 2",   2, 13, 7, 5, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, true},
      {"1x1 stride 2",          1, 13, 7, 5, 3, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1, false},
      {"3x3 stride 2 odd",      1, 3, 13, 11, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true},
      {"dilation 2",            1, 3, 13, 13, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, true},
      {"asym pads stride 2",    1, 3, 13, 13, 3, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, 1, true},
      {"stem 7x7 s2 p3",        1, 3, 13, 11, 4, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1, true},
      {"127 channels",          1, 127, 5, 5, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true},
      {"1x3 kernel on 1x127",   1, 1, 1, 127, 1, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1, false},
      {"group 2",               1, 4, 9, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true},
      {"group 3 batch 2",       2, 6, 5, 9, 3, 3, 3, 2, 1, 1, 1, 1, 0, 1, 2, 3, false},
      {"depthwise s2 batch 2",  2, 13, 13, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 13, true},
      {"depthwise dil 2 asym",  1, 3, 13, 11, 3, 5, 3, 1, 2, 2, 2, 0, 1, 2, 1, 3, false},
      {"depthwise 127 ch",      1, 127, 3, 3, 127, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 127, true},
      {"depthwise multiplier",  1, 3, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, true},
      {"1x1 input, 1 channel",  1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, false},
      {"kernel larger than x",  1, 2, 3, 1, 2, 5, 3, 1, 1, 1, 1, 2, 1, 2, 1, 1, true},
  };
  // clang-format on
  uint32_t seed = 10;
  for (const ConvCase& k : cases) {
    const cpu::ConvParams p = make_params(k);
    const auto x = random_floats(p.n * p.c * p.h * p.w, seed++);
    const auto w = random_floats(p.m * (p.c / p.group) * p.kh * p.kw, seed++);
    const auto b = random_floats(p.m, seed++);
    const float* bias = k.bias ? b.data() : nullptr;
    INFO(k.name << ": oh=" << p.oh << " ow=" << p.ow);
    CHECK(max_rel_err(run_conv(p, x, w, bias), naive_conv(p, x, w, bias)) <= kTol);
  }
}
