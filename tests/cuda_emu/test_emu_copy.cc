// Slice, Split, Expand, constant Pad and Tile on the CUDA backend (runtime/cuda/lower_copy.cc: strided copies on the
// device, no host fallback), end to end on the emulated device against the CPU backend. Copies move
// values, so they must be equal exactly; the emulation checks every access of each copy stays inside
// its buffers. Pad in reflect mode and in edge mode, and a Tile of 72 tiles
// (one gather, pad_map). Slice with two axes, a negative start, a negative step and an end beyond the dim;
// Split into unequal parts along a middle axis; Expand of a [C, 1] operand to [N, C, W]; constant
// Pad with a value input, and a zero Pad of H and W; Tile by [1, 2, 1, 3].
#include <cstdio>
#include <string>

#include "tests/cuda_emu/emu_compare.h"

using namespace fusert;

namespace {

const char* kCopies = R"(fusert: 1
name: copies
inputs:
  - {name: x, shape: [2, 6, 5, 7]}
  - {name: e, shape: [6, 1]}
outputs: [s, a, b, c, w, p, q, t, rp, ep, bt]
initializers:
  - {name: starts, shape: [2], dtype: i64, value: [-2, 1]}
  - {name: ends, shape: [2], dtype: i64, value: [-100, 100]}
  - {name: axes, shape: [2], dtype: i64, value: [3, 1]}
  - {name: steps, shape: [2], dtype: i64, value: [-2, 2]}
  - {name: split, shape: [3], dtype: i64, value: [1, 3, 1]}
  - {name: to, shape: [3], dtype: i64, value: [2, 6, 4]}
  - {name: pads, shape: [8], dtype: i64, value: [0, 1, 0, 2, 0, 0, 2, 1]}
  - {name: half, shape: [], value: 1.5}
  - {name: zpads, shape: [8], dtype: i64, value: [0, 0, 1, 1, 0, 0, 1, 1]}
  - {name: reps, shape: [4], dtype: i64, value: [1, 2, 1, 3]}
  - {name: rpads, shape: [8], dtype: i64, value: [0, 2, 4, 1, 0, 3, 0, 6]}
  - {name: epads, shape: [8], dtype: i64, value: [1, 0, 2, 0, 0, 1, 3, 2]}
  - {name: breps, shape: [4], dtype: i64, value: [1, 1, 9, 8]}
nodes:
  - {name: slice, op: Slice, inputs: [x, starts, ends, axes, steps], outputs: [s]}
  - {name: split, op: Split, inputs: [x, split], outputs: [a, b, c], attrs: {axis: 2}}
  - {name: expand, op: Expand, inputs: [e, to], outputs: [w]}
  - {name: pad, op: Pad, inputs: [x, pads, half], outputs: [p]}
  - {name: zpad, op: Pad, inputs: [x, zpads], outputs: [q]}
  - {name: tile, op: Tile, inputs: [x, reps], outputs: [t]}
  - {name: rpad, op: Pad, inputs: [x, rpads], outputs: [rp], attrs: {mode: reflect}}
  - {name: epad, op: Pad, inputs: [x, epads], outputs: [ep], attrs: {mode: edge}}
  - {name: btile, op: Tile, inputs: [x, breps], outputs: [bt]}
)";

}  // namespace

TEST_CASE("emu.copies: Slice (negative start and step), Split, Expand, Pad and Tile on the device, equal to the CPU") {
  const std::string path = emutest::write_model("copies", kCopies);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  const TensorMap in = (*cpu)->seeded_inputs(3);
  // Copies move values: every output equal to the CPU's to the bit.
  const TensorMap got = emutest::check_on_device(path, co, in, [](const std::string&) { return 0.0; });
  CHECK(got.at("s").shape() == Shape{2, 3, 5, 3});  // axis 1: 1, 3, 5; axis 3: 5, 3, 1
  // By hand: s[b, i, h, j] = x[b, 1 + 2i, h, 5 - 2j]; w[n, c, k] = e[c, 0]; b = x[:, :, 1:4, :].
  const float* x = in.at("x").f32();
  const float* sv = got.at("s").f32();
  int64_t wrong = 0;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int h = 0; h < 5; ++h)
        for (int j = 0; j < 3; ++j)
          wrong += sv[((b * 3 + i) * 5 + h) * 3 + j] != x[((b * 6 + 1 + 2 * i) * 5 + h) * 7 + 5 - 2 * j];
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 6; ++c)
      for (int k = 0; k < 4; ++k) wrong += got.at("w").f32()[(n * 6 + c) * 4 + k] != in.at("e").f32()[c];
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 6; ++c)
      for (int h = 0; h < 3; ++h)
        for (int j = 0; j < 7; ++j)
          wrong += got.at("b").f32()[((b * 6 + c) * 3 + h) * 7 + j] != x[((b * 6 + c) * 5 + 1 + h) * 7 + j];
  // p = Pad(x, begins [0, 1, 0, 2], ends [0, 0, 2, 1], 1.5): [2, 7, 7, 10]; p[b, c, h, w] =
  // x[b, c - 1, h, w - 2] where that is inside x, else 1.5.
  const float* pv = got.at("p").f32();
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 7; ++c)
      for (int h = 0; h < 7; ++h)
        for (int w = 0; w < 10; ++w) {
          const int xc = c - 1, xw = w - 2;
          const bool in_x = xc >= 0 && h < 5 && xw >= 0 && xw < 7;
          wrong += pv[((b * 7 + c) * 7 + h) * 10 + w] != (in_x ? x[((b * 6 + xc) * 5 + h) * 7 + xw] : 1.5f);
        }
  // t = Tile(x, [1, 2, 1, 3]): [2, 12, 5, 21]; t[b, c, h, w] = x[b, c % 6, h, w % 7].
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 12; ++c)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 21; ++w)
          wrong += got.at("t").f32()[((b * 12 + c) * 5 + h) * 21 + w] != x[((b * 6 + c % 6) * 5 + h) * 7 + w % 7];
  CHECK(wrong == 0);
  // rp = Pad(x, begins [0, 2, 4, 1], ends [0, 3, 0, 6], reflect): [2, 11, 9, 14]; along each dim
  // the index j = o - begin mirrored (-j below 0, 2 (len - 1) - j above).
  const auto mirror = [](int o, int b, int len) {
    const int j = o - b;
    return j < 0 ? -j : j >= len ? 2 * (len - 1) - j : j;
  };
  CHECK(got.at("rp").shape() == Shape{2, 11, 9, 14});
  for (int b = 0; b < 2; ++b)
    for (int c = 0; c < 11; ++c)
      for (int h = 0; h < 9; ++h)
        for (int w = 0; w < 14; ++w)
          wrong += got.at("rp").f32()[((b * 11 + c) * 9 + h) * 14 + w] !=
                   x[((b * 6 + mirror(c, 2, 6)) * 5 + mirror(h, 4, 5)) * 7 + mirror(w, 1, 7)];
  // bt = Tile(x, [1, 1, 9, 8]): 72 tiles in one launch; bt[b, c, h, w] = x[b, c, h % 5, w % 7].
  for (int p = 0; p < 12; ++p)
    for (int h = 0; h < 45; ++h)
      for (int w = 0; w < 56; ++w) wrong += got.at("bt").f32()[(p * 45 + h) * 56 + w] != x[(p * 5 + h % 5) * 7 + w % 7];
  CHECK(wrong == 0);
  std::remove(path.c_str());
}
