// Canonicalisation inside the planning pipeline (graph/passes, run before plan_fusion by
// Session): BatchNormalization folded into a bias-less conv with a non-default epsilon, and a
// decomposed GELU recognised, so that the planner sees one anchor + epilogue chain.
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// conv (3x3, no bias) -> BatchNormalization (epsilon 1e-3, constant parameters) -> relu.
const char* kConvBnRelu = R"(fusert: 1
name: conv_bn_relu
inputs: [{name: x, shape: [1, 4, 6, 6]}]
outputs: [y]
initializers:
  - {name: w, shape: [3, 4, 3, 3]}
  - {name: bn.scale, shape: [3], value: [1.5, 0.5, -2.0]}
  - {name: bn.bias, shape: [3], value: [0.1, -0.2, 0.3]}
  - {name: bn.mean, shape: [3], value: [0.5, -1.0, 0.25]}
  - {name: bn.var, shape: [3], value: [0.002, 4.0, 0.0005]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w], outputs: [t], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: bn, op: BatchNormalization, inputs: [t, bn.scale, bn.bias, bn.mean, bn.var], outputs: [b], attrs: {epsilon: 0.001}}
  - {name: relu, op: Relu, inputs: [b], outputs: [y]}
)";

// Gemm -> x * 0.5 * (1 + erf(x / sqrt(2))) written out, as torch.onnx.export gives it.
const char* kGemmErfGelu = R"(fusert: 1
name: gemm_erf_gelu
inputs: [{name: x, shape: [4, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [8, 16]}
  - {name: b, shape: [8]}
  - {name: sqrt2, shape: [], value: 1.4142135623730951}
  - {name: one, shape: [], value: 1.0}
  - {name: half, shape: [], value: 0.5}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, b], outputs: [g], attrs: {transB: 1}}
  - {name: div, op: Div, inputs: [g, sqrt2], outputs: [d]}
  - {name: erf, op: Erf, inputs: [d], outputs: [e]}
  - {name: add1, op: Add, inputs: [e, one], outputs: [e1]}
  - {name: mul_x, op: Mul, inputs: [g, e1], outputs: [m]}
  - {name: mul_half, op: Mul, inputs: [m, half], outputs: [y]}
)";

int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

}  // namespace

TEST_SUITE("fusion.canonical") {
  TEST_CASE("canonical: BN (epsilon 1e-3) folds into a bias-less conv, leaving conv + relu for vertical fusion") {
    // Before canonicalisation the BN is neither an epilogue op nor a chain head: 3 kernels.
    Graph raw = load_graph(kConvBnRelu);
    FusionPlan before = plan(raw, all_strategies());
    {
      std::string dump = plan_dump(raw, before);
      INFO(dump);
      check_unfused(raw, before, {"conv", "bn", "relu"});
      CHECK(kernel_count(raw, before) == 3);
    }

    Graph g = load_graph(kConvBnRelu, /*canonicalize=*/true);
    CHECK(count_op(g, OpKind::kBatchNormalization) == 0);
    const Node& conv = g.nodes[static_cast<size_t>(node_index(g, "conv"))];
    REQUIRE(conv.inputs.size() == 3u);
    const Value& bias = g.value(conv.inputs[2]);
    REQUIRE(bias.is_initializer);
    REQUIRE(bias.data.numel() == 3);
    // b'[m] = beta[m] - mean[m] * scale[m] / sqrt(var[m] + eps) with eps = 1e-3 (the BN's own;
    // the ONNX default 1e-5 would give a visibly different bias for var 0.002 and 0.0005).
    const double scale[3] = {1.5, 0.5, -2.0}, beta[3] = {0.1, -0.2, 0.3}, mean[3] = {0.5, -1.0, 0.25},
                 var[3] = {0.002, 4.0, 0.0005};
    for (int m = 0; m < 3; ++m) {
      double want = beta[m] - mean[m] * scale[m] / std::sqrt(var[m] + 1e-3);
      double with_default_eps = beta[m] - mean[m] * scale[m] / std::sqrt(var[m] + 1e-5);
      CAPTURE(m);
      CHECK(bias.data.f32()[m] == doctest::Approx(want).epsilon(1e-6));
      if (m != 1) CHECK(std::abs(want - with_default_eps) > 1e-2);
    }
    // The relu now reads the conv directly; the plan is one anchor+epilogue kernel.
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv", "relu"});
    CHECK(kernel_count(g, p) == 1);

    // End to end: Session(fusion all) canonicalises and fuses; fusion raw runs the BN; fusion
    // none (the fair baseline) folds it and runs conv and relu apart.
    std::string path = write_model(kConvBnRelu, "canon_conv_bn_relu");
    auto fused = open_session(path, "all");
    auto unfused = open_session(path, "raw");
    CHECK(fused->stats().kernels == 1);
    CHECK(unfused->stats().kernels == 3);
    CHECK(open_session(path, "none")->stats().kernels == 2);
    bool logged = false;
    for (const std::string& line : fused->stats().pass_log) logged |= contains(line, "bn_folding");
    CHECK(logged);
    TensorMap in = unfused->seeded_inputs(0);
    check_outputs_close(run_session(*unfused, in), run_session(*fused, in), 1e-5);
  }

  TEST_CASE("canonical: BN without the relu folds too (the conv becomes the graph's last node)") {
    std::string yaml = kConvBnRelu;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [b]");
    yaml.erase(yaml.find("  - {name: relu"));
    Graph g = load_graph(yaml, true);
    CHECK(count_op(g, OpKind::kBatchNormalization) == 0);
    REQUIRE(g.nodes.size() == 1u);
    CHECK(g.nodes[0].op == OpKind::kConv);
    CHECK(g.value(g.nodes[0].outputs[0]).name == "b");  // the graph output keeps its name
    CHECK(check_fused_matches_unfused(yaml, "canon_conv_bn", {"all"}) == 1);
  }

  TEST_CASE("canonical: a BN whose input is also a graph output is not folded (and not fused)") {
    std::string yaml = kConvBnRelu;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, t]");
    Graph g = load_graph(yaml, true);
    CHECK(count_op(g, OpKind::kBatchNormalization) == 1);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv", "bn"});
    check_fused_matches_unfused(yaml, "canon_conv_bn_out", {"all"});
  }

  TEST_CASE("canonical: a decomposed erf GELU after a Gemm becomes Gelu(none) in the gemm's epilogue") {
    Graph g = load_graph(kGemmErfGelu, true);
    REQUIRE(count_op(g, OpKind::kGelu) == 1);
    CHECK(count_op(g, OpKind::kErf) == 0);
    int gelu = -1;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].op == OpKind::kGelu) gelu = static_cast<int>(i);
    CHECK(g.nodes[static_cast<size_t>(gelu)].attr_s("approximate") == "none");
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = group_of(g, p, "gemm");
    CHECK(grp.strategy == Strategy::kVertical);
    CHECK(grp.kind == GroupKind::kAnchorEpilogue);
    REQUIRE(grp.nodes.size() == 2u);
    CHECK(grp.nodes[1] == gelu);
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(kGemmErfGelu, "canon_gelu", {"all"}) == 1);
  }

}  // TEST_SUITE
