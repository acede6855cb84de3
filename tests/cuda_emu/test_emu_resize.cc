// Resize on the CUDA backend (runtime/cuda/lower_copy.cc: cuda::resize_2d over the sampling tables,
// no host fallback), end to end on the emulated device against the CPU backend, whose Resize passes
// ONNX's conformance cases: nearest 2x (asymmetric, floor: an FPN's upsampling, checked by hand too),
// nearest round_prefer_ceil by sizes, linear half_pixel up by 1.5, linear align_corners down, cubic
// (a = -0.75, exclude_outside) by sizes, on [2, 3, H, W] inputs. The emulation checks every table
// index lies inside x.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/session.h"
#include "tests/cuda_emu/emu.h"

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
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fusert_emu_resize_" + std::to_string(::getpid()) + ".yaml")).string();
  {
    std::ofstream f(path);
    f << kResize;
  }
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  emu::clear_violations();
  const TensorMap in = (*cpu)->seeded_inputs(5);
  auto want = (*cpu)->run(in);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    SessionOptions go = co;
    go.device = "cuda";
    go.fusion = fusion;
    auto gpu = Session::load(path, go);
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
    CHECK((*gpu)->stats().host_fallback_steps == 0);
    for (int rep = 0; rep < 2; ++rep) {
      auto got = (*gpu)->run(in);
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      // By hand: near2[b, c, h, w] = x[b, c, h / 2, w / 2], [2, 3, 10, 14].
      const Tensor& n2 = got->at("near2");
      REQUIRE(n2.shape() == Shape{2, 3, 10, 14});
      int64_t wrong = 0;
      for (int p = 0; p < 6; ++p)
        for (int h = 0; h < 10; ++h)
          for (int w = 0; w < 14; ++w)
            wrong += n2.f32()[(p * 10 + h) * 14 + w] != in.at("x").f32()[(p * 5 + h / 2) * 7 + w / 2];
      CHECK(wrong == 0);
      for (const auto& [name, t] : *want) {
        CAPTURE(name);
        REQUIRE(got->at(name).shape() == t.shape());
        double num = 0, den = 0;
        for (int64_t i = 0; i < t.numel(); ++i) {
          const double d = static_cast<double>(got->at(name).f32()[i]) - t.f32()[i];
          num += d * d;
          den += static_cast<double>(t.f32()[i]) * t.f32()[i];
        }
        CHECK(std::sqrt(num / den) <= 1e-6);  // the same taps and weights; the sums' rounding at most
      }
    }
  }
  CHECK(emu::violations().empty());
  std::remove(path.c_str());
}
