// Comparisons, logic, Where and the element-wise ops of several inputs on the CUDA backend
// (runtime/cuda/lower_logic.cc: kernels/cuda/logic.cu, layout.cu's where, nary.cu; no host
// fallback), end to end on the emulated device against the CPU backend: Equal / Less of rounded f32
// (ties are common) / GreaterOrEqual with broadcasting, Greater of i64, And / Or / Xor of the
// results, Not, Where choosing between a broadcast f32 operand and x; Max and Min of three inputs
// (NaNs from a Log of negative values win), Sum of three, Mean of four, PRelu by a [3, 1] slope;
// then the transformer encoder `make onnx-models` exports (an attention mask built with Equal and
// Where), when present. Booleans, selections and the CPU's order of f32 sums: equal to the bit.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/cuda_emu/emu_compare.h"

using namespace fusert;

namespace {

const char* kLogic = R"(fusert: 1
name: logic
inputs:
  - {name: x, shape: [2, 3, 4]}
  - {name: t, shape: [3, 1]}
  - {name: k, shape: [2, 1, 4], dtype: i64}
outputs: [eq, lt, ge, gt, both, either, diff, no, w, mx, mn, sm, mean, pr]
initializers:
  - {name: zero, shape: [], value: 0.0}
  - {name: kk, shape: [4], dtype: i64, value: [0, 1, 2, 3]}
  - {name: fill, shape: [1, 4], value: [-1.0, -2.0, -3.0, -4.0]}
nodes:
  - {name: rx, op: Round, inputs: [x], outputs: [xr]}
  - {name: rt, op: Round, inputs: [t], outputs: [tr]}
  - {name: eq, op: Equal, inputs: [xr, tr], outputs: [eq]}
  - {name: lt, op: Less, inputs: [xr, tr], outputs: [lt]}
  - {name: ge, op: GreaterOrEqual, inputs: [x, zero], outputs: [ge]}
  - {name: gt, op: Greater, inputs: [k, kk], outputs: [gt]}
  - {name: both, op: And, inputs: [lt, ge], outputs: [both]}
  - {name: either, op: Or, inputs: [eq, ge], outputs: [either]}
  - {name: diff, op: Xor, inputs: [lt, ge], outputs: [diff]}
  - {name: no, op: Not, inputs: [both], outputs: [no]}
  - {name: w, op: Where, inputs: [lt, fill, x], outputs: [w]}
  - {name: lg, op: Log, inputs: [x], outputs: [lx]}
  - {name: mx, op: Max, inputs: [lx, t, fill], outputs: [mx]}
  - {name: mn, op: Min, inputs: [x, lx, t], outputs: [mn]}
  - {name: sm, op: Sum, inputs: [x, t, fill], outputs: [sm]}
  - {name: mean, op: Mean, inputs: [x, t, fill, x], outputs: [mean]}
  - {name: pr, op: PRelu, inputs: [x, t], outputs: [pr]}
)";

}  // namespace

TEST_CASE("emu.logic: comparisons, And/Or/Xor/Not, Where, Max/Min/Sum/Mean and PRelu on the device, to the bit") {
  const std::string path = emutest::write_model("logic", kLogic);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  TensorMap in = (*cpu)->seeded_inputs(6);
  for (int64_t i = 0; i < in.at("x").numel(); ++i) in.at("x").f32()[i] *= 2.f;  // Round then meets ties
  for (int64_t i = 0; i < in.at("k").numel(); ++i) in.at("k").i64()[i] = (i * 7) % 5 - 1;
  const TensorMap got = emutest::check_on_device(path, co, in, [](const std::string&) { return 0.0; });
  // By hand: w = lt ? fill : x, fill broadcast along the last dim.
  int64_t wrong = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l) {
        const size_t e = static_cast<size_t>((i * 3 + j) * 4 + l);
        const bool lt =
            std::nearbyint(in.at("x").f32()[e]) < std::nearbyint(in.at("t").f32()[j]);  // Round: half to even
        wrong += got.at("w").f32()[e] != (lt ? -1.f - static_cast<float>(l) : in.at("x").f32()[e]);
      }
  CHECK(wrong == 0);
  std::remove(path.c_str());
}

TEST_CASE("emu.logic: the exported transformer encoder (Equal and Where in its attention mask) on the device") {
  const char* file = FUSERT_TEST_DATA_DIR "/../.cache/transformer-onnx/encoder.onnx";
  if (!std::filesystem::exists(file)) {
    MESSAGE("skipped: " << file << " is missing (make onnx-models writes it)");
    return;
  }
  SessionOptions co;  // ids and mask [batch, seq], planned at the default sizes
  auto cpu = Session::load(file, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  emutest::check_on_device(file, co, (*cpu)->seeded_inputs(2), [](const std::string&) { return 1e-5; });
}
