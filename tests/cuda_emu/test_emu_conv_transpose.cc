// ConvTranspose on the CUDA backend (runtime/cuda/lower_conv_transpose.cc: cuDNN's backward-data
// convolution and cudnnAddTensor, no host fallback), end to end on the emulated device, whose
// cuDNN is written from the API reference, against the CPU backend's ConvTranspose (which passes
// ONNX's conformance cases): DBNet's 2x2 stride-2 upsampling with a bias; 3x3 stride 2, pads 1,
// output_padding 1, 2 groups; a dilated 3x3; and asymmetric pads, which cuDNN cannot express and
// stay on the host (named by --explain), equal all the same. The emulation checks every buffer
// and the workspace of the algorithm (an exact one: the heuristic lists Winograd and FFT first).
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

const char* kConvTranspose = R"(fusert: 1
name: conv_transposes
inputs:
  - {name: x, shape: [2, 4, 6, 5]}
outputs: [up, odd, dil, asym]
initializers:
  - {name: w_up, shape: [4, 3, 2, 2]}
  - {name: b_up, shape: [3], init: uniform}
  - {name: w_odd, shape: [4, 3, 3, 3]}
  - {name: w_dil, shape: [4, 2, 3, 3]}
  - {name: w_asym, shape: [4, 2, 3, 3]}
nodes:
  - {name: up, op: ConvTranspose, inputs: [x, w_up, b_up], outputs: [up], attrs: {strides: [2, 2]}}
  - {name: odd, op: ConvTranspose, inputs: [x, w_odd], outputs: [odd],
     attrs: {strides: [2, 2], pads: [1, 1, 1, 1], output_padding: [1, 1], group: 2}}
  - {name: dil, op: ConvTranspose, inputs: [x, w_dil], outputs: [dil], attrs: {dilations: [2, 2]}}
  - {name: asym, op: ConvTranspose, inputs: [x, w_asym], outputs: [asym], attrs: {pads: [0, 1, 2, 0]}}
)";

double rel_l2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = static_cast<double>(got.f32()[i]) - want.f32()[i];
    num += d * d;
    den += static_cast<double>(want.f32()[i]) * want.f32()[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("emu.conv_transpose: ConvTranspose on cuDNN's backward data on the device, equal to the CPU's") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fusert_emu_conv_transpose_" + std::to_string(::getpid()) + ".yaml"))
          .string();
  {
    std::ofstream f(path);
    f << kConvTranspose;
  }
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  const TensorMap in = (*cpu)->seeded_inputs(9);
  auto want = (*cpu)->run(in);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  CHECK(want->at("up").shape() == Shape{2, 3, 12, 10});
  CHECK(want->at("odd").shape() == Shape{2, 6, 12, 10});  // 2 (6 - 1) - 2 + 3 + 1
  CHECK(want->at("dil").shape() == Shape{2, 2, 10, 9});
  emu::clear_violations();
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    SessionOptions go = co;
    go.device = "cuda";
    go.fusion = fusion;
    auto gpu = Session::load(path, go);
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
    CHECK((*gpu)->stats().host_fallback_steps == 1);  // asym only
    const std::string explain = (*gpu)->explain();
    CHECK_MESSAGE(explain.find("asym(ConvTranspose): cuDNN: asymmetric pads") != std::string::npos, explain);
    for (int rep = 0; rep < 2; ++rep) {
      auto got = (*gpu)->run(in);
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      for (const auto& [name, t] : *want) {
        CAPTURE(name);
        REQUIRE(got->at(name).shape() == t.shape());
        CHECK(rel_l2(got->at(name), t) <= 1e-6);
      }
    }
  }
  CHECK(emu::violations().empty());
  std::remove(path.c_str());
}
