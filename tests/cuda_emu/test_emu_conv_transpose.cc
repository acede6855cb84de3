// ConvTranspose on the CUDA backend (runtime/cuda/lower_conv_transpose.cc: cuDNN's backward-data
// convolution and cudnnAddTensor, no host fallback), end to end on the emulated device, whose
// cuDNN is written from the API reference, against the CPU backend's ConvTranspose (which passes
// ONNX's conformance cases): DBNet's 2x2 stride-2 upsampling with a bias; 3x3 stride 2, pads 1,
// output_padding 1, 2 groups; a dilated 3x3; and asymmetric pads, which cuDNN cannot express and
// stay on the host (named by --explain), equal all the same. The emulation checks every buffer
// and the workspace of the algorithm (an exact one: the heuristic lists Winograd and FFT first).
#include <cstdio>
#include <string>

#include "tests/cuda_emu/emu_compare.h"

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

}  // namespace

TEST_CASE("emu.conv_transpose: ConvTranspose on cuDNN's backward data on the device, equal to the CPU's") {
  const std::string path = emutest::write_model("conv_transpose", kConvTranspose);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  const TensorMap in = (*cpu)->seeded_inputs(9);
  const TensorMap got = emutest::check_on_device(
      path, co, in, [](const std::string&) { return 1e-6; }, 1);  // asym
  CHECK(got.at("up").shape() == Shape{2, 3, 12, 10});
  CHECK(got.at("odd").shape() == Shape{2, 6, 12, 10});  // 2 (6 - 1) - 2 + 3 + 1
  CHECK(got.at("dil").shape() == Shape{2, 2, 10, 9});
  SessionOptions go = co;
  go.device = "cuda";
  go.plan_only = true;
  auto plan = Session::load(path, go);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  const std::string explain = (*plan)->explain();
  CHECK_MESSAGE(explain.find("asym(ConvTranspose): cuDNN: asymmetric pads") != std::string::npos, explain);
  std::remove(path.c_str());
}
