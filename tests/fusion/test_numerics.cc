// Numerical contract of fused epilogues, fused against unfused and against hand-computed
// values: NaN/Inf propagate to the same positions, Clip bounds are exact, GELU stays the erf
// form unless the model asks for tanh.
#include "tests/fusion/fusion_test_util.h"

#include <cstring>
#include <limits>

using namespace fusert;
using namespace fusert::ftest;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// 1x1 conv (1 -> 3 channels, constant weights) -> relu on a 4x4 map.
const char* kConv1x1Relu = R"(fusert: 1
name: conv1x1_relu
inputs: [{name: x, shape: [1, 1, 4, 4]}]
outputs: [y]
initializers:
  - {name: w, shape: [3, 1, 1, 1], value: [1.0, -2.0, 0.5]}
  - {name: b, shape: [3], value: [0.1, 0.2, -0.3]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w, b], outputs: [c], attrs: {kernel_shape: [1, 1]}}
  - {name: relu, op: Relu, inputs: [c], outputs: [y]}
)";

// 3x3 conv (seeded weights) -> relu: NaN/Inf spread over neighbourhoods.
const char* kConv3x3Relu = R"(fusert: 1
name: conv3x3_relu
inputs: [{name: x, shape: [1, 2, 6, 6]}]
outputs: [y]
initializers:
  - {name: w, shape: [4, 2, 3, 3]}
  - {name: b, shape: [4]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w, b], outputs: [c], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: relu, op: Relu, inputs: [c], outputs: [y]}
)";

// Gemm [2, 4] x [3, 4]^T (constant weights) -> Clip(-1, 1).
const char* kGemmClip = R"(fusert: 1
name: gemm_clip
inputs: [{name: x, shape: [2, 4]}]
outputs: [y]
initializers:
  - {name: w, shape: [3, 4], value: [0.5, -1.0, 0.25, 2.0, -0.5, 1.5, -0.75, 0.125, 1.0, 0.5, 0.5, -0.25]}
  - {name: b, shape: [3], value: [0.1, -0.1, 0.2]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, b], outputs: [g], attrs: {transB: 1}}
  - {name: clip, op: Clip, inputs: [g], outputs: [y], attrs: {min: -1.0, max: 1.0}}
)";

// Seeded Gemm [8, 16] x [16, 16]^T -> Clip(lo, hi) with the bounds as attributes or inputs.
std::string gemm_clip_seeded(bool bounds_as_inputs) {
  std::string s = R"(fusert: 1
name: gemm_clip_seeded
inputs: [{name: x, shape: [8, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [16, 16]}
  - {name: b, shape: [16]}
  - {name: lo, shape: [], value: -0.3}
  - {name: hi, shape: [], value: 0.2}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, b], outputs: [g], attrs: {transB: 1}}
)";
  s += bounds_as_inputs ? "  - {name: clip, op: Clip, inputs: [g, lo, hi], outputs: [y]}\n"
                        : "  - {name: clip, op: Clip, inputs: [g], outputs: [y], attrs: {min: -0.3, max: 0.2}}\n";
  return s;
}

// Gemm with an identity weight (so the pre-activation is the input exactly) -> Gelu.
std::string gemm_gelu(const std::string& approximate) {
  std::string w;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) w += std::string(w.empty() ? "" : ", ") + (i == j ? "1.0" : "0.0");
  std::string s = R"(fusert: 1
name: gemm_gelu
inputs: [{name: x, shape: [1, 8]}]
outputs: [y]
initializers:
  - {name: w, shape: [8, 8], value: [)" +
                  w + R"(]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w], outputs: [g], attrs: {transB: 1}}
  - {name: gelu, op: Gelu, inputs: [g], outputs: [y])";
  s += approximate.empty() ? "}\n" : ", attrs: {approximate: " + approximate + "}}\n";
  return s;
}

double gelu_erf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (v + 0.044715 * v * v * v)));
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Runs `yaml` fused ("all") and unfused on `x` (input "x"); returns {unfused, fused} output y.
std::pair<Tensor, Tensor> run_both(const std::string& yaml, const std::string& stem, const Tensor& x,
                                   int64_t expect_fused_kernels) {
  std::string path = write_model(yaml, stem);
  auto ref = open_session(path, "none");
  auto fused = open_session(path, "all");
  CHECK(fused->stats().kernels == expect_fused_kernels);
  TensorMap in{{"x", x}};
  return {run_session(*ref, in).at("y"), run_session(*fused, in).at("y")};
}

// Same NaN positions, same infinities, finite values within `tol` (absolute).
void check_same_specials(const Tensor& want, const Tensor& got, double tol) {
  REQUIRE(want.numel() == got.numel());
  for (int64_t i = 0; i < want.numel(); ++i) {
    float a = want.f32()[i], b = got.f32()[i];
    CAPTURE(i);
    CAPTURE(a);
    CAPTURE(b);
    CHECK(std::isnan(a) == std::isnan(b));
    if (std::isinf(a) || std::isinf(b))
      CHECK(a == b);
    else if (!std::isnan(a) && !std::isnan(b))
      CHECK(std::abs(a - b) <= tol);
  }
}

}  // namespace

TEST_SUITE("fusion.numerics") {
  TEST_CASE("numerics: NaN and Inf through conv1x1 -> relu land where the formula puts them, fused and unfused") {
    Tensor x(DType::kF32, {1, 1, 4, 4});
    for (int i = 0; i < 16; ++i) x.f32()[i] = 0.25f * static_cast<float>(i - 8);
    x.f32()[0] = kNaN;
    x.f32()[5] = kInf;
    x.f32()[10] = -kInf;
    auto [unfused, fused] = run_both(kConv1x1Relu, "n_conv1x1_relu", x, 1);
    const float w[3] = {1.0f, -2.0f, 0.5f}, b[3] = {0.1f, 0.2f, -0.3f};
    for (const Tensor* y : {&unfused, &fused}) {
      INFO((y == &fused ? "fused" : "unfused"));
      for (int c = 0; c < 3; ++c) {
        for (int i = 0; i < 16; ++i) {
          float v = w[c] * x.f32()[i] + b[c];
          float want = std::isnan(v) ? v : std::max(v, 0.0f);  // ONNX Relu propagates NaN
          float got = y->f32()[c * 16 + i];
          CAPTURE(c);
          CAPTURE(i);
          CAPTURE(got);
          if (std::isnan(want))
            CHECK(std::isnan(got));
          else if (std::isinf(want) || want == 0.0f)
            CHECK(got == want);
          else
            CHECK(got == doctest::Approx(want).epsilon(1e-6));
        }
      }
    }
    check_same_specials(unfused, fused, 1e-6);
  }

  TEST_CASE("numerics: NaN and Inf through conv3x3 -> relu reach the same positions fused and unfused") {
    Tensor x = seeded_tensor("x", {1, 2, 6, 6}, InitKind::kInput, 0);
    x.f32()[7] = kNaN;        // channel 0, row 1, col 1
    x.f32()[36 + 28] = kInf;  // channel 1, row 4, col 4
    auto [unfused, fused] = run_both(kConv3x3Relu, "n_conv3x3_relu", x, 1);
    int nan_count = 0;
    for (int64_t i = 0; i < unfused.numel(); ++i) nan_count += std::isnan(unfused.f32()[i]);
    CHECK(nan_count >= 4 * 9);  // every output channel over the NaN's 3x3 neighbourhood
    check_same_specials(unfused, fused, 1e-5);
  }

  TEST_CASE("numerics: NaN and Inf through gemm -> clip: NaN stays NaN, Inf clips to the bounds exactly") {
    Tensor x = Tensor::f32({2, 4}, {0.5f, kNaN, -0.25f, 1.0f, 0.75f, -0.5f, kInf, 0.125f});
    auto [unfused, fused] = run_both(kGemmClip, "n_gemm_clip", x, 1);
    const float w[3][4] = {{0.5f, -1.0f, 0.25f, 2.0f}, {-0.5f, 1.5f, -0.75f, 0.125f}, {1.0f, 0.5f, 0.5f, -0.25f}};
    for (const Tensor* y : {&unfused, &fused}) {
      INFO((y == &fused ? "fused" : "unfused"));
      for (int j = 0; j < 3; ++j) {
        CAPTURE(j);
        CHECK(std::isnan(y->f32()[j]));  // row 0 holds the NaN
        // Row 1: +Inf * w[j][2] dominates; Clip gives exactly -1 or 1.
        float want = w[j][2] > 0 ? 1.0f : -1.0f;
        CHECK(same_bits(y->f32()[3 + j], want));
      }
    }
  }

  TEST_CASE("numerics: Clip bounds are kept bit-for-bit where values are clipped") {
    for (bool as_inputs : {false, true}) {
      CAPTURE(as_inputs);
      std::string yaml = gemm_clip_seeded(as_inputs);
      Graph g = load_graph(yaml, true);
      FusionPlan p = plan(g, all_strategies());
      check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "clip"});
      Tensor x = seeded_tensor("x", {8, 16}, InitKind::kInput, 0);
      for (int i = 0; i < x.numel(); ++i) x.f32()[i] *= 3.0f;  // push many values past the bounds
      auto [unfused, fused] = run_both(yaml, as_inputs ? "n_clip_inputs" : "n_clip_attrs", x, 1);
      const float lo = -0.3f, hi = 0.2f;
      int at_lo = 0, at_hi = 0;
      for (const Tensor* y : {&unfused, &fused}) {
        INFO((y == &fused ? "fused" : "unfused"));
        for (int64_t i = 0; i < y->numel(); ++i) {
          float v = y->f32()[i];
          CAPTURE(i);
          CAPTURE(v);
          CHECK(v >= lo);
          CHECK(v <= hi);
          if (v <= lo) CHECK(same_bits(v, lo));
          if (v >= hi) CHECK(same_bits(v, hi));
          if (y == &fused) {
            at_lo += same_bits(v, lo);
            at_hi += same_bits(v, hi);
            // Clipped in one, clipped identically in the other.
            float u = unfused.f32()[i];
            if (same_bits(u, lo) || same_bits(u, hi)) CHECK(same_bits(u, v));
          }
        }
      }
      CHECK(at_lo > 10);
      CHECK(at_hi > 10);
      check_outputs_close({{"y", unfused}}, {{"y", fused}}, 1e-6);
    }
  }

  TEST_CASE("numerics: fused GELU is the erf form by default and tanh only when the model says so") {
    const std::vector<float> xs = {-3.0f, -2.0f, -1.0f, -0.5f, 0.5f, 1.0f, 2.0f, 3.0f};
    // The two forms differ by up to ~4e-4 here (at -3), far above the 1e-6 tolerance below.
    double max_gap = 0;
    for (float v : xs) max_gap = std::max(max_gap, std::abs(gelu_erf(v) - gelu_tanh(v)));
    REQUIRE(max_gap > 1e-4);
    for (std::string mode : {"", "none", "tanh"}) {
      CAPTURE(mode);
      std::string yaml = gemm_gelu(mode);
      Graph g = load_graph(yaml);
      FusionPlan p = plan(g, all_strategies());
      check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "gelu"});
      auto [unfused, fused] =
          run_both(yaml, "n_gelu_" + (mode.empty() ? std::string("default") : mode), Tensor::f32({1, 8}, xs), 1);
      for (const Tensor* y : {&unfused, &fused}) {
        INFO((y == &fused ? "fused" : "unfused"));
        for (size_t i = 0; i < xs.size(); ++i) {
          double want = mode == "tanh" ? gelu_tanh(xs[i]) : gelu_erf(xs[i]);
          CAPTURE(xs[i]);
          CHECK(std::abs(y->f32()[i] - want) <= 1e-6);
        }
      }
    }
  }

}  // TEST_SUITE
