// pattern_rewrite: decomposed LayerNorm and GELU recognised as one node each (checked against
// the runtime's output of the decomposed graph), and the negative siblings left alone.
#include <doctest/doctest.h>

#include "graph/passes/pattern_rewrite.h"
#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// The decomposed LayerNorm over x [2, 8, 8]; each field is substituted into the YAML so a
// test can change one detail.
struct LnSpec {
  std::string axes1 = "[-1]", axes2 = "[-1]", keepdims = "1", exponent = "2.0";
  std::string eps = "{name: eps, shape: [], value: 0.001}";
  std::string gamma_shape = "[8]";
  std::string sub_inputs = "[x, m]", add_eps_inputs = "[v, eps]";
  std::string mul_inputs = "[n, gamma]", add_inputs = "[ns, beta]";
  bool mul = true, add = true;
  std::string extra_nodes, extra_outputs;
  std::string x_shape = "[2, 8, 8]";
};

std::string ln_yaml(const LnSpec& s) {
  std::string y =
      "fusert: 1\nname: t\ninputs: [{name: x, shape: " + s.x_shape + "}]\noutputs: [y" + s.extra_outputs + "]\n";
  y += "initializers:\n  - {name: two, shape: [], value: " + s.exponent + "}\n  - " + s.eps + "\n";
  y += "  - {name: gamma, shape: " + s.gamma_shape + "}\n  - {name: beta, shape: [8]}\nnodes:\n";
  y += "  - {name: mean, op: ReduceMean, inputs: [x], outputs: [m], attrs: {axes: " + s.axes1 +
       ", keepdims: " + s.keepdims + "}}\n";
  y += "  - {name: sub, op: Sub, inputs: " + s.sub_inputs + ", outputs: [d]}\n";
  y += "  - {name: pow, op: Pow, inputs: [d, two], outputs: [d2]}\n";
  y += "  - {name: var, op: ReduceMean, inputs: [d2], outputs: [v], attrs: {axes: " + s.axes2 + "}}\n";
  y += "  - {name: add_eps, op: Add, inputs: " + s.add_eps_inputs + ", outputs: [ve]}\n";
  y += "  - {name: sqrt, op: Sqrt, inputs: [ve], outputs: [sd]}\n";
  std::string n = s.mul || s.add ? "n" : "y";
  y += "  - {name: div, op: Div, inputs: [d, sd], outputs: [" + n + "]}\n";
  if (s.mul)
    y += "  - {name: mul, op: Mul, inputs: " + s.mul_inputs + ", outputs: [" + std::string(s.add ? "ns" : "y") + "]}\n";
  if (s.add)
    y += "  - {name: add, op: Add, inputs: " + (s.mul ? s.add_inputs : std::string("[n, beta]")) + ", outputs: [y]}\n";
  return y + s.extra_nodes;
}

// Runs pattern_rewrite then dead_code; the outputs must match the decomposed graph's.
Graph rewrite(const std::string& yaml, bool expect_change, double tol = 2e-5) {
  Graph g = load_graph(yaml);
  auto in = seeded_inputs(g);
  auto ref = run_graph(g, in);
  CHECK(run_pass(make_pattern_rewrite_pass(), g) == expect_change);
  run_pass(make_dead_code_pass(), g);
  check_same_outputs(ref, run_graph(g, in), tol);
  return g;
}

const Node& only_node(const Graph& g, OpKind op) {
  REQUIRE(count_op(g, op) == 1);
  for (const Node& n : g.nodes) {
    if (n.op == op) return n;
  }
  return g.nodes.front();
}

std::vector<std::string> input_names(const Graph& g, const Node& n) {
  std::vector<std::string> out;
  for (ValueId id : n.inputs) out.push_back(id == kNoValue ? "" : g.value(id).name);
  return out;
}

}  // namespace

TEST_CASE("layer_norm: the full decomposition becomes LayerNormalization(axis=-1, epsilon)") {
  Graph g = rewrite(ln_yaml({}), true);
  REQUIRE(g.nodes.size() == 1);
  const Node& ln = only_node(g, OpKind::kLayerNormalization);
  CHECK(input_names(g, ln) == std::vector<std::string>{"x", "gamma", "beta"});
  CHECK(g.value(ln.outputs[0]).name == "y");
  CHECK(ln.attr_i("axis") == 2);  // -1, stored canonical as shape inference does
  CHECK(ln.attr_f("epsilon") == doctest::Approx(0.001).epsilon(1e-6));
  CHECK(g.values.size() == 4);  // x, gamma, beta, y: intermediates and constants dropped
}

TEST_CASE("layer_norm: operands in the other order and a positive axis") {
  LnSpec s;
  s.axes1 = "[2]";
  s.add_eps_inputs = "[eps, v]";
  s.mul_inputs = "[gamma, n]";
  s.add_inputs = "[beta, ns]";
  s.eps = "{name: eps, shape: [1], value: 1e-6}";
  Graph g = rewrite(ln_yaml(s), true);
  const Node& ln = only_node(g, OpKind::kLayerNormalization);
  CHECK(g.nodes.size() == 1);
  CHECK(ln.attr_f("epsilon") == doctest::Approx(1e-6).epsilon(1e-5));
}

TEST_CASE("layer_norm: without the affine tail, or with only one of Mul/Add") {
  for (auto [mul, add] : {std::pair{false, false}, {true, false}, {false, true}}) {
    INFO("mul " << mul << " add " << add);
    LnSpec s;
    s.mul = mul;
    s.add = add;
    Graph g = rewrite(ln_yaml(s), true);
    CHECK(g.nodes.size() == 1);
    const Node& ln = only_node(g, OpKind::kLayerNormalization);
    CHECK(ln.inputs.size() == (add ? 3u : 2u));
    const Value& scale = g.value(ln.inputs[1]);
    if (mul) {
      CHECK(scale.name == "gamma");
    } else {  // a unit scale was added
      CHECK((scale.is_constant && scale.shape == Shape{8} && scale.data.f32()[7] == 1.0f));
    }
  }
}

TEST_CASE("layer_norm negative siblings: wrong axis, keepdims 0, eps not scalar, exponent, reused intermediate") {
  auto expect_none = [](const LnSpec& s) {
    Graph g = rewrite(ln_yaml(s), false);
    CHECK(count_op(g, OpKind::kLayerNormalization) == 0);
    CHECK(count_op(g, OpKind::kReduceMean) == 2);
  };
  LnSpec s;
  SUBCASE("mean over axis 1") { s.axes1 = "[1]"; }
  SUBCASE("variance over axis 1") { s.axes2 = "[1]"; }
  SUBCASE("mean over two axes") { s.axes1 = "[1, 2]"; }
  SUBCASE("keepdims 0 (m [8] broadcasts against the wrong axis)") {
    s.keepdims = "0";
    s.x_shape = "[8, 8]";
  }
  SUBCASE("eps is a per-channel tensor, not a scalar") {
    s.eps = "{name: eps, shape: [8], value: [0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001]}";
  }
  SUBCASE("v + v: the epsilon operand is not a constant") { s.add_eps_inputs = "[v, v]"; }
  SUBCASE("exponent 3") { s.exponent = "3.0"; }
  SUBCASE("Sub(mean, x)") { s.sub_inputs = "[m, x]"; }
  SUBCASE("d also read elsewhere") {
    s.extra_nodes = "  - {name: r, op: Relu, inputs: [d], outputs: [r]}\n";
    s.extra_outputs = ", r";
  }
  SUBCASE("the variance is a graph output") { s.extra_outputs = ", v"; }
  SUBCASE("sqrt output read elsewhere") {
    s.extra_nodes = "  - {name: r, op: Relu, inputs: [sd], outputs: [r]}\n";
    s.extra_outputs = ", r";
  }
  expect_none(s);
}

TEST_CASE("layer_norm: a scale or bias not exactly [C] is never absorbed") {
  for (const char* shape : {"[1]", "[1, 8]", "[8, 8]"}) {
    INFO("gamma " << shape);
    LnSpec s;
    s.gamma_shape = shape;
    Graph g = rewrite(ln_yaml(s), true);
    // The normalisation itself is recognised (unit scale); the Mul and Add stay as nodes.
    const Node& ln = only_node(g, OpKind::kLayerNormalization);
    CHECK(g.value(ln.inputs[1]).name != "gamma");
    CHECK(ln.inputs.size() == 2u);
    CHECK(count_op(g, OpKind::kMul) == 1);
    CHECK(count_op(g, OpKind::kAdd) == 1);
  }
}

namespace {

// GELU over x [2, 16]: `body` are node entries computing y from x with the constants below.
std::string gelu_yaml(const std::string& body, const std::string& extra_outputs = "") {
  return "fusert: 1\nname: t\ninputs: [{name: x, shape: [2, 16]}]\noutputs: [y" + extra_outputs +
         "]\ninitializers:\n"
         "  - {name: sqrt2, shape: [], value: 1.41421356}\n  - {name: inv_sqrt2, shape: [], value: 0.70710678}\n"
         "  - {name: half, shape: [], value: 0.5}\n  - {name: one, shape: [], value: 1.0}\n"
         "  - {name: three, shape: [], value: 3.0}\n  - {name: c, shape: [], value: 0.044715}\n"
         "  - {name: k, shape: [], value: 0.7978845608}\n  - {name: odd, shape: [], value: 1.5}\n"
         "  - {name: w, shape: [2, 16]}\n"
         "nodes:\n" +
         body;
}

// x * 0.5 * (1 + erf(x / sqrt(2))) as HF BERT writes it: ((x * 0.5) * (1 + erf(x / 1.41421356))).
const char* kBertGelu = R"(  - {name: h, op: Mul, inputs: [x, half], outputs: [h]}
  - {name: s, op: Div, inputs: [x, sqrt2], outputs: [s]}
  - {name: e, op: Erf, inputs: [s], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: out, op: Mul, inputs: [h, t], outputs: [y]}
)";

const char* kTanhGelu = R"(  - {name: cube, op: Pow, inputs: [x, three], outputs: [x3]}
  - {name: cx3, op: Mul, inputs: [c, x3], outputs: [cx3]}
  - {name: inner, op: Add, inputs: [x, cx3], outputs: [in]}
  - {name: scaled, op: Mul, inputs: [in, k], outputs: [sc]}
  - {name: th, op: Tanh, inputs: [sc], outputs: [th]}
  - {name: t, op: Add, inputs: [one, th], outputs: [t]}
  - {name: xt, op: Mul, inputs: [x, t], outputs: [xt]}
  - {name: out, op: Mul, inputs: [xt, half], outputs: [y]}
)";

std::string edit(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

void expect_gelu(const std::string& body, const char* approximate) {
  Graph g = rewrite(gelu_yaml(body), true, 1e-5);
  REQUIRE(g.nodes.size() == 1);
  const Node& n = only_node(g, OpKind::kGelu);
  CHECK(n.attr_s("approximate") == approximate);
  CHECK(input_names(g, n) == std::vector<std::string>{"x"});
  CHECK(g.value(n.outputs[0]).name == "y");
}

void expect_no_gelu(const std::string& body, const std::string& extra_outputs = "") {
  Graph g = rewrite(gelu_yaml(body, extra_outputs), false, 0.0);
  CHECK(count_op(g, OpKind::kGelu) == 0);
}

}  // namespace

TEST_CASE("gelu: erf form in the common orderings") {
  SUBCASE("(x * 0.5) * (1 + erf(x / sqrt2))") { expect_gelu(kBertGelu, "none"); }
  SUBCASE("x * 0.70710678 instead of x / sqrt2; 1 + erf written Add(1, e)") {
    expect_gelu(
        edit(edit(kBertGelu, "op: Div, inputs: [x, sqrt2]", "op: Mul, inputs: [inv_sqrt2, x]"), "[e, one]", "[one, e]"),
        "none");
  }
  SUBCASE("(x * (1 + erf)) * 0.5") {
    expect_gelu(R"(  - {name: s, op: Div, inputs: [x, sqrt2], outputs: [s]}
  - {name: e, op: Erf, inputs: [s], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: xt, op: Mul, inputs: [t, x], outputs: [xt]}
  - {name: out, op: Mul, inputs: [half, xt], outputs: [y]}
)",
                "none");
  }
  SUBCASE("((1 + erf) * 0.5) * x") {
    expect_gelu(R"(  - {name: s, op: Div, inputs: [x, sqrt2], outputs: [s]}
  - {name: e, op: Erf, inputs: [s], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: th, op: Mul, inputs: [t, half], outputs: [th]}
  - {name: out, op: Mul, inputs: [x, th], outputs: [y]}
)",
                "none");
  }
}

TEST_CASE("gelu: tanh form with Pow(x, 3) or x * (x * x)") {
  SUBCASE("Pow") { expect_gelu(kTanhGelu, "tanh"); }
  SUBCASE("x * (x * x)") {
    expect_gelu(edit(kTanhGelu, "  - {name: cube, op: Pow, inputs: [x, three], outputs: [x3]}\n",
                     "  - {name: sq, op: Mul, inputs: [x, x], outputs: [x2]}\n"
                     "  - {name: cube, op: Mul, inputs: [x2, x], outputs: [x3]}\n"),
                "tanh");
  }
}

TEST_CASE("gelu negative siblings") {
  SUBCASE("erf of x / 1.5: a different constant") { expect_no_gelu(edit(kBertGelu, "[x, sqrt2]", "[x, odd]")); }
  SUBCASE("1.5 instead of 1 in 1 + erf") { expect_no_gelu(edit(kBertGelu, "[e, one]", "[e, odd]")); }
  SUBCASE("1.5 instead of 0.5") { expect_no_gelu(edit(kBertGelu, "[x, half]", "[x, odd]")); }
  SUBCASE("(x * (1 + tanh)) * 1.5") { expect_no_gelu(edit(kTanhGelu, "[xt, half]", "[xt, odd]")); }
  SUBCASE("((1 + erf) * 0.5) * w") {
    expect_no_gelu(R"(  - {name: s, op: Div, inputs: [x, sqrt2], outputs: [s]}
  - {name: e, op: Erf, inputs: [s], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: th, op: Mul, inputs: [t, half], outputs: [th]}
  - {name: out, op: Mul, inputs: [w, th], outputs: [y]}
)");
  }
  SUBCASE("the erf output is also a graph output") { expect_no_gelu(kBertGelu, ", e"); }
  SUBCASE("x / sqrt2 read elsewhere") {
    expect_no_gelu(std::string(kBertGelu) + "  - {name: r, op: Relu, inputs: [s], outputs: [r]}\n", ", r");
  }
  SUBCASE("the outer product uses another tensor") { expect_no_gelu(edit(kBertGelu, "[x, half]", "[w, half]")); }
  SUBCASE("tanh with 0.05 in place of 0.044715") { expect_no_gelu(edit(kTanhGelu, "[c, x3]", "[odd, x3]")); }
  SUBCASE("tanh of x + 0.044715 x^2") {
    expect_no_gelu(edit(kTanhGelu, "  - {name: cube, op: Pow, inputs: [x, three], outputs: [x3]}\n",
                        "  - {name: cube, op: Mul, inputs: [x, x], outputs: [x3]}\n"));
  }
}

TEST_CASE("pattern_rewrite: several blocks in one graph, GELU reading a LayerNorm output") {
  LnSpec s;
  std::string yaml = ln_yaml(s);
  yaml = edit(yaml, "outputs: [y]\n", "outputs: [z]\n");
  yaml = edit(yaml, "initializers:\n",
              "initializers:\n  - {name: half, shape: [], value: 0.5}\n  - {name: one, shape: [], value: 1.0}\n"
              "  - {name: sqrt2, shape: [], value: 1.4142135}\n");
  yaml += R"(  - {name: h, op: Mul, inputs: [y, half], outputs: [h]}
  - {name: s, op: Div, inputs: [y, sqrt2], outputs: [s]}
  - {name: e, op: Erf, inputs: [s], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: out, op: Mul, inputs: [h, t], outputs: [z]}
)";
  Graph g = rewrite(yaml, true, 1e-5);
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].op == OpKind::kLayerNormalization);
  CHECK(g.nodes[1].op == OpKind::kGelu);
}

namespace {

// Toy rule: Relu(Relu(x)) = Relu(x), anchored at the outer Relu. In a chain of three Relus
// the matches at the second and the third overlap (both hold the middle node) though neither
// anchor is inside the other match; the pass must apply only one per sweep.
class DoubleReluRule : public RewriteRule {
 public:
  const char* name() const override { return "double_relu"; }
  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& b = g.nodes[static_cast<size_t>(anchor)];
    const int p = g.value(b.inputs[0]).producer;
    if (b.op != OpKind::kRelu || p < 0 || g.nodes[static_cast<size_t>(p)].op != OpKind::kRelu) return false;
    const Value& mid = g.value(b.inputs[0]);
    if (mid.consumers.size() != 1 || mid.is_graph_output) return false;
    m->root = anchor;
    m->erased = {p};
    m->replacement = b;
    m->replacement.inputs = g.nodes[static_cast<size_t>(p)].inputs;
    return true;
  }
};

}  // namespace

TEST_CASE("pattern_rewrite: overlapping matches are applied one per sweep") {
  Graph g = load_graph(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [4]}]\noutputs: [y]\nnodes:\n"
      "  - {name: r1, op: Relu, inputs: [x], outputs: [a]}\n"
      "  - {name: r2, op: Relu, inputs: [a], outputs: [b]}\n"
      "  - {name: r3, op: Relu, inputs: [b], outputs: [y]}\n");
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(std::make_unique<DoubleReluRule>());
  auto pass = make_pattern_rewrite_pass(std::move(rules));
  CHECK(run_pass(*pass, g));
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].name == "r3");
  CHECK(g.value(g.nodes[0].inputs[0]).name == "x");
  CHECK(pass->summary() == "double_relu x2 (r2, r3)");
}

namespace {

// x * clip(x + 3, 0, 6) / 6 as PaddlePaddle exports hard-swish (clip bounds as constant inputs).
const char* kPaddleHardSwish = R"(  - {name: a, op: Add, inputs: [x, three], outputs: [a]}
  - {name: c, op: Clip, inputs: [a, zero, six], outputs: [c]}
  - {name: m, op: Mul, inputs: [x, c], outputs: [m]}
  - {name: out, op: Div, inputs: [m, six], outputs: [y]}
)";

std::string hardswish_yaml(const std::string& body, const std::string& extra_outputs = "") {
  return "fusert: 1\nname: t\ninputs: [{name: x, shape: [1, 7]}]\noutputs: [y" + extra_outputs +
         "]\ninitializers:\n"
         "  - {name: three, shape: [], value: 3.0}\n  - {name: zero, shape: [], value: 0.0}\n"
         "  - {name: six, shape: [], value: 6.0}\n  - {name: sixth, shape: [], value: 0.16666667}\n"
         "  - {name: five, shape: [], value: 5.0}\n  - {name: w, shape: [1, 7]}\n"
         "nodes:\n" +
         body;
}

// The rewritten graph on x = [-4, -3, -1, 0, 1.5, 3, 5]: hard-swish by hand.
void expect_hardswish(const std::string& body) {
  Graph g = rewrite(hardswish_yaml(body), true, 1e-6);
  REQUIRE(g.nodes.size() == 1);
  const Node& n = only_node(g, OpKind::kHardSwish);
  CHECK(input_names(g, n) == std::vector<std::string>{"x"});
  CHECK(g.value(n.outputs[0]).name == "y");
  TensorMap in{{"x", Tensor::f32({1, 7}, {-4, -3, -1, 0, 1.5f, 3, 5})}};
  const TensorMap out = run_graph(g, in);
  const std::vector<float> want = {0, 0, -1.0f / 3.0f, 0, 1.125f, 3, 5};
  for (size_t i = 0; i < want.size(); ++i) CHECK(out.at("y").f32()[i] == doctest::Approx(want[i]).epsilon(1e-6));
}

void expect_no_hardswish(const std::string& body, const std::string& extra_outputs = "") {
  Graph g = rewrite(hardswish_yaml(body, extra_outputs), false, 0.0);
  CHECK(count_op(g, OpKind::kHardSwish) == 0);
}

}  // namespace

TEST_CASE("hardswish: x * clip(x + 3, 0, 6) / 6 in the exporters' spellings") {
  SUBCASE("Paddle: (x * clip(x + 3)) / 6") { expect_hardswish(kPaddleHardSwish); }
  SUBCASE("operands swapped, * 0.16666667 instead of / 6") {
    expect_hardswish(edit(edit(edit(kPaddleHardSwish, "[x, three]", "[three, x]"), "[x, c]", "[c, x]"),
                          "op: Div, inputs: [m, six]", "op: Mul, inputs: [sixth, m]"));
  }
  SUBCASE("x * (clip(x + 3) / 6): the hard-sigmoid first") {
    expect_hardswish(R"(  - {name: a, op: Add, inputs: [x, three], outputs: [a]}
  - {name: c, op: Clip, inputs: [a, zero, six], outputs: [c]}
  - {name: h, op: Div, inputs: [c, six], outputs: [h]}
  - {name: out, op: Mul, inputs: [h, x], outputs: [y]}
)");
  }
  SUBCASE("clip bounds as attributes (opset < 11)") {
    expect_hardswish(edit(kPaddleHardSwish, "inputs: [a, zero, six], outputs: [c]}",
                          "inputs: [a], outputs: [c], attrs: {min: 0.0, max: 6.0}}"));
  }
}

TEST_CASE("hardswish: x * HardSigmoid(x, 1/6, 1/2) in either order (torchvision's MobileNetV3 before opset 14)") {
  for (const char* order : {"[x, h]", "[h, x]"}) {
    CAPTURE(order);
    expect_hardswish(std::string("  - {name: hs, op: HardSigmoid, inputs: [x], outputs: [h], attrs: {alpha: "
                                 "0.16666667, beta: 0.5}}\n") +
                     "  - {name: out, op: Mul, inputs: " + order + ", outputs: [y]}\n");
  }
  const std::string hs =
      "  - {name: hs, op: HardSigmoid, inputs: [x], outputs: [h], attrs: {alpha: 0.16666667, beta: 0.5}}\n";
  SUBCASE("negative siblings: alpha 0.2 (ONNX's default), beta 0.6, w * HardSigmoid(x), h also a graph output") {
    expect_no_hardswish(edit(hs, "alpha: 0.16666667", "alpha: 0.2") +
                        "  - {name: out, op: Mul, inputs: [x, h], outputs: [y]}\n");
    expect_no_hardswish(edit(hs, "beta: 0.5", "beta: 0.6") +
                        "  - {name: out, op: Mul, inputs: [x, h], outputs: [y]}\n");
    expect_no_hardswish(hs + "  - {name: out, op: Mul, inputs: [w, h], outputs: [y]}\n");
    expect_no_hardswish(hs + "  - {name: out, op: Mul, inputs: [x, h], outputs: [y]}\n", ", h");
  }
}

TEST_CASE("hardswish negative siblings") {
  SUBCASE("clip(x + 3, 0, 5)") { expect_no_hardswish(edit(kPaddleHardSwish, "[a, zero, six]", "[a, zero, five]")); }
  SUBCASE("x + 5") { expect_no_hardswish(edit(kPaddleHardSwish, "[x, three]", "[x, five]")); }
  SUBCASE("divided by 5") { expect_no_hardswish(edit(kPaddleHardSwish, "[m, six]", "[m, five]")); }
  SUBCASE("w * clip(x + 3) / 6") { expect_no_hardswish(edit(kPaddleHardSwish, "[x, c]", "[w, c]")); }
  SUBCASE("the clip output is also a graph output") { expect_no_hardswish(kPaddleHardSwish, ", c"); }
  SUBCASE("x + 3 read elsewhere") {
    expect_no_hardswish(std::string(kPaddleHardSwish) + "  - {name: r, op: Relu, inputs: [a], outputs: [r]}\n", ", r");
  }
}

TEST_CASE("swish: x * sigmoid(x) in either order becomes Swish(x), bit for bit") {
  for (const char* order : {"[x, s]", "[s, x]"}) {
    const std::string body = std::string("  - {name: sig, op: Sigmoid, inputs: [x], outputs: [s]}\n") +
                             "  - {name: out, op: Mul, inputs: " + order + ", outputs: [y]}\n";
    Graph g = rewrite(hardswish_yaml(body), true, 0.0);  // tolerance 0: the same expression
    REQUIRE(g.nodes.size() == 1);
    const Node& n = only_node(g, OpKind::kSwish);
    CHECK(input_names(g, n) == std::vector<std::string>{"x"});
    CHECK(n.attr_f("alpha") == 1.0);
  }
  SUBCASE("negative siblings: w * sigmoid(x); the sigmoid also a graph output") {
    expect_no_hardswish(
        "  - {name: sig, op: Sigmoid, inputs: [x], outputs: [s]}\n  - {name: out, op: Mul, inputs: [w, s], outputs: "
        "[y]}\n");
    Graph g = rewrite(hardswish_yaml("  - {name: sig, op: Sigmoid, inputs: [x], outputs: [s]}\n"
                                     "  - {name: out, op: Mul, inputs: [x, s], outputs: [y]}\n",
                                     ", s"),
                      false, 0.0);
    CHECK(count_op(g, OpKind::kSwish) == 0);
  }
}
