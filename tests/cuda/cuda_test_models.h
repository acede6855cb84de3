// Small graphs shared by the CUDA tests (plan-only in tests/cuda, end to end under emulation in
// tests/cuda_emu), written to temporary YAML files.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace fusert::cudatest {

/// Writes `text` to a temporary "<prefix><stem>.yaml" and returns its path.
inline std::string write_yaml(const std::string& prefix, const std::string& stem, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / (prefix + stem + ".yaml")).string();
  FILE* f = std::fopen(path.c_str(), "w");
  REQUIRE(f != nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

/// Sibling 1x1 convs (horizontal conv), two same-shape Gemms on different inputs (grouped GEMM)
/// and two same-shape LayerNorms on different inputs (grouped row norm).
inline constexpr const char* kMultiAnchor = R"(fusert: 1
name: multi_anchor
inputs: [{name: x, shape: [2, 8, 6, 6]}, {name: a, shape: [4, 16]}, {name: b, shape: [4, 16]}]
outputs: [ya, yb, ga_out, gb_out, na_out, nb_out]
initializers:
  - {name: wa, shape: [4, 8, 1, 1]}
  - {name: ba, shape: [4]}
  - {name: wb, shape: [6, 8, 1, 1]}
  - {name: bb, shape: [6]}
  - {name: wga, shape: [8, 16]}
  - {name: bga, shape: [8]}
  - {name: wgb, shape: [8, 16]}
  - {name: bgb, shape: [8]}
  - {name: sa, shape: [16]}
  - {name: sb, shape: [16]}
nodes:
  - {name: conv_a, op: Conv, inputs: [x, wa, ba], outputs: [ya], attrs: {kernel_shape: [1, 1]}}
  - {name: conv_b, op: Conv, inputs: [x, wb, bb], outputs: [yb], attrs: {kernel_shape: [1, 1]}}
  - {name: ga, op: Gemm, inputs: [a, wga, bga], outputs: [ga_out], attrs: {transB: 1}}
  - {name: gb, op: Gemm, inputs: [b, wgb, bgb], outputs: [gb_out], attrs: {transB: 1}}
  - {name: na, op: LayerNormalization, inputs: [a, sa], outputs: [na_out], attrs: {axis: -1}}
  - {name: nb, op: LayerNormalization, inputs: [b, sb], outputs: [nb_out], attrs: {axis: -1}}
)";

/// Ten Add/Mul ops on [8, 64], each with its own weight: one kernel would need 11 operands, so
/// the 8-operand limit of generated kernels splits the chain.
inline std::string long_chain_yaml() {
  std::string yaml =
      "fusert: 1\nname: long_chain\ninputs: [{name: x, shape: [8, 64]}]\noutputs: [v10]\ninitializers:\n";
  for (int i = 1; i <= 10; ++i) yaml += "  - {name: w" + std::to_string(i) + ", shape: [8, 64]}\n";
  yaml += "nodes:\n";
  for (int i = 1; i <= 10; ++i) {
    const std::string in = i == 1 ? "x" : "v" + std::to_string(i - 1);
    yaml += "  - {name: n" + std::to_string(i) + ", op: " + (i % 2 ? "Add" : "Mul") + ", inputs: [" + in + ", w" +
            std::to_string(i) + "], outputs: [v" + std::to_string(i) + "]}\n";
  }
  return yaml;
}

}  // namespace fusert::cudatest
