// Comparisons, logic, Where and the element-wise ops of several inputs on the CUDA backend
// (runtime/cuda/lower_logic.cc: kernels/cuda/logic.cu, layout.cu's where, nary.cu; no host
// fallback), end to end on the emulated device against the CPU backend: Equal / Less of rounded f32
// (ties are common) / GreaterOrEqual with broadcasting, Greater of i64, And / Or / Xor of the
// results, Not, Where choosing between a broadcast f32 operand and x; Max and Min of three inputs
// (NaNs from a Log of negative values win), Sum of three, Mean of four, PRelu by a [3, 1] slope;
// then the transformer encoder `make onnx-models` exports (an attention mask built with Equal and
// Where), when present. Booleans, selections and the CPU's order of f32 sums: equal to the bit.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/session.h"
#include "tests/cuda_emu/emu.h"

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

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void compare_with_cpu(const std::string& path, const SessionOptions& co, const TensorMap& in, double tol) {
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
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
    auto got = (*gpu)->run(in);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    for (const auto& [name, t] : *want) {
      CAPTURE(name);
      if (tol == 0 || t.dtype() != DType::kF32) {
        CHECK(same_bits(got->at(name), t));
        continue;
      }
      double num = 0, den = 0;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double d = static_cast<double>(got->at(name).f32()[i]) - t.f32()[i];
        num += d * d;
        den += static_cast<double>(t.f32()[i]) * t.f32()[i];
      }
      CHECK(std::sqrt(num / den) <= tol);
    }
  }
}

}  // namespace

TEST_CASE("emu.logic: comparisons, And/Or/Xor/Not, Where, Max/Min/Sum/Mean and PRelu on the device, to the bit") {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fusert_emu_logic_" + std::to_string(::getpid()) + ".yaml")).string();
  {
    std::ofstream f(path);
    f << kLogic;
  }
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  TensorMap in = (*cpu)->seeded_inputs(6);
  for (int64_t i = 0; i < in.at("x").numel(); ++i) in.at("x").f32()[i] *= 2.f;  // Round then meets ties
  for (int64_t i = 0; i < in.at("k").numel(); ++i) in.at("k").i64()[i] = (i * 7) % 5 - 1;
  emu::clear_violations();
  compare_with_cpu(path, co, in, 0);
  // By hand: w = lt ? fill : x, fill broadcast along the last dim.
  auto got = (*cpu)->run(in);
  REQUIRE(got.ok());
  int64_t wrong = 0;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int l = 0; l < 4; ++l) {
        const size_t e = static_cast<size_t>((i * 3 + j) * 4 + l);
        const bool lt =
            std::nearbyint(in.at("x").f32()[e]) < std::nearbyint(in.at("t").f32()[j]);  // Round: half to even
        wrong += got->at("w").f32()[e] != (lt ? -1.f - static_cast<float>(l) : in.at("x").f32()[e]);
      }
  CHECK(wrong == 0);
  CHECK(emu::violations().empty());
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
  emu::clear_violations();
  compare_with_cpu(file, co, (*cpu)->seeded_inputs(2), 1e-5);
  CHECK(emu::violations().empty());
}
