// Shape inference through the loader, against output sizes computed by hand from the ONNX
// formulas: out = floor((in + pad_begin + pad_end - ((k - 1) * d + 1)) / s) + 1 (ceil with
// ceil_mode, dropping a last window that would start in the end padding).
#include <doctest/doctest.h>

#include <string>

#include "graph/shape_inference.h"
#include "tests/graph/graph_test_util.h"

using namespace fusert;
using fusert::test::expect_load_error;
using fusert::test::load_ok;

namespace {

// A one-node model: `inputs` are flow-style input entries, `node` the node's op/inputs/attrs
// (its outputs are [y]), `inits` optional initializer entries.
std::string one_node(const std::string& inputs, const std::string& node, const std::string& inits = "") {
  std::string s =
      "fusert: 1\nname: t\ninputs: [" + inputs + "]\noutputs: [y]\nnodes:\n  - {name: n, outputs: [y], " + node + "}\n";
  if (!inits.empty()) s += "initializers: [" + inits + "]\n";
  return s;
}

struct Inferred {
  Shape shape;
  Node node;
};

Inferred infer(const std::string& inputs, const std::string& node, const std::string& inits = "") {
  ModelSpec m = load_ok(one_node(inputs, node, inits));
  const Graph& g = m.graph;
  return {g.value(g.outputs[0]).shape, g.nodes.at(0)};
}

using Ints = std::vector<int64_t>;

}  // namespace

TEST_CASE("Conv output size: stride, padding, dilation, group, defaults from the weight") {
  // in 10, k 3, s 2, pads 1+1: floor((10 + 2 - 3) / 2) + 1 = 5.
  auto r =
      infer("{name: x, shape: [2, 3, 10, 10]}",
            "op: Conv, inputs: [x, w], attrs: {strides: [2, 2], pads: [1, 1, 1, 1]}", "{name: w, shape: [4, 3, 3, 3]}");
  CHECK(r.shape == Shape{2, 4, 5, 5});
  CHECK(r.node.attr_ints("kernel_shape") == Ints{3, 3});  // taken from the weight
  CHECK(r.node.attr_ints("dilations") == Ints{1, 1});     // defaults sized to 2-D
  // Dilation 2, k 3: effective kernel 5; 10 - 5 + 1 = 6. Dilation [1, 3]: 7 -> 10 - 7 + 1 = 4.
  CHECK(infer("{name: x, shape: [1, 1, 10, 10]}", "op: Conv, inputs: [x, w], attrs: {dilations: [2, 3]}",
              "{name: w, shape: [1, 1, 3, 3]}")
            .shape == Shape{1, 1, 6, 4});
  // Asymmetric pads [top, left, bottom, right] = [0, 1, 2, 3] on 7x8, k 3:
  // H 7 + 0 + 2 - 3 + 1 = 7, W 8 + 1 + 3 - 3 + 1 = 10.
  r = infer("{name: x, shape: [1, 1, 7, 8]}", "op: Conv, inputs: [x, w], attrs: {pads: [0, 1, 2, 3]}",
            "{name: w, shape: [5, 1, 3, 3]}");
  CHECK(r.shape == Shape{1, 5, 7, 10});
  CHECK(r.node.attr_ints("pads") == Ints{0, 1, 2, 3});
  // Group 2: weight [8, 4 / 2, 3, 3], 5 - 3 + 1 = 3. Depthwise: group = C = M.
  CHECK(infer("{name: x, shape: [1, 4, 5, 5]}", "op: Conv, inputs: [x, w, b], attrs: {group: 2}",
              "{name: w, shape: [8, 2, 3, 3]}, {name: b, shape: [8]}")
            .shape == Shape{1, 8, 3, 3});
  CHECK(infer("{name: x, shape: [1, 6, 9, 9]}",
              "op: Conv, inputs: [x, w], attrs: {group: 6, strides: [2, 2], pads: [1, 1, 1, 1]}",
              "{name: w, shape: [6, 1, 3, 3]}")
            .shape == Shape{1, 6, 5, 5});
  // Non-square kernel and stride: k [1, 5], s [3, 1]: H (7 - 1) / 3 + 1 = 3, W 9 - 5 + 1 = 5.
  CHECK(infer("{name: x, shape: [1, 2, 7, 9]}", "op: Conv, inputs: [x, w], attrs: {strides: [3, 1]}",
              "{name: w, shape: [3, 2, 1, 5]}")
            .shape == Shape{1, 3, 3, 5});
}

TEST_CASE("Conv auto_pad SAME_UPPER / SAME_LOWER / VALID resolve into explicit pads") {
  const std::string x = "{name: x, shape: [1, 1, 8, 8]}", w = "{name: w, shape: [1, 1, 3, 3]}";
  // SAME: out = ceil(8 / 2) = 4, total pad = (4 - 1) * 2 + 3 - 8 = 1: UPPER puts it at the end.
  auto up = infer(x, "op: Conv, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: SAME_UPPER}", w);
  CHECK(up.shape == Shape{1, 1, 4, 4});
  CHECK(up.node.attr_ints("pads") == Ints{0, 0, 1, 1});
  CHECK(up.node.attr_s("auto_pad") == "SAME_UPPER");
  auto lo = infer(x, "op: Conv, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: SAME_LOWER}", w);
  CHECK(lo.shape == Shape{1, 1, 4, 4});
  CHECK(lo.node.attr_ints("pads") == Ints{1, 1, 0, 0});
  // Stride 1, k 3: total 2 split evenly; out = in.
  auto even = infer(x, "op: Conv, inputs: [x, w], attrs: {auto_pad: SAME_LOWER}", w);
  CHECK(even.shape == Shape{1, 1, 8, 8});
  CHECK(even.node.attr_ints("pads") == Ints{1, 1, 1, 1});
  // k 4, s 1 on 7x5: total 3 -> UPPER [1 | 2].
  auto k4 = infer("{name: x, shape: [1, 1, 7, 5]}", "op: Conv, inputs: [x, w], attrs: {auto_pad: SAME_UPPER}",
                  "{name: w, shape: [1, 1, 4, 4]}");
  CHECK(k4.shape == Shape{1, 1, 7, 5});
  CHECK(k4.node.attr_ints("pads") == Ints{1, 1, 2, 2});
  // VALID: no padding; (8 - 3) / 2 + 1 = 3.
  auto valid = infer(x, "op: Conv, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: VALID}", w);
  CHECK(valid.shape == Shape{1, 1, 3, 3});
  CHECK(valid.node.attr_ints("pads") == Ints{0, 0, 0, 0});
  expect_load_error(one_node(x, "op: Conv, inputs: [x, w], attrs: {auto_pad: SAME}", w),
                    {"node 'n' (Conv): auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got 'SAME'"});
}

// Dynamic dims infer the same graph again at each new input size: the pads SAME_* derived at the
// first size must not stick. Conv s 2, k 3: 8 -> out 4, total 1; 9 -> out 5, total 2 [1 | 1].
// ConvTranspose with output_shape 9 at s 2, k 3 from 5: full 11, total 2; from 4 (full 9), 0.
TEST_CASE("auto_pad SAME_* and output_shape pads are derived anew when the input size changes") {
  auto reinfer = [](const std::string& node, const std::string& w, Shape first, Shape second) {
    const std::string x = "{name: x, shape: [" + std::to_string(first[0]) + ", " + std::to_string(first[1]) + ", " +
                          std::to_string(first[2]) + ", " + std::to_string(first[3]) + "]}";
    ModelSpec m = load_ok(one_node(x, node, w));
    Graph& g = m.graph;
    g.value(g.inputs[0]).shape = second;
    REQUIRE(infer_shapes(g).ok());
    return Inferred{g.value(g.outputs[0]).shape, g.nodes.at(0)};
  };
  const std::string w = "{name: w, shape: [1, 1, 3, 3]}";
  auto up = reinfer("op: Conv, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: SAME_UPPER}", w, {1, 1, 8, 8},
                    {1, 1, 9, 9});
  CHECK(up.shape == Shape{1, 1, 5, 5});
  CHECK(up.node.attr_ints("pads") == Ints{1, 1, 1, 1});
  auto pool = reinfer("op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], auto_pad: SAME_LOWER}",
                      "", {1, 1, 9, 9}, {1, 1, 8, 8});
  CHECK(pool.shape == Shape{1, 1, 4, 4});
  CHECK(pool.node.attr_ints("pads") == Ints{1, 1, 0, 0});
  const std::string ct =
      "op: ConvTranspose, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: SAME_UPPER, output_shape: [9, 9]}";
  auto first = infer("{name: x, shape: [1, 1, 5, 5]}", ct, w);
  CHECK(first.node.attr_ints("pads") == Ints{1, 1, 1, 1});
  // Same size again: SAME_UPPER's split must survive a second inference (total 2 -> [1 | 1];
  // an odd total shows the side: from 5 with output_shape 8, total 3 -> UPPER [1 | 2]).
  auto odd = reinfer(
      "op: ConvTranspose, inputs: [x, w], attrs: {strides: [2, 2], auto_pad: SAME_UPPER, "
      "output_shape: [8, 8]}",
      w, {1, 1, 5, 5}, {1, 1, 5, 5});
  CHECK(odd.shape == Shape{1, 1, 8, 8});
  CHECK(odd.node.attr_ints("pads") == Ints{1, 1, 2, 2});
  auto smaller = reinfer(ct, w, {1, 1, 5, 5}, {1, 1, 4, 4});
  CHECK(smaller.shape == Shape{1, 1, 9, 9});
  CHECK(smaller.node.attr_ints("pads") == Ints{0, 0, 0, 0});
}

TEST_CASE("MaxPool ceil_mode, including the drop-last-window rule") {
  const std::string x112 = "{name: x, shape: [1, 64, 112, 112]}";
  // k 3, s 2, pad 1 on 112: span 112 + 2 - 3 = 111; floor 111 / 2 + 1 = 56, ceil 56 + 1 = 57
  // (the 57th window starts at 112 - 1 = 111 < 112 + 1, inside the input, so it stays).
  CHECK(infer(x112, "op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1]}")
            .shape == Shape{1, 64, 56, 56});
  CHECK(
      infer(
          x112,
          "op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], ceil_mode: 1}")
          .shape == Shape{1, 64, 57, 57});
  // in 5, k 2, s 2, pad 1: span 5; ceil gives 4 windows, but the 4th would start at padded
  // index 6 = 5 + 1, entirely in the end padding, so it is dropped: 3 (as PyTorch and ONNX).
  auto drop = infer(
      "{name: x, shape: [1, 1, 5, 6]}",
      "op: MaxPool, inputs: [x], attrs: {kernel_shape: [2, 2], strides: [2, 2], pads: [1, 1, 1, 1], ceil_mode: 1}");
  // W 6: span 6, ceil 3 + 1 = 4; the 4th starts at 6 < 6 + 1: kept.
  CHECK(drop.shape == Shape{1, 1, 3, 4});
  // ceil_mode without padding: in 6, k 3, s 2: floor 2, ceil 3 (window at 4..6 is partial).
  CHECK(infer("{name: x, shape: [1, 1, 6, 6]}",
              "op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], ceil_mode: 1}")
            .shape == Shape{1, 1, 3, 3});
  CHECK(infer("{name: x, shape: [1, 1, 6, 6]}",
              "op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2]}")
            .shape == Shape{1, 1, 2, 2});
  // Default strides are 1 (sized to 2-D).
  auto def = infer("{name: x, shape: [1, 1, 4, 4]}", "op: MaxPool, inputs: [x], attrs: {kernel_shape: [2, 2]}");
  CHECK(def.shape == Shape{1, 1, 3, 3});
  CHECK(def.node.attr_ints("strides") == Ints{1, 1});
  CHECK(def.node.attr_ints("pads") == Ints{0, 0, 0, 0});
  // MaxPool with dilation 2: effective 3 on 7 -> 5.
  CHECK(infer("{name: x, shape: [1, 1, 7, 7]}",
              "op: MaxPool, inputs: [x], attrs: {kernel_shape: [2, 2], dilations: [2, 2]}")
            .shape == Shape{1, 1, 5, 5});
  // SAME_UPPER for pooling too: 7 / 2 -> 4.
  CHECK(infer("{name: x, shape: [1, 1, 7, 7]}",
              "op: MaxPool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], auto_pad: SAME_UPPER}")
            .shape == Shape{1, 1, 4, 4});
}

TEST_CASE("AveragePool output sizes") {
  // k [2, 3], s [2, 1], pads [0, 1, 1, 1] on 5x5: H (5 + 1 - 2) / 2 + 1 = 3, W 5 + 2 - 3 + 1 = 5.
  CHECK(infer("{name: x, shape: [2, 3, 5, 5]}",
              "op: AveragePool, inputs: [x], attrs: {kernel_shape: [2, 3], strides: [2, 1], pads: [0, 1, 1, 1]}")
            .shape == Shape{2, 3, 3, 5});
  // ResNet-like 7x7 global window.
  CHECK(
      infer("{name: x, shape: [1, 512, 7, 7]}", "op: AveragePool, inputs: [x], attrs: {kernel_shape: [7, 7]}").shape ==
      Shape{1, 512, 1, 1});
  CHECK(infer("{name: x, shape: [1, 1, 6, 6]}",
              "op: AveragePool, inputs: [x], attrs: {kernel_shape: [3, 3], strides: [2, 2], ceil_mode: 1, "
              "count_include_pad: 1}")
            .shape == Shape{1, 1, 3, 3});
  expect_load_error(
      one_node("{name: x, shape: [1, 1, 2, 2]}", "op: AveragePool, inputs: [x], attrs: {kernel_shape: [3, 3]}"),
      {"node 'n' (AveragePool): kernel 3 larger than padded input 2"});
  expect_load_error(
      one_node("{name: x, shape: [1, 4, 4]}", "op: AveragePool, inputs: [x], attrs: {kernel_shape: [2, 2]}"),
      {"node 'n' (AveragePool): only 2-D NCHW input is supported, got [1, 4, 4]"});
  expect_load_error(
      one_node("{name: x, shape: [1, 1, 4, 4]}", "op: AveragePool, inputs: [x], attrs: {kernel_shape: [2]}"),
      {"kernel_shape needs 2 values"});
  expect_load_error(one_node("{name: x, shape: [1, 1, 4, 4]}",
                             "op: MaxPool, inputs: [x], attrs: {kernel_shape: [2, 2], strides: [0, 1]}"),
                    {"strides must be >= 1"});
}

TEST_CASE("ConvTranspose refuses output_padding past the stride and an empty kernel") {
  const std::string x = "{name: x, shape: [1, 3, 4, 4]}";
  // Allowed: output_padding 1 < stride 2 (out 2 * 3 + 1 + 1 + 1 = 9).
  CHECK(infer(x, "op: ConvTranspose, inputs: [x, w], attrs: {strides: [2, 2], output_padding: [1, 1]}",
              "{name: w, shape: [3, 2, 2, 2]}")
            .shape == Shape{1, 2, 9, 9});
  expect_load_error(one_node(x, "op: ConvTranspose, inputs: [x, w], attrs: {strides: [2, 2], output_padding: [2, 0]}",
                             "{name: w, shape: [3, 2, 2, 2]}"),
                    {"node 'n' (ConvTranspose): output_padding [2, 0] must be smaller than the stride or the dilation "
                     "([2, 2], [1, 1])"});
  expect_load_error(one_node(x, "op: ConvTranspose, inputs: [x, w], attrs: {output_padding: [0, 1]}",
                             "{name: w, shape: [3, 2, 3, 3]}"),
                    {"output_padding [0, 1] must be smaller"});
  expect_load_error(one_node(x, "op: ConvTranspose, inputs: [x, w]", "{name: w, shape: [3, 2, 0, 2]}"),
                    {"node 'n' (ConvTranspose): weight [3, 2, 0, 2] has an empty dim"});
}

TEST_CASE("GlobalAveragePool keeps N, C and sets spatial dims to 1") {
  CHECK(infer("{name: x, shape: [2, 3, 5, 7]}", "op: GlobalAveragePool, inputs: [x]").shape == Shape{2, 3, 1, 1});
  CHECK(infer("{name: x, shape: [1, 4, 9]}", "op: GlobalAveragePool, inputs: [x]").shape == Shape{1, 4, 1});
  expect_load_error(one_node("{name: x, shape: [4, 9]}", "op: GlobalAveragePool, inputs: [x]"),
                    {"input must be [N, C, spatial...], got [4, 9]"});
}

TEST_CASE("Flatten axis: 0, middle, rank, negative") {
  const std::string x = "{name: x, shape: [2, 3, 4, 5]}";
  CHECK(infer(x, "op: Flatten, inputs: [x]").shape == Shape{2, 60});
  CHECK(infer(x, "op: Flatten, inputs: [x], attrs: {axis: 2}").shape == Shape{6, 20});
  CHECK(infer(x, "op: Flatten, inputs: [x], attrs: {axis: 0}").shape == Shape{1, 120});
  CHECK(infer(x, "op: Flatten, inputs: [x], attrs: {axis: 4}").shape == Shape{120, 1});
  CHECK(infer(x, "op: Flatten, inputs: [x], attrs: {axis: -1}").shape == Shape{24, 5});
  expect_load_error(one_node(x, "op: Flatten, inputs: [x], attrs: {axis: 5}"), {"axis out of range for [2, 3, 4, 5]"});
}

TEST_CASE("Reshape with 0 (copy) and -1 (infer) from an i64 constant or the shape attribute") {
  const std::string x = "{name: x, shape: [2, 3, 4]}";
  auto with_shape = [&](const std::string& values, int n) {
    return infer(x, "op: Reshape, inputs: [x, s]",
                 "{name: s, shape: [" + std::to_string(n) + "], dtype: i64, value: [" + values + "]}")
        .shape;
  };
  CHECK(with_shape("0, -1", 2) == Shape{2, 12});
  CHECK(with_shape("4, 0, -1", 3) == Shape{4, 3, 2});  // 0 copies x[1] = 3; -1 = 24 / 12
  CHECK(with_shape("-1", 1) == Shape{24});
  CHECK(with_shape("1, 1, 24, 1", 4) == Shape{1, 1, 24, 1});
  CHECK(infer(x, "op: Reshape, inputs: [x], attrs: {shape: [6, -1]}").shape == Shape{6, 4});
  expect_load_error(one_node(x, "op: Reshape, inputs: [x, s]", "{name: s, shape: [2], dtype: i64, value: [5, -1]}"),
                    {"node 'n' (Reshape): cannot reshape [2, 3, 4] to [5, -1]"});
  expect_load_error(one_node(x, "op: Reshape, inputs: [x, s]", "{name: s, shape: [2], dtype: i64, value: [-1, -1]}"),
                    {"more than one -1 in shape"});
  expect_load_error(one_node(x, "op: Reshape, inputs: [x, s]", "{name: s, shape: [2], dtype: i64, value: [5, 5]}"),
                    {"cannot reshape [2, 3, 4] (24 elements) to [5, 5]"});
  expect_load_error(one_node(x, "op: Reshape, inputs: [x, s]", "{name: s, shape: [2], value: [0, -1]}"),
                    {"input 1 (shape) must be an i64 constant"});
  expect_load_error(one_node(x, "op: Reshape, inputs: [x, s]", "{name: s, shape: [2], dtype: i64, value: [0, -2]}"),
                    {"invalid dimension -2"});
}

TEST_CASE("Transpose: default perm reverses and is written back; explicit perm") {
  auto r = infer("{name: x, shape: [2, 3, 4]}", "op: Transpose, inputs: [x]");
  CHECK(r.shape == Shape{4, 3, 2});
  CHECK(r.node.attr_ints("perm") == Ints{2, 1, 0});
  CHECK(infer("{name: x, shape: [2, 3, 4, 5]}", "op: Transpose, inputs: [x], attrs: {perm: [0, 2, 3, 1]}").shape ==
        Shape{2, 4, 5, 3});
  expect_load_error(one_node("{name: x, shape: [2, 3]}", "op: Transpose, inputs: [x], attrs: {perm: [0, 0]}"),
                    {"perm [0, 0] is not a permutation"});
  expect_load_error(one_node("{name: x, shape: [2, 3]}", "op: Transpose, inputs: [x], attrs: {perm: [0, 1, 2]}"),
                    {"perm has 3 entries for rank 2"});
}

TEST_CASE("Concat along a negative axis; canonicalised axis; mismatch outside the axis") {
  auto r = infer("{name: a, shape: [2, 3, 4]}, {name: b, shape: [2, 5, 4]}, {name: c, shape: [2, 1, 4]}",
                 "op: Concat, inputs: [a, b, c], attrs: {axis: -2}");
  CHECK(r.shape == Shape{2, 9, 4});
  CHECK(r.node.attr_i("axis") == 1);
  CHECK(infer("{name: a, shape: [2, 3]}", "op: Concat, inputs: [a, a], attrs: {axis: -1}").shape == Shape{2, 6});
  expect_load_error(one_node("{name: a, shape: [2, 3, 4]}, {name: b, shape: [2, 5, 3]}",
                             "op: Concat, inputs: [a, b], attrs: {axis: 1}"),
                    {"node 'n' (Concat): input 1 shape [2, 5, 3] does not match [2, 3, 4] outside axis 1"});
  expect_load_error(one_node("{name: a, shape: [2, 3]}", "op: Concat, inputs: [a, a], attrs: {axis: 2}"),
                    {"axis out of range for [2, 3]"});
  expect_load_error(one_node("{name: a, shape: [2, 3]}", "op: Concat, inputs: [a, a], attrs: {axis: -3}"),
                    {"axis out of range for [2, 3]"});
}

TEST_CASE("Gemm with transA / transB and broadcast C") {
  const std::string a = "{name: a, shape: [3, 2]}";
  // transA: A' = A^T [2, 3]; transB: B [5, 3] -> B' [3, 5]: Y [2, 5].
  CHECK(infer(a, "op: Gemm, inputs: [a, b], attrs: {transA: 1, transB: 1}", "{name: b, shape: [5, 3]}").shape ==
        Shape{2, 5});
  CHECK(infer(a, "op: Gemm, inputs: [a, b, c], attrs: {transA: 1}", "{name: b, shape: [3, 7]}, {name: c, shape: [7]}")
            .shape == Shape{2, 7});
  CHECK(infer(a, "op: Gemm, inputs: [a, b, c]", "{name: b, shape: [2, 4]}, {name: c, shape: [3, 1]}").shape ==
        Shape{3, 4});
  CHECK(infer(a, "op: Gemm, inputs: [a, b, c]", "{name: b, shape: [2, 4]}, {name: c, shape: []}").shape == Shape{3, 4});
  expect_load_error(one_node(a, "op: Gemm, inputs: [a, b, c]", "{name: b, shape: [2, 4]}, {name: c, shape: [1, 3, 4]}"),
                    {"C shape [1, 3, 4] does not broadcast to [3, 4]"});
  expect_load_error(one_node("{name: a, shape: [3]}", "op: Gemm, inputs: [a, b]", "{name: b, shape: [3, 4]}"),
                    {"A and B must be 2-D, got [3] and [3, 4]"});
}

TEST_CASE("MatMul: 1-D operands and batch broadcasting") {
  auto mm = [](const std::string& a, const std::string& b) {
    return infer("{name: a, shape: " + a + "}, {name: b, shape: " + b + "}", "op: MatMul, inputs: [a, b]").shape;
  };
  CHECK(mm("[3]", "[3, 4]") == Shape{4});  // [1, 3] @ [3, 4] with the 1 removed
  CHECK(mm("[2, 3]", "[3]") == Shape{2});  // [2, 3] @ [3, 1] with the 1 removed
  CHECK(mm("[3]", "[3]") == Shape{});      // dot product: a scalar
  CHECK(mm("[2, 3]", "[3, 4]") == Shape{2, 4});
  CHECK(mm("[2, 1, 3, 4]", "[5, 4, 6]") == Shape{2, 5, 3, 6});
  CHECK(mm("[3]", "[7, 3, 2]") == Shape{7, 2});
  CHECK(mm("[7, 2, 3]", "[3]") == Shape{7, 2});
}

TEST_CASE("elementwise and broadcast ops: output shapes") {
  CHECK(infer("{name: a, shape: [2, 1, 4]}, {name: b, shape: [3, 1]}", "op: Add, inputs: [a, b]").shape ==
        Shape{2, 3, 4});
  CHECK(infer("{name: a, shape: [5]}, {name: b, shape: []}", "op: Div, inputs: [a, b]").shape == Shape{5});
  CHECK(infer("{name: a, shape: [1, 3, 1, 1]}, {name: b, shape: [2, 3, 4, 4]}", "op: Sub, inputs: [a, b]").shape ==
        Shape{2, 3, 4, 4});
  CHECK(infer("{name: a, shape: [2, 5]}", "op: Softmax, inputs: [a]").node.attr_i("axis") == 1);  // -1 -> 1
  for (const char* op : {"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Identity", "Clip"}) {
    INFO(op);
    CHECK(infer("{name: a, shape: [3, 1, 7]}", std::string("op: ") + op + ", inputs: [a]").shape == Shape{3, 1, 7});
  }
  auto bn = infer("{name: x, shape: [2, 3, 4, 4]}", "op: BatchNormalization, inputs: [x, s, b, m, v]",
                  "{name: s, shape: [3]}, {name: b, shape: [3]}, {name: m, shape: [3]}, {name: v, shape: [3]}");
  CHECK(bn.shape == Shape{2, 3, 4, 4});
  expect_load_error(
      one_node("{name: x, shape: [2, 3, 4, 4]}", "op: BatchNormalization, inputs: [x, s, b, m, v]",
               "{name: s, shape: [3]}, {name: b, shape: [3]}, {name: m, shape: [4]}, {name: v, shape: [3]}"),
      {"node 'n' (BatchNormalization): input 3 ('m') expected shape [3], got [4]"});
  expect_load_error(
      one_node("{name: x, shape: [4]}", "op: Clip, inputs: [x, lo]", "{name: lo, shape: [2], value: [0, 1]}"),
      {"node 'n' (Clip): input 1 (min/max) must be a scalar constant"});
  // A bound computed at run time is valid ONNX that fusert does not run: kUnsupported.
  expect_load_error(one_node("{name: x, shape: [4]}, {name: lo, shape: [1]}", "op: Clip, inputs: [x, lo]"),
                    {"input 1 (min/max) must be a constant"});
  CHECK(fusert::test::load_yaml(one_node("{name: x, shape: [4]}, {name: lo, shape: [1]}", "op: Clip, inputs: [x, lo]"))
            .status()
            .code() == StatusCode::kUnsupported);
  expect_load_error(one_node("{name: a, shape: [2, 5]}", "op: Softmax, inputs: [a], attrs: {axis: 2}"),
                    {"axis out of range for [2, 5]"});
}

TEST_CASE("broadcast_shapes follows numpy rules") {
  Shape out;
  CHECK(broadcast_shapes({2, 1, 4}, {3, 1}, &out));
  CHECK(out == Shape{2, 3, 4});
  CHECK(broadcast_shapes({}, {2, 2}, &out));
  CHECK(out == Shape{2, 2});
  CHECK(broadcast_shapes({1}, {1}, &out));
  CHECK(out == Shape{1});
  out = {9};
  CHECK_FALSE(broadcast_shapes({2, 3}, {3, 2}, &out));
  CHECK(out == Shape{9});  // untouched on failure
  CHECK_FALSE(broadcast_shapes({4}, {2, 3}, &out));
}
