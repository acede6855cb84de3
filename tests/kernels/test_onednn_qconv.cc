// oneDNN's int8 convolution (kernels/cpu/onednn.h QConvAnchor) against the reference QLinearConv
// (cpu::qlinear_conv: ConvInteger then requantize_one, ONNX Runtime's arithmetic, checked against ONNX
// Runtime's outputs in tools/ort_cases_quant.py and by hand in tests/graph/test_onnx_quant.cc), to the
// bit. The requantisation runs as the primitive's epilogue where its f32 arithmetic is exact; the
// multipliers here are powers of two, so that many products land on .5 exactly: round half to even
// and an odd output zero point added after the rounding (not before) are both exercised. A
// convolution whose accumulator may pass 2^24 keeps our own requantisation pass, also to the bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/onednn.h"
#include "kernels/cpu/quantize.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
namespace ft = fusert::test;
using fusert::DType;

namespace {

struct QCase {
  const char* name;
  cpu::ConvParams p;
  DType xt, yt;
  int32_t zx, zy;
  bool bias, relu;
  int w_max;  ///< weights uniform in [-w_max, w_max]
};

template <typename T>
std::vector<T> random_ints(int64_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& e : v) e = static_cast<T>(d(rng));
  return v;
}

cpu::Requant requant(const QCase& q, uint32_t seed) {
  cpu::Requant r;
  std::mt19937 rng(seed);
  for (int64_t c = 0; c < q.p.m; ++c) r.multiplier.push_back(std::ldexp(1.f, -static_cast<int>(rng() % 6) - 1));
  if (q.bias) r.bias = random_ints<int32_t>(q.p.m, -3000, 3000, seed + 1);
  if (q.relu) r.lo = 0.f;  // Relu: 0 in y units
  r.zero_point = q.zy;
  r.out = q.yt;
  return r;
}

// Runs one case through the anchor (NCHW in and out, then NHWC out) and the reference; returns the
// anchor's description.
std::string check_case(const QCase& q) {
  const cpu::ConvParams& p = q.p;
  const int64_t x_count = p.n * p.c * p.h * p.w, y_count = p.n * p.m * p.oh * p.ow;
  const std::vector<int8_t> w = random_ints<int8_t>(p.m * (p.c / p.group) * p.kh * p.kw, -q.w_max, q.w_max, 7);
  const std::vector<uint8_t> x = random_ints<uint8_t>(x_count, 0, 255, 8);  // s8: the same bytes
  const cpu::Requant r = requant(q, 11);
  const int32_t zx = q.xt == DType::kI8 ? static_cast<int8_t>(q.zx) : q.zx;
  const int8_t zx8 = static_cast<int8_t>(q.zx), zw = 0;
  std::vector<uint8_t> want(static_cast<size_t>(y_count)), got(want.size());
  cpu::qlinear_conv(p, x.data(), q.xt, &zx8, w.data(), DType::kI8, &zw, 1, r, want.data());
  std::string why;
  auto a = cpu::onednn::QConvAnchor::create(p, q.xt, zx, w.data(), r, &why);
  REQUIRE_MESSAGE(a, why);
  a->run(x.data(), got.data());
  CHECK_MESSAGE(got == want, a->describe());
  // NHWC out: the same values, transposed.
  a->use_native(false, true);
  a->run(x.data(), got.data());
  const int64_t pixels = p.oh * p.ow;
  int64_t wrong = 0;
  for (int64_t b = 0; b < p.n; ++b)
    for (int64_t c = 0; c < p.m; ++c)
      for (int64_t i = 0; i < pixels; ++i) wrong += got[(b * pixels + i) * p.m + c] != want[(b * p.m + c) * pixels + i];
  CHECK_MESSAGE(wrong == 0, a->describe());
  return a->describe();
}

}  // namespace

TEST_CASE("onednn: int8 convolutions requantised in the epilogue equal the reference QLinearConv to the bit") {
  if (!cpu::onednn::built()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  const std::vector<QCase> cases = {
      {"3x3 u8, zero points 128 / 3, bias", ft::conv(1, 8, 9, 9, 12, 3, 1, 1, 1, 1, 1, 1, 1), DType::kU8, DType::kU8,
       128, 3, true, false, 127},
      {"1x1 u8 -> s8, odd zero point, Relu", ft::conv(2, 16, 7, 6, 24, 1, 1, 1, 1, 0, 0, 0, 0), DType::kU8, DType::kI8,
       7, -5, true, true, 60},
      {"depthwise stride 2, asymmetric pads", ft::conv(1, 16, 11, 11, 16, 3, 2, 1, 16, 1, 0, 1, 1), DType::kU8,
       DType::kU8, 121, 9, true, false, 127},
      {"s8 in, no bias, grouped", ft::conv(1, 12, 8, 8, 18, 3, 1, 1, 3, 1, 1, 1, 1), DType::kI8, DType::kU8, 0xfd, 1,
       false, false, 127},
      {"RGB stem stride 2", ft::conv(1, 3, 16, 16, 32, 3, 2, 1, 1, 1, 1, 1, 1), DType::kU8, DType::kU8, 114, 0, true,
       true, 127},
  };
  for (const QCase& q : cases) {
    CAPTURE(q.name);
    const std::string d = check_case(q);
    CHECK_MESSAGE(d.find("requantised in its epilogue") != std::string::npos, d);
  }
}

TEST_CASE("onednn: an int8 convolution whose accumulator may pass 2^24 keeps the exact requantisation pass") {
  if (!cpu::onednn::built()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  // 1024 channels x 3 x 3 x 127 x 255 = 3e8 > 2^24: f32 could round the accumulator before the bias.
  const QCase q = {
      "wide 3x3", ft::conv(1, 1024, 4, 4, 8, 3, 1, 1, 1, 1, 1, 1, 1), DType::kU8, DType::kU8, 0, 3, true, false, 127};
  const std::string d = check_case(q);
  CHECK_MESSAGE(d.find("requantised by us") != std::string::npos, d);
}
