// Transpose and Concat: hand-computed layouts, then random permutations of odd shapes up to
// rank 6 and concats with an empty input against naive index loops; the channel Concat over
// NCHW, NHWC and nChw8c inputs and outputs against hand-written offsets.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::max_rel_err;
using fusert::test::random_floats;
using fusert::test::volume;
using Shape = std::vector<int64_t>;

namespace {

std::vector<float> run_transpose(const Shape& shape, const Shape& perm, const std::vector<float>& x) {
  std::vector<float> y(x.size(), -777.f);
  cpu::transpose(shape, perm, x.data(), y.data());
  return y;
}

// y[j] for output multi-index j is x at the input index whose coordinate perm[d] is j[d].
std::vector<float> naive_transpose(const Shape& shape, const Shape& perm, const std::vector<float>& x) {
  const size_t rank = shape.size();
  Shape in_stride(rank, 1), out_shape(rank);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * shape[d];
  for (size_t d = 0; d < rank; ++d) out_shape[d] = shape[perm[d]];
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < volume(shape); ++i) {
    int64_t rem = i, src = 0;
    for (size_t d = rank; d-- > 0;) {
      src += (rem % out_shape[d]) * in_stride[perm[d]];
      rem /= out_shape[d];
    }
    y[i] = x[src];
  }
  return y;
}

}  // namespace

TEST_CASE("transpose: hand-computed 2-D and 3-D permutations") {
  expect_values(run_transpose({2, 3}, {1, 0}, {1, 2, 3, 4, 5, 6}), {1, 4, 2, 5, 3, 6}, 0.0);
  // [2,2,2] with perm [2,0,1]: y[k][i][j] = x[i][j][k] = 4i + 2j + k.
  expect_values(run_transpose({2, 2, 2}, {2, 0, 1}, {0, 1, 2, 3, 4, 5, 6, 7}), {0, 2, 4, 6, 1, 3, 5, 7}, 0.0);
  expect_values(run_transpose({3}, {0}, {7, 8, 9}), {7, 8, 9}, 0.0);
  expect_values(run_transpose({}, {}, {42}), {42}, 0.0);
}

TEST_CASE("transpose: matches naive loop for random permutations up to rank 6") {
  const Shape shapes[] = {
      {1},         {127}, {13, 3}, {3, 1, 13, 5}, {2, 3, 4, 5}, {1, 127, 1, 3}, {2, 3, 1, 2, 3, 2}, {3, 2, 5, 1, 2, 7},
      {64, 49, 32}};
  std::mt19937 gen(42);
  uint32_t seed = 1000;
  for (const Shape& shape : shapes) {
    Shape perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (int trial = 0; trial < 6; ++trial) {
      const auto x = random_floats(volume(shape), seed++);
      INFO("rank " << shape.size() << " trial " << trial);
      CHECK(max_rel_err(run_transpose(shape, perm, x), naive_transpose(shape, perm, x)) == 0.0);
      std::shuffle(perm.begin(), perm.end(), gen);
    }
  }
}

TEST_CASE("concat: hand-computed axis-1 concat") {
  // [2,1] ++ [2,2] along axis 1 -> [[1,3,4],[2,5,6]].
  const std::vector<float> a = {1, 2}, b = {3, 4, 5, 6};
  std::vector<float> y(6);
  cpu::concat(2, 1, {1, 2}, {a.data(), b.data()}, y.data());
  expect_values(y, {1, 3, 4, 2, 5, 6}, 0.0);
}

TEST_CASE("concat: matches naive loop with odd sizes and an empty input") {
  const int64_t configs[][2] = {{1, 1}, {3, 13}, {13, 1}, {2, 127}, {127, 3}};
  uint32_t seed = 1100;
  for (const auto& cfg : configs) {
    const int64_t outer = cfg[0], inner = cfg[1];
    const std::vector<int64_t> lens = {3, 0, 1, 13};
    std::vector<std::vector<float>> inputs;
    std::vector<const float*> ptrs;
    for (int64_t len : lens) inputs.push_back(random_floats(outer * len * inner, seed++));
    for (const auto& in : inputs) ptrs.push_back(in.data());
    std::vector<float> y(static_cast<size_t>(outer * 17 * inner)), ref;
    cpu::concat(outer, inner, lens, ptrs, y.data());
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t i = 0; i < lens.size(); ++i) {
        const int64_t n = lens[i] * inner;
        ref.insert(ref.end(), inputs[i].begin() + o * n, inputs[i].begin() + (o + 1) * n);
      }
    }
    INFO("outer=" << outer << " inner=" << inner);
    CHECK(max_rel_err(y, ref) == 0.0);
  }
}

namespace {

enum class Lay { kNchw, kNhwc, kBlocked8, kBlocked16 };

int64_t block_of(Lay l) { return l == Lay::kBlocked8 ? 8 : l == Lay::kBlocked16 ? 16 : 1; }

// The offset of (n, c, h, w) in a [N, C, H, W] tensor stored in `l`, written out by hand.
int64_t offset_of(Lay l, int64_t n, int64_t c, int64_t h, int64_t w, const Shape& d) {
  const int64_t C = d[1], H = d[2], W = d[3];
  if (l == Lay::kNchw) return ((n * C + c) * H + h) * W + w;
  if (l == Lay::kNhwc) return ((n * H + h) * W + w) * C + c;
  const int64_t b = block_of(l);
  return (((n * (C / b) + c / b) * H + h) * W + w) * b + c % b;
}

// The layout argument of cpu::concat_channels for `l`.
std::vector<int64_t> strides_of(Lay l, const Shape& d) {
  const int64_t C = d[1], H = d[2], W = d[3];
  if (l == Lay::kNchw) return {};
  if (l == Lay::kNhwc) return {C * H * W, 1, W * C, C};
  const int64_t b = block_of(l);
  return {C * H * W, H * W * b, W * b, b, b};
}

}  // namespace

TEST_CASE("concat_channels: NCHW, NHWC, nChw8c and nChw16c inputs and outputs against hand-written offsets") {
  const Shape nhw_cases[] = {{1, 1, 1}, {2, 3, 5}, {1, 7, 13}};
  const std::vector<std::vector<int64_t>> channel_cases = {{1, 3, 13}, {8, 16, 8},   {8, 0, 24},
                                                           {127, 1},   {16, 32, 16}, {48}};
  const Lay lays[] = {Lay::kNchw, Lay::kNhwc, Lay::kBlocked8, Lay::kBlocked16};
  uint32_t seed = 1200;
  for (const Shape& nhw : nhw_cases) {
    for (const auto& cs : channel_cases) {
      const int64_t c_total = std::accumulate(cs.begin(), cs.end(), int64_t{0});
      for (Lay out : lays) {
        if (c_total % block_of(out) != 0) continue;
        for (size_t variant = 0; variant < 5; ++variant) {
          // Input i takes layout lays[(i + variant) % 4] (blocked only where C_i is a multiple of the block);
          // variant 4: every input NHWC (with an NHWC output: the one-pass path).
          std::vector<std::vector<float>> xs_nchw, xs_stored;
          std::vector<const float*> ptrs;
          std::vector<std::vector<int64_t>> in_strides;
          const Shape yd = {nhw[0], c_total, nhw[1], nhw[2]};
          for (size_t i = 0; i < cs.size(); ++i) {
            const Shape d = {nhw[0], cs[i], nhw[1], nhw[2]};
            Lay l = variant == 4 ? Lay::kNhwc : lays[(i + variant) % 4];
            if (cs[i] % block_of(l) != 0) l = Lay::kNhwc;
            xs_nchw.push_back(random_floats(volume(d), seed++));
            std::vector<float> stored(xs_nchw.back().size());
            for (int64_t n = 0; n < d[0]; ++n)
              for (int64_t c = 0; c < d[1]; ++c)
                for (int64_t h = 0; h < d[2]; ++h)
                  for (int64_t w = 0; w < d[3]; ++w)
                    stored[offset_of(l, n, c, h, w, d)] = xs_nchw.back()[offset_of(Lay::kNchw, n, c, h, w, d)];
            xs_stored.push_back(stored);
            in_strides.push_back(strides_of(l, d));
          }
          for (const auto& x : xs_stored) ptrs.push_back(x.data());
          std::vector<float> y(static_cast<size_t>(volume(yd)), -1.f);
          const int64_t dims[3] = {nhw[0], nhw[1], nhw[2]};
          cpu::concat_channels(dims, cs, ptrs, in_strides, strides_of(out, yd), y.data());
          int64_t bad = 0, off = 0;
          for (size_t i = 0; i < cs.size(); ++i) {
            const Shape d = {nhw[0], cs[i], nhw[1], nhw[2]};
            for (int64_t n = 0; n < d[0]; ++n)
              for (int64_t c = 0; c < d[1]; ++c)
                for (int64_t h = 0; h < d[2]; ++h)
                  for (int64_t w = 0; w < d[3]; ++w)
                    bad += y[offset_of(out, n, off + c, h, w, yd)] != xs_nchw[i][offset_of(Lay::kNchw, n, c, h, w, d)];
            off += cs[i];
          }
          INFO("n,h,w " << nhw[0] << "," << nhw[1] << "," << nhw[2] << " inputs " << cs.size() << " out layout "
                        << static_cast<int>(out) << " variant " << variant);
          CHECK(bad == 0);
        }
      }
    }
  }
}
