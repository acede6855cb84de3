// bn_folding: BatchNormalization folded into Conv (plain, biased, depthwise) and Gemm
// (transB 0 and 1), checked against hand-computed numbers, against an independent double
// recomputation, and end to end (the runtime's output before and after the fold agree).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

const char* kHead = "fusert: 1\nname: t\n";

// conv (1x1, 1 -> 2 channels, no bias) -> bn with epsilon 1e-3; every tensor a constant.
std::string tiny_conv_bn(const std::string& conv_inputs, const std::string& extra_inits = "") {
  return std::string(kHead) + R"(inputs: [{name: x, shape: [1, 1, 2, 2]}]
outputs: [y]
initializers:
  - {name: w, shape: [2, 1, 1, 1], value: [2.0, -1.0]}
  - {name: bn.scale, shape: [2], value: [1.5, 2.0]}
  - {name: bn.bias, shape: [2], value: [0.1, -0.2]}
  - {name: bn.mean, shape: [2], value: [0.5, -1.0]}
  - {name: bn.var, shape: [2], value: [0.25, 4.0]}
)" + extra_inits +
         R"(nodes:
  - {name: conv, op: Conv, inputs: [)" +
         conv_inputs + R"(], outputs: [t]}
  - {name: bn, op: BatchNormalization, inputs: [t, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], attrs: {epsilon: 0.001}}
)";
}

// Seeded conv -> bn over a [1, cin, 6, 5] input; `attrs` and the weight shape set the kind.
std::string conv_bn(const std::string& wshape, const std::string& attrs, int64_t cin, int64_t cout, bool bias,
                    const std::string& eps = "0.001") {
  std::string c = std::to_string(cout);
  std::string s = std::string(kHead) + "inputs: [{name: x, shape: [1, " + std::to_string(cin) + ", 6, 5]}]\n" +
                  "outputs: [y]\ninitializers:\n  - {name: w, shape: " + wshape + "}\n" +
                  "  - {name: bn.scale, shape: [" + c + "], init: bn_scale}\n  - {name: bn.bias, shape: [" + c +
                  "]}\n" + "  - {name: bn.mean, shape: [" + c + "]}\n  - {name: bn.var, shape: [" + c +
                  "], init: bn_var}\n";
  if (bias) s += "  - {name: b, shape: [" + c + "]}\n";
  s += "nodes:\n  - {name: conv, op: Conv, inputs: [x, w" + std::string(bias ? ", b" : "") +
       "], outputs: [t], attrs: " + attrs + "}\n";
  s += "  - {name: bn, op: BatchNormalization, inputs: [t, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], attrs: "
       "{epsilon: " +
       eps + "}}\n";
  return s;
}

// `s` with the first `from` replaced by `to` (the test fails when `from` is absent).
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

std::vector<double> to_double(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.f32()[i];
  return v;
}

// The BN fold recomputed in double from the original tensors: W'[m,..] = W[m,..] * s[m],
// b'[m] = (b[m] - mean[m]) * s[m] + beta[m], s = scale / sqrt(var + eps).
void check_conv_fold(const Graph& before, const Graph& after, double eps) {
  auto get = [&](const char* n) { return to_double(value_named(before, n).data); };
  std::vector<double> w = get("w"), sc = get("bn.scale"), be = get("bn.bias"), mu = get("bn.mean"), va = get("bn.var");
  std::vector<double> b(sc.size(), 0.0);
  if (before.find_value("b") != kNoValue) b = get("b");
  const Node* conv = find_node(after, "conv");
  REQUIRE(conv);
  REQUIRE(conv->inputs.size() == 3);
  const Tensor& w2 = after.value(conv->inputs[1]).data;
  const Tensor& b2 = after.value(conv->inputs[2]).data;
  REQUIRE(w2.numel() == static_cast<int64_t>(w.size()));
  const size_t m = sc.size(), per = w.size() / m;
  for (size_t c = 0; c < m; ++c) {
    double s = sc[c] / std::sqrt(va[c] + eps);
    for (size_t k = 0; k < per; ++k) CHECK(w2.f32()[c * per + k] == doctest::Approx(w[c * per + k] * s).epsilon(1e-6));
    CHECK(b2.f32()[c] == doctest::Approx((b[c] - mu[c]) * s + be[c]).epsilon(1e-6));
  }
}

// Runs bn_folding and checks: the BN is gone, the conv/gemm writes y, outputs agree.
Graph fold_and_compare(const std::string& yaml, double tol = 2e-5) {
  Graph g = load_graph(yaml);
  Graph before = g;
  for (Value& v : before.values) v.data = v.data.empty() ? v.data : v.data.clone();
  auto in = seeded_inputs(g);
  auto ref = run_graph(before, in);
  CHECK(run_pass(make_bn_folding_pass(), g));
  CHECK(count_op(g, OpKind::kBatchNormalization) == 0);
  check_same_outputs(ref, run_graph(g, in), tol);
  // Weights still read by some node are untouched; a conv weight read only by the folded conv
  // may be scaled in place (it is dead after the fold and dead_code drops it).
  for (const Value& v : before.values) {
    if (!v.is_initializer || value_named(g, v.name).consumers.empty()) continue;
    CHECK(max_abs_diff(value_named(g, v.name).data, v.data) == 0.0);
  }
  return g;
}

}  // namespace

TEST_CASE("bn_folding: conv without bias, epsilon 1e-3, against hand-computed numbers") {
  Graph g = load_graph(tiny_conv_bn("x, w"));
  REQUIRE(run_pass(make_bn_folding_pass(), g));
  REQUIRE(g.nodes.size() == 1);
  const Node& conv = g.nodes[0];
  CHECK(conv.name == "conv");
  CHECK(g.value(conv.outputs[0]).name == "y");  // the BN's output keeps its name
  REQUIRE(conv.inputs.size() == 3);             // a bias input was added
  const Value& w2 = g.value(conv.inputs[1]);
  const Value& b2 = g.value(conv.inputs[2]);
  CHECK(w2.name == "conv.weight_bn_folded");
  CHECK(b2.name == "conv.bias_bn_folded");
  CHECK((w2.is_initializer && !w2.is_constant && w2.shape_known && b2.is_initializer && !b2.is_constant));
  CHECK(w2.shape == Shape{2, 1, 1, 1});
  CHECK(b2.shape == Shape{2});
  // s = scale / sqrt(var + 1e-3): s0 = 1.5 / sqrt(0.251) = 2.99401794, s1 = 2 / sqrt(4.001) = 0.99987502.
  // (epsilon 1e-5 would give W'1 = -0.99999875: the tolerance below tells them apart.)
  CHECK(w2.data.f32()[0] == doctest::Approx(5.9880358804).epsilon(1e-7));
  CHECK(w2.data.f32()[1] == doctest::Approx(-0.9998750234).epsilon(1e-7));
  // b' = (0 - mean) * s + beta.
  CHECK(b2.data.f32()[0] == doctest::Approx(-1.3970089701).epsilon(1e-7));
  CHECK(b2.data.f32()[1] == doctest::Approx(0.7998750234).epsilon(1e-7));
  CHECK(value_named(g, "w").data.f32()[0] == 2.0f);  // original untouched
}

TEST_CASE("bn_folding: conv with bias, against hand-computed numbers") {
  Graph g = load_graph(tiny_conv_bn("x, w, b", "  - {name: b, shape: [2], value: [0.3, 0.3]}\n"));
  REQUIRE(run_pass(make_bn_folding_pass(), g));
  const Tensor& b2 = g.value(g.nodes.at(0).inputs[2]).data;
  // b' = (0.3 - mean) * s + beta.
  CHECK(b2.f32()[0] == doctest::Approx(-0.4988035880).epsilon(1e-7));
  CHECK(b2.f32()[1] == doctest::Approx(1.0998375305).epsilon(1e-7));
}

TEST_CASE("bn_folding: seeded conv 3x3 with and without bias, end to end") {
  for (bool bias : {false, true}) {
    INFO("bias " << bias);
    std::string yaml = conv_bn("[4, 3, 3, 3]", "{pads: [1, 1, 1, 1]}", 3, 4, bias);
    Graph before = load_graph(yaml);
    Graph g = fold_and_compare(yaml);
    check_conv_fold(before, g, 1e-3);
  }
}

TEST_CASE("bn_folding: grouped and depthwise conv") {
  // Depthwise: group = C = M = 6, weight [6, 1, 3, 3]; grouped: 4 -> 6 channels in 2 groups.
  for (auto [w, attrs, cin] :
       {std::tuple<const char*, const char*, int>{"[6, 1, 3, 3]", "{group: 6, strides: [2, 2]}", 6},
        {"[6, 2, 3, 3]", "{group: 2}", 4}}) {
    INFO(attrs);
    std::string yaml = conv_bn(w, attrs, cin, 6, true, "0.01");
    Graph before = load_graph(yaml);
    Graph g = fold_and_compare(yaml);
    check_conv_fold(before, g, 1e-2);
  }
}

TEST_CASE("bn_folding: Gemm with transB 0 and 1, with and without C, non-default alpha/beta") {
  for (int tb : {0, 1}) {
    for (const char* c : {"", ", c", ", cm"}) {
      INFO("transB " << tb << " C '" << c << "'");
      std::string yaml =
          std::string(kHead) + "inputs: [{name: x, shape: [3, 5]}]\noutputs: [y]\ninitializers:\n" +
          "  - {name: w, shape: " + (tb ? "[4, 5]" : "[5, 4]") + "}\n  - {name: c, shape: [4]}\n" +
          "  - {name: cm, shape: [3, 1]}\n" +
          "  - {name: bn.scale, shape: [4], init: bn_scale}\n  - {name: bn.bias, shape: [4]}\n" +
          "  - {name: bn.mean, shape: [4]}\n  - {name: bn.var, shape: [4], init: bn_var}\n" +
          "nodes:\n  - {name: fc, op: Gemm, inputs: [x, w" + c +
          "], outputs: [t], attrs: {transB: " + std::to_string(tb) + ", alpha: 0.5, beta: 2.0}}\n" +
          "  - {name: bn, op: BatchNormalization, inputs: [t, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], " +
          "attrs: {epsilon: 0.001}}\n";
      Graph g = fold_and_compare(yaml);
      const Node* fc = find_node(g, "fc");
      REQUIRE(fc);
      CHECK(fc->attr_f("beta") == 1.0);
      CHECK(g.value(fc->inputs[2]).shape == (std::string(c) == ", cm" ? Shape{3, 4} : Shape{4}));
    }
  }
}

TEST_CASE("bn_folding: Gemm transB=1 scales rows of B, by hand") {
  // B = [[1, 2], [3, 4]] (N = 2 rows, K = 2), BN scale [2, 1], var [1 - eps, 4 - eps] so
  // s = [2, 0.5]: B' = [[2, 4], [1.5, 2]]; C absent: C' = -mean * s + beta = [-1*2 + 0, -(-2)*0.5 + 1].
  std::string yaml = std::string(kHead) + R"(inputs: [{name: x, shape: [1, 2]}]
outputs: [y]
initializers:
  - {name: w, shape: [2, 2], value: [1, 2, 3, 4]}
  - {name: bn.scale, shape: [2], value: [2, 1]}
  - {name: bn.bias, shape: [2], value: [0, 1]}
  - {name: bn.mean, shape: [2], value: [1, -2]}
  - {name: bn.var, shape: [2], value: [0.5, 3.5]}
nodes:
  - {name: fc, op: Gemm, inputs: [x, w], outputs: [t], attrs: {transB: 1}}
  - {name: bn, op: BatchNormalization, inputs: [t, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], attrs: {epsilon: 0.5}}
)";
  Graph g = load_graph(yaml);
  REQUIRE(run_pass(make_bn_folding_pass(), g));
  const Node& fc = g.nodes.at(0);
  const float* w = g.value(fc.inputs[1]).data.f32();
  CHECK(std::vector<float>(w, w + 4) == std::vector<float>{2, 4, 1.5f, 2});
  const float* c = g.value(fc.inputs[2]).data.f32();
  CHECK(std::vector<float>(c, c + 2) == std::vector<float>{-2, 2});
}

TEST_CASE("bn_folding: a chain conv -> bn -> bn folds both; shared weights stay untouched") {
  std::string yaml = std::string(kHead) + R"(inputs: [{name: x, shape: [1, 2, 4, 4]}]
outputs: [y, z]
initializers:
  - {name: w, shape: [2, 2, 1, 1]}
  - {name: s1, shape: [2], init: bn_scale}
  - {name: b1, shape: [2]}
  - {name: m1, shape: [2]}
  - {name: v1, shape: [2], init: bn_var}
  - {name: s2, shape: [2], init: bn_scale}
  - {name: v2, shape: [2], init: bn_var}
nodes:
  - {name: conv, op: Conv, inputs: [x, w], outputs: [t]}
  - {name: bn1, op: BatchNormalization, inputs: [t, s1, b1, m1, v1], outputs: [u]}
  - {name: bn2, op: BatchNormalization, inputs: [u, s2, b1, m1, v2], outputs: [y], attrs: {epsilon: 0.01}}
  - {name: conv2, op: Conv, inputs: [x, w], outputs: [t2]}
  - {name: bn3, op: BatchNormalization, inputs: [t2, s2, b1, m1, v1], outputs: [z]}
)";
  Graph g = fold_and_compare(yaml);
  CHECK(g.nodes.size() == 2);
  // Two folds into `conv` and one into `conv2`, each under a fresh name.
  const Node* conv = find_node(g, "conv");
  const Node* conv2 = find_node(g, "conv2");
  REQUIRE((conv && conv2));
  CHECK(g.value(conv->inputs[1]).name == "conv.weight_bn_folded_2");
  CHECK(g.value(conv2->inputs[1]).name == "conv2.weight_bn_folded");
}

TEST_CASE("bn_folding rejects_multi_use, rejects_graph_output and non-constant weights") {
  const std::string base = conv_bn("[4, 3, 3, 3]", "{pads: [1, 1, 1, 1]}", 3, 4, false);
  SUBCASE("rejects_multi_use: the conv output is also read by a Relu") {
    std::string yaml =
        replaced(base, "outputs: [y]", "outputs: [y, r]") + "  - {name: r, op: Relu, inputs: [t], outputs: [r]}\n";
    Graph g = load_graph(yaml);
    CHECK_FALSE(run_pass(make_bn_folding_pass(), g));
    CHECK(count_op(g, OpKind::kBatchNormalization) == 1);
  }
  SUBCASE("rejects_graph_output: the conv output is a graph output") {
    std::string yaml = replaced(base, "outputs: [y]", "outputs: [y, t]");
    Graph g = load_graph(yaml);
    CHECK_FALSE(run_pass(make_bn_folding_pass(), g));
    CHECK(count_op(g, OpKind::kBatchNormalization) == 1);
  }
  SUBCASE("the conv weight is a graph input") {
    std::string yaml = replaced(replaced(base, "  - {name: w, shape: [4, 3, 3, 3]}\n", ""), "inputs: [{name: x",
                                "inputs: [{name: w, shape: [4, 3, 3, 3]}, {name: x");
    Graph g = load_graph(yaml);
    REQUIRE(g.value(g.find_value("w")).is_graph_input);
    CHECK_FALSE(run_pass(make_bn_folding_pass(), g));
    CHECK(count_op(g, OpKind::kBatchNormalization) == 1);
  }
  SUBCASE("weights not bound yet") {
    auto r = load_model_from_string(base, "t.yaml");
    REQUIRE(r.ok());
    Graph g = std::move(r.value().graph);
    CHECK_FALSE(run_pass(make_bn_folding_pass(), g));
  }
  SUBCASE("a BN after a non-anchor op") {
    std::string yaml = replaced(replaced(replaced(base, "op: Conv, inputs: [x, w]", "op: Relu, inputs: [x]"),
                                         ", attrs: {pads: [1, 1, 1, 1]}", ""),
                                "[1, 3, 6, 5]", "[1, 4, 6, 5]");
    Graph g = load_graph(yaml);
    CHECK_FALSE(run_pass(make_bn_folding_pass(), g));
  }
}

TEST_CASE("bn_folding: ConvTranspose + per-channel Add + BN fold into the ConvTranspose, by hand") {
  // 1 -> 2 channels, 1x1 kernel: W [1, 2, 1, 1] = [2, -1]; the Add gives the bias [0.5, 0.25];
  // the BN is tiny_conv_bn's: s0 = 1.5 / sqrt(0.251) = 2.99401794, s1 = 2 / sqrt(4.001) = 0.99987502.
  Graph g = load_graph(std::string(kHead) + R"(inputs: [{name: x, shape: [1, 1, 2, 2]}]
outputs: [y]
initializers:
  - {name: w, shape: [1, 2, 1, 1], value: [2.0, -1.0]}
  - {name: k, shape: [1, 2, 1, 1], value: [0.5, 0.25]}
  - {name: bn.scale, shape: [2], value: [1.5, 2.0]}
  - {name: bn.bias, shape: [2], value: [0.1, -0.2]}
  - {name: bn.mean, shape: [2], value: [0.5, -1.0]}
  - {name: bn.var, shape: [2], value: [0.25, 4.0]}
nodes:
  - {name: up, op: ConvTranspose, inputs: [x, w], outputs: [t], attrs: {kernel_shape: [1, 1]}}
  - {name: bias, op: Add, inputs: [k, t], outputs: [u]}
  - {name: bn, op: BatchNormalization, inputs: [u, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], attrs: {epsilon: 0.001}}
)");
  REQUIRE(run_pass(make_bn_folding_pass(), g));
  REQUIRE(g.nodes.size() == 1);
  const Node& ct = g.nodes[0];
  CHECK(g.value(ct.outputs[0]).name == "y");
  REQUIRE(ct.inputs.size() == 3);
  const Tensor& w2 = g.value(ct.inputs[1]).data;
  const Tensor& b2 = g.value(ct.inputs[2]).data;
  CHECK(w2.f32()[0] == doctest::Approx(5.9880358804).epsilon(1e-7));
  CHECK(w2.f32()[1] == doctest::Approx(-0.9998750234).epsilon(1e-7));
  // b' = (k - mean) * s + beta: (0.5 - 0.5) * s0 + 0.1; (0.25 + 1) * s1 - 0.2.
  CHECK(b2.f32()[0] == doctest::Approx(0.1).epsilon(1e-7));
  CHECK(b2.f32()[1] == doctest::Approx(1.0498437793).epsilon(1e-7));
}

TEST_CASE("bn_folding: grouped, strided ConvTranspose with bias, Add and BN, end to end") {
  // 4 -> 6 channels in 2 groups: W [4, 3, 2, 2]; output channel m = (c / 2) * 3 + j.
  const std::string yaml = std::string(kHead) + R"(inputs: [{name: x, shape: [2, 4, 3, 5]}]
outputs: [y]
initializers:
  - {name: w, shape: [4, 3, 2, 2]}
  - {name: b, shape: [6]}
  - {name: k, shape: [6, 1, 1]}
  - {name: bn.scale, shape: [6], init: bn_scale}
  - {name: bn.bias, shape: [6]}
  - {name: bn.mean, shape: [6]}
  - {name: bn.var, shape: [6], init: bn_var}
nodes:
  - {name: up, op: ConvTranspose, inputs: [x, w, b], outputs: [t], attrs: {kernel_shape: [2, 2], strides: [2, 2], group: 2}}
  - {name: bias, op: Add, inputs: [t, k], outputs: [u]}
  - {name: bn, op: BatchNormalization, inputs: [u, bn.scale, bn.bias, bn.mean, bn.var], outputs: [y], attrs: {epsilon: 0.01}}
)";
  Graph g = fold_and_compare(yaml);
  CHECK(count_op(g, OpKind::kAdd) == 0);
  // An Add that broadcasts more than the channels stays.
  Graph h = load_graph(replaced(yaml, "{name: k, shape: [6, 1, 1]}", "{name: k, shape: [6, 1, 10]}"));
  REQUIRE(run_pass(make_bn_folding_pass(), h) == false);
  CHECK(count_op(h, OpKind::kAdd) == 1);
}
