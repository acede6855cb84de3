// Expand, Tile and Pad row kernels (kernels/cpu/data_movement.h) against the element-by-element
// reference loops of kernels/cpu/sequence_kernels.h, bit for bit, on odd shapes, every
// broadcast pattern, ranks 0..5 and element sizes 1, 4 and 8; plus values by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/data_movement.h"
#include "kernels/cpu/sequence_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::volume;
using Shape = std::vector<int64_t>;

namespace {

std::vector<uint8_t> random_bytes(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (uint8_t& b : v) b = static_cast<uint8_t>(gen());
  return v;
}

// Runs the fast kernel and the reference on random bytes; the outputs must be identical.
template <class Fast, class Ref>
bool same_bytes(const Shape& xs, const Shape& ys, size_t es, uint32_t seed, Fast fast, Ref ref) {
  const std::vector<uint8_t> x = random_bytes(volume(xs) * static_cast<int64_t>(es), seed);
  std::vector<uint8_t> got(static_cast<size_t>(volume(ys)) * es, 0xAB), want(got.size(), 0xCD);
  fast(x.data(), got.data());
  ref(x.data(), want.data());
  return got == want;
}

}  // namespace

TEST_CASE("expand_rows, tile_rows, pad_rows by hand") {
  const std::vector<float> x = {1, 2, 3};
  std::vector<float> y(6);
  cpu::expand_rows({3, 1}, {3, 2}, 4, x.data(), y.data());
  CHECK(y == std::vector<float>{1, 1, 2, 2, 3, 3});
  cpu::tile_rows({1, 3}, {2, 3}, 4, x.data(), y.data());
  CHECK(y == std::vector<float>{1, 2, 3, 1, 2, 3});
  std::vector<float> p(7);
  const float zero = 0.f;
  cpu::pad_rows({3}, {2, 2}, 1, &zero, 4, x.data(), p.data());  // reflect
  CHECK(p == std::vector<float>{3, 2, 1, 2, 3, 2, 1});
  cpu::pad_rows({3}, {2, 2}, 2, &zero, 4, x.data(), p.data());  // edge
  CHECK(p == std::vector<float>{1, 1, 1, 2, 3, 3, 3});
  const float nine = 9.f;
  cpu::pad_rows({3}, {1, 3}, 0, &nine, 4, x.data(), p.data());  // constant
  CHECK(p == std::vector<float>{9, 1, 2, 3, 9, 9, 9});
}

TEST_CASE("expand_rows against the reference: every broadcast pattern of odd shapes") {
  const Shape full = {2, 3, 1, 5, 7};
  uint32_t seed = 1;
  for (size_t es : {1, 4, 8}) {
    for (int mask = 0; mask < 32; ++mask) {  // which dims x broadcasts
      Shape xs = full;
      for (size_t d = 0; d < full.size(); ++d)
        if (mask >> d & 1) xs[d] = 1;
      for (size_t drop = 0; drop <= 2; ++drop) {  // x of lower rank
        const Shape xr(xs.begin() + static_cast<long>(drop), xs.end());
        INFO("es " << es << " mask " << mask << " drop " << drop);
        CHECK(same_bytes(
            xr, full, es, seed++, [&](const void* a, void* b) { cpu::expand_rows(xr, full, es, a, b); },
            [&](const void* a, void* b) { cpu::expand(xr, full, es, a, b); }));
      }
    }
  }
  CHECK(same_bytes(
      {}, {}, 4, 7, [](const void* a, void* b) { cpu::expand_rows({}, {}, 4, a, b); },
      [](const void* a, void* b) { cpu::expand({}, {}, 4, a, b); }));
  CHECK(same_bytes(
      {1}, {127, 13}, 4, 8,
      [](const void* a, void* b) {
        cpu::expand_rows({1}, {127, 13}, 4, a, b);
      },
      [](const void* a, void* b) {
        cpu::expand({1}, {127, 13}, 4, a, b);
      }));
}

TEST_CASE("tile_rows against the reference") {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3}, {9}}, {{2, 1}, {6, 13}}, {{1, 3, 5}, {2, 3, 10}}, {{2, 3, 1, 7}, {4, 3, 3, 7}}, {{1}, {1}}, {{}, {}}};
  uint32_t seed = 100;
  for (size_t es : {1, 4, 8}) {
    for (const auto& [xs, ys] : cases) {
      CHECK(same_bytes(
          xs, ys, es, seed++, [&](const void* a, void* b) { cpu::tile_rows(xs, ys, es, a, b); },
          [&](const void* a, void* b) { cpu::tile(xs, ys, es, a, b); }));
    }
  }
}

TEST_CASE("pad_rows against the reference: constant, reflect, edge, pads on every dim") {
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{5}, {2, 3}},           {{1, 3, 4, 5}, {0, 0, 1, 2, 0, 0, 3, 1}}, {{2, 3, 5, 7}, {1, 2, 0, 3, 0, 1, 4, 2}},
      {{13, 3}, {0, 1, 2, 0}}, {{2, 2, 2}, {1, 1, 1, 1, 1, 1}},          {{1, 127, 1, 3}, {0, 0, 0, 2, 0, 0, 0, 2}}};
  const uint64_t value = 0x0123456789abcdefULL;
  uint32_t seed = 200;
  for (size_t es : {1, 4, 8}) {
    for (const auto& [xs, pads] : cases) {
      Shape ys = xs;
      for (size_t d = 0; d < xs.size(); ++d) ys[d] += pads[d] + pads[d + xs.size()];
      for (int mode = 0; mode < 3; ++mode) {
        bool ok_reflect = true;  // reflect pads must be below the dim (the shape function's rule)
        for (size_t d = 0; d < xs.size(); ++d) ok_reflect &= pads[d] < xs[d] && pads[d + xs.size()] < xs[d];
        if (mode == 1 && !ok_reflect) continue;
        INFO("es " << es << " mode " << mode << " rank " << xs.size());
        CHECK(same_bytes(
            xs, ys, es, seed++, [&](const void* a, void* b) { cpu::pad_rows(xs, pads, mode, &value, es, a, b); },
            [&](const void* a, void* b) { cpu::pad(xs, pads, mode, &value, es, a, b); }));
      }
    }
  }
}
