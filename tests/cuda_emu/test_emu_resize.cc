// Resize on the CUDA backend (runtime/cuda/lower_copy.cc: cuda::resize_2d over the sampling tables,
// no host fallback), end to end on the emulated device against the CPU backend, whose Resize passes
// ONNX's conformance cases: nearest 2x (asymmetric, floor: an FPN's upsampling, checked by hand too),
// nearest round_prefer_ceil by sizes, linear half_pixel up by 1.5, linear align_corners down, cubic
// (a = -0.75, exclude_outside) by sizes, on [2, 3, H, W] inputs. The emulation checks every table
// index lies inside x.
#include <cstdio>
#include <string>

#include "tests/cuda_emu/emu_compare.h"

using namespace fusert;

namespace {

const char* kResize = R"(fusert: 1
name: resizes
inputs:
  - {name: x, shape: [2, 3, 5, 7]}
outputs: [near2, nsize, lin, down, cub]
initializers:
  - {name: s2, shape: [4], value: [1.0, 1.0, 2.0, 2.0]}
  - {name: s15, shape: [4], value: [1.0, 1.0, 1.5, 1.5]}
  - {name: ssz, shape: [4], dtype: i64, value: [2, 3, 8, 4]}
  - {name: dsz, shape: [4], dtype: i64, value: [2, 3, 3, 4]}
  - {name: csz, shape: [4], dtype: i64, value: [2, 3, 9, 11]}
nodes:
  - {name: near2, op: Resize, inputs: [x, "", s2], outputs: [near2],
     attrs: {mode: nearest, coordinate_transformation_mode: asymmetric, nearest_mode: floor}}
  - {name: nsize, op: Resize, inputs: [x, "", "", ssz], outputs: [nsize],
     attrs: {mode: nearest, nearest_mode: round_prefer_ceil}}
  - {name: lin, op: Resize, inputs: [x, "", s15], outputs: [lin], attrs: {mode: linear}}
  - {name: down, op: Resize, inputs: [x, "", "", dsz], outputs: [down],
     attrs: {mode: linear, coordinate_transformation_mode: align_corners}}
  - {name: cub, op: Resize, inputs: [x, "", "", csz], outputs: [cub],
     attrs: {mode: cubic, cubic_coeff_a: -0.75, exclude_outside: 1}}
)";

}  // namespace

TEST_CASE("emu.resize: nearest, linear and cubic Resize on the device, equal to the CPU's (ONNX-checked) Resize") {
  const std::string path = emutest::write_model("resize", kResize);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  const TensorMap in = (*cpu)->seeded_inputs(5);
  // The same taps and weights as the CPU; the sums' rounding at most.
  const TensorMap got = emutest::check_on_device(path, co, in, [](const std::string&) { return 1e-6; });
  // By hand: near2[b, c, h, w] = x[b, c, h / 2, w / 2], [2, 3, 10, 14].
  const Tensor& n2 = got.at("near2");
  REQUIRE(n2.shape() == Shape{2, 3, 10, 14});
  int64_t wrong = 0;
  for (int p = 0; p < 6; ++p)
    for (int h = 0; h < 10; ++h)
      for (int w = 0; w < 14; ++w)
        wrong += n2.f32()[(p * 10 + h) * 14 + w] != in.at("x").f32()[(p * 5 + h / 2) * 7 + w / 2];
  CHECK(wrong == 0);
  std::remove(path.c_str());
}
