// The channel-blocked kernels (kernels/cpu/blocked.h) at odd sizes, batch > 1 and every block
// (1: NCHW, C: NHWC, 8 and 16: oneDNN's blocks) against formulas written out here in double over
// NCHW indices, the input and the expected output put in block order by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/blocked.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::random_floats;

namespace {

struct Dims4 {
  int64_t n, c, h, w, b;
};

// Element (i, ch, y, x) of an [n, c, h, w] tensor in block b: [n][c/b][h][w][b].
int64_t at(const Dims4& d, int64_t i, int64_t ch, int64_t y, int64_t x) {
  return (((i * (d.c / d.b) + ch / d.b) * d.h + y) * d.w + x) * d.b + ch % d.b;
}

std::vector<float> to_block(const Dims4& d, const std::vector<float>& nchw) {
  std::vector<float> out(nchw.size());
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t ch = 0; ch < d.c; ++ch)
      for (int64_t y = 0; y < d.h; ++y)
        for (int64_t x = 0; x < d.w; ++x) out[at(d, i, ch, y, x)] = nchw[((i * d.c + ch) * d.h + y) * d.w + x];
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += std::abs(got[i] - want[i]) > tol * (1.0 + std::abs(want[i]));
  CHECK(bad == 0);
}

const Dims4 kCases[] = {{2, 13, 5, 7, 1},    {2, 13, 5, 7, 13}, {3, 16, 3, 5, 8}, {1, 32, 4, 4, 16},
                        {2, 127, 3, 1, 127}, {1, 1, 3, 3, 1},   {2, 24, 1, 1, 8}};

}  // namespace

TEST_CASE("blocked: block_of and blocked_strides name NCHW, NHWC and channel blocks") {
  CHECK(cpu::block_of({}, 13, 5, 7) == 1);
  CHECK(cpu::block_of({455, 35, 7, 1}, 13, 5, 7) == 1);
  CHECK(cpu::block_of({455, 1, 91, 13}, 13, 5, 7) == 13);               // NHWC
  CHECK(cpu::block_of({16 * 15, 8 * 15, 8 * 5, 8, 8}, 16, 3, 5) == 8);  // nChw8c
  CHECK(cpu::block_of({455, 1, 13, 65}, 13, 5, 7) == 0);                // NWHC: none of them
  CHECK(cpu::block_of({13 * 15, 8 * 15, 8 * 5, 8, 8}, 13, 3, 5) == 0);  // 13 channels, blocks of 8
  for (const Dims4& d : kCases) {
    CAPTURE(d.c);
    CAPTURE(d.b);
    CHECK(cpu::block_of(cpu::blocked_strides(d.b, d.c, d.h, d.w), d.c, d.h, d.w) == d.b);
  }
  CHECK(cpu::blocked_shape({2, 16, 3, 5}, 16, 8) == std::vector<int64_t>{2, 2, 3, 5, 8});
  CHECK(cpu::blocked_shape({2, 16, 1, 1}, 16, 16) == std::vector<int64_t>{2, 1, 1, 1, 16});
  CHECK(cpu::blocked_shape({2, 1, 3, 5}, 16, 8) == std::vector<int64_t>{2, 1, 3, 5, 1});
}

TEST_CASE("blocked: BatchNormalization and GlobalAveragePool in every block") {
  for (const Dims4& d : kCases) {
    CAPTURE(d.c);
    CAPTURE(d.b);
    const int64_t count = d.n * d.c * d.h * d.w;
    const std::vector<float> x = random_floats(static_cast<size_t>(count), 11);
    const std::vector<float> scale = random_floats(static_cast<size_t>(d.c), 12), bias = random_floats(d.c, 13),
                             mean = random_floats(d.c, 14);
    std::vector<float> var = random_floats(static_cast<size_t>(d.c), 15);
    for (float& v : var) v = std::abs(v) + 0.1f;
    std::vector<double> bn(static_cast<size_t>(count)), gap(static_cast<size_t>(d.n * d.c), 0.0);
    for (int64_t i = 0; i < d.n; ++i)
      for (int64_t ch = 0; ch < d.c; ++ch)
        for (int64_t p = 0; p < d.h * d.w; ++p) {
          const double v = x[static_cast<size_t>((i * d.c + ch) * d.h * d.w + p)];
          bn[static_cast<size_t>(at(d, i, ch, p / d.w, p % d.w))] =
              (v - mean[ch]) * scale[ch] / std::sqrt(var[ch] + 1e-3) + bias[ch];
          gap[static_cast<size_t>(i * d.c + ch)] += v / static_cast<double>(d.h * d.w);
        }
    const std::vector<float> xb = to_block(d, x);
    std::vector<float> y(static_cast<size_t>(count), -777.f), g(static_cast<size_t>(d.n * d.c), -777.f);
    cpu::batch_norm_blocked(d.n, d.c, d.h * d.w, d.b, xb.data(), scale.data(), bias.data(), mean.data(), var.data(),
                            1e-3f, y.data());
    expect_close(y, bn, 1e-5);
    cpu::global_avg_pool_blocked(d.n, d.c, d.h * d.w, d.b, xb.data(), g.data());
    expect_close(g, gap, 1e-5);
  }
}

TEST_CASE("blocked: Resize nearest, linear and cubic in every block") {
  for (const Dims4& d : kCases) {
    for (int taps : {1, 2, 4}) {
      CAPTURE(d.c);
      CAPTURE(d.b);
      CAPTURE(taps);
      const int64_t oh = 2 * d.h + 1, ow = 2 * d.w;
      // Tables by hand: nearest o -> o / 2 (clamped), linear between o / 2 and the next source
      // pixel with weights 0.75 / 0.25 (a weight of 1 where they meet at the edge).
      auto table = [&](int64_t in, int64_t out) {
        cpu::ResizeAxis a;
        a.taps = taps;
        for (int64_t o = 0; o < out; ++o) {
          const int64_t i0 = std::min(o / 2, in - 1), i1 = std::min(i0 + 1, in - 1);
          if (taps == 4) {  // cubic-like: four neighbours (edge-clamped) weighted -0.1, 0.6, 0.6, -0.1
            const float w4[4] = {-0.1f, 0.6f, 0.6f, -0.1f};
            for (int t = 0; t < 4; ++t) {
              a.index.push_back(std::min(std::max<int64_t>(i0 - 1 + t, 0), in - 1));
              a.weight.push_back(w4[t]);
            }
            continue;
          }
          a.index.push_back(i0);
          a.weight.push_back(taps == 1 ? 1.f : 0.75f);
          if (taps == 2) a.index.push_back(i1), a.weight.push_back(0.25f);
        }
        return a;
      };
      const cpu::ResizeAxis rows = table(d.h, oh), cols = table(d.w, ow);
      const std::vector<float> x = random_floats(static_cast<size_t>(d.n * d.c * d.h * d.w), 21);
      const Dims4 od{d.n, d.c, oh, ow, d.b};
      std::vector<double> want(static_cast<size_t>(d.n * d.c * oh * ow), 0.0);
      for (int64_t i = 0; i < d.n; ++i)
        for (int64_t ch = 0; ch < d.c; ++ch)
          for (int64_t r = 0; r < oh; ++r)
            for (int64_t q = 0; q < ow; ++q) {
              double v = 0;
              for (int tr = 0; tr < taps; ++tr)
                for (int tc = 0; tc < taps; ++tc) {
                  const size_t er = static_cast<size_t>(r * taps + tr), ec = static_cast<size_t>(q * taps + tc);
                  v += static_cast<double>(rows.weight[er]) * cols.weight[ec] *
                       x[static_cast<size_t>(((i * d.c + ch) * d.h + rows.index[er]) * d.w + cols.index[ec])];
                }
              want[static_cast<size_t>(at(od, i, ch, r, q))] = v;
            }
      const std::vector<float> xb = to_block(d, x);
      std::vector<float> y(want.size(), -777.f);
      cpu::resize_2d_blocked(d.n, d.c, d.b, d.h, d.w, oh, ow, rows, cols, xb.data(), y.data());
      expect_close(y, want, 1e-6);
    }
  }
}

TEST_CASE("blocked: binary ops on blocked shapes with per-channel, per-pixel and full operands") {
  for (const Dims4& d : kCases) {
    CAPTURE(d.c);
    CAPTURE(d.b);
    const int64_t count = d.n * d.c * d.h * d.w;
    const std::vector<int64_t> out = {d.n, d.c, d.h, d.w};
    const std::vector<float> x = random_floats(static_cast<size_t>(count), 31), full = random_floats(count, 32),
                             chan = random_floats(static_cast<size_t>(d.n * d.c), 33),
                             pix = random_floats(static_cast<size_t>(d.n * d.h * d.w), 34);
    const std::vector<float> xb = to_block(d, x), fb = to_block(d, full);
    std::vector<double> mul(static_cast<size_t>(count)), add(mul.size()), sub(mul.size());
    for (int64_t i = 0; i < d.n; ++i)
      for (int64_t ch = 0; ch < d.c; ++ch)
        for (int64_t p = 0; p < d.h * d.w; ++p) {
          const size_t src = static_cast<size_t>((i * d.c + ch) * d.h * d.w + p);
          const size_t dst = static_cast<size_t>(at(d, i, ch, p / d.w, p % d.w));
          mul[dst] = static_cast<double>(x[src]) * chan[static_cast<size_t>(i * d.c + ch)];
          add[dst] = static_cast<double>(pix[static_cast<size_t>(i * d.h * d.w + p)]) + x[src];
          sub[dst] = static_cast<double>(x[src]) - full[src];
        }
    auto run = [&](cpu::BinaryKind k, const std::vector<int64_t>& as, const float* a, const std::vector<int64_t>& bs,
                   const float* b) {
      std::vector<float> y(static_cast<size_t>(count), -777.f);
      cpu::binary(k, cpu::blocked_shape(out, d.c, d.b), cpu::blocked_shape(as, d.c, d.b), a,
                  cpu::blocked_shape(bs, d.c, d.b), b, y.data());
      return y;
    };
    expect_close(run(cpu::BinaryKind::kMul, out, xb.data(), {d.n, d.c, 1, 1}, chan.data()), mul, 1e-6);
    expect_close(run(cpu::BinaryKind::kAdd, {d.n, 1, d.h, d.w}, pix.data(), out, xb.data()), add, 1e-6);
    expect_close(run(cpu::BinaryKind::kSub, out, xb.data(), out, fb.data()), sub, 1e-6);
  }
}
