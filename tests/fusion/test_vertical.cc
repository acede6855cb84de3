// Vertical fusion (graph/fusion/vertical.h): producer-consumer chains on one path, as
// before/expected pairs on tiny inline graphs; each positive case has a named negative sibling
// whose refusal (key and reason) is asserted, and each positive case runs fused vs unfused.
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// x -> conv (3x3, bias) -> relu -> y; `relu_extra` is appended to the relu node's mapping.
std::string conv_relu(const std::string& outputs = "[y]", const std::string& relu_extra = "") {
  return R"(fusert: 1
name: conv_relu
inputs: [{name: x, shape: [1, 4, 8, 8]}]
outputs: )" +
         outputs + R"(
initializers:
  - {name: w, shape: [8, 4, 3, 3]}
  - {name: b, shape: [8]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w, b], outputs: [c], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: relu, op: Relu, inputs: [c], outputs: [y])" +
         relu_extra + R"(}
)";
}

// Gemm (transB 1, no bias) -> Add of a constant bias row -> Gelu (erf).
const char* kGemmBiasGelu = R"(fusert: 1
name: gemm_bias_gelu
inputs: [{name: x, shape: [4, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [8, 16]}
  - {name: bias, shape: [8], value: [0.1, -0.2, 0.3, -0.4, 0.5, -0.6, 0.7, -0.8]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w], outputs: [g], attrs: {transB: 1}}
  - {name: add_bias, op: Add, inputs: [g, bias], outputs: [gb]}
  - {name: gelu, op: Gelu, inputs: [gb], outputs: [y]}
)";

// Conv -> Clip(0, 6) -> GlobalAveragePool: the reducing GAP tail of a conv epilogue.
const char* kConvClipGap = R"(fusert: 1
name: conv_clip_gap
inputs: [{name: x, shape: [1, 4, 8, 8]}]
outputs: [y]
initializers:
  - {name: w, shape: [8, 4, 3, 3]}
  - {name: b, shape: [8]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w, b], outputs: [c], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: clip, op: Clip, inputs: [c], outputs: [r], attrs: {min: 0.0, max: 6.0}}
  - {name: gap, op: GlobalAveragePool, inputs: [r], outputs: [y]}
)";

// An elementwise chain with no anchor: Sigmoid -> Mul const -> Add const -> Tanh.
const char* kElementwiseChain = R"(fusert: 1
name: ew_chain
inputs: [{name: x, shape: [2, 3, 5]}]
outputs: [y]
initializers:
  - {name: two, shape: [], value: 2.0}
  - {name: shift, shape: [5], value: [-1.0, -0.5, 0.0, 0.5, 1.0]}
nodes:
  - {name: sig, op: Sigmoid, inputs: [x], outputs: [s]}
  - {name: mul, op: Mul, inputs: [s, two], outputs: [m]}
  - {name: add, op: Add, inputs: [m, shift], outputs: [a]}
  - {name: tanh, op: Tanh, inputs: [a], outputs: [y]}
)";

// relu(x) feeds a Gemm and, as the residual, the Add after it: a join of two computed paths,
// then LayerNorm -> Mul const (post-norm scale).
const char* kJoinLayerNorm = R"(fusert: 1
name: join_layernorm
inputs: [{name: x, shape: [4, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [16, 16]}
  - {name: wb, shape: [16]}
  - {name: ln.weight, shape: [16], init: bn_scale}
  - {name: ln.bias, shape: [16]}
  - {name: half, shape: [], value: 0.5}
nodes:
  - {name: relu, op: Relu, inputs: [x], outputs: [r]}
  - {name: gemm, op: Gemm, inputs: [r, w, wb], outputs: [g], attrs: {transB: 1}}
  - {name: residual, op: Add, inputs: [g, r], outputs: [s]}
  - {name: ln, op: LayerNormalization, inputs: [s, ln.weight, ln.bias], outputs: [n], attrs: {axis: -1, epsilon: 0.00001}}
  - {name: scale, op: Mul, inputs: [n, half], outputs: [y]}
)";

// Gemm -> Add(graph input) -> LayerNorm: a graph input is available before the Gemm starts,
// so the Add is an epilogue step, not a join.
const char* kGemmAddInputLayerNorm = R"(fusert: 1
name: gemm_add_input_layernorm
inputs: [{name: x, shape: [4, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [16, 16]}
  - {name: wb, shape: [16]}
  - {name: ln.weight, shape: [16], init: bn_scale}
  - {name: ln.bias, shape: [16]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, wb], outputs: [g], attrs: {transB: 1}}
  - {name: residual, op: Add, inputs: [g, x], outputs: [s]}
  - {name: ln, op: LayerNormalization, inputs: [s, ln.weight, ln.bias], outputs: [y], attrs: {axis: -1, epsilon: 0.00001}}
)";

// Gemm followed by `n` transcendental ops alternating Gelu / Sigmoid (a1 .. an).
std::string gemm_long_chain(int n) {
  std::string s = R"(fusert: 1
name: gemm_long_chain
inputs: [{name: x, shape: [4, 16]}]
outputs: [a)" + std::to_string(n) +
                  R"(]
initializers:
  - {name: w, shape: [8, 16]}
  - {name: b, shape: [8]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, b], outputs: [a0], attrs: {transB: 1}}
)";
  for (int i = 1; i <= n; ++i) {
    std::string id = std::to_string(i), prev = std::to_string(i - 1);
    s += "  - {name: a" + id + ", op: " + (i % 2 ? "Gelu" : "Sigmoid") + ", inputs: [a" + prev + "], outputs: [a" + id +
         "]}\n";
  }
  return s;
}

}  // namespace

TEST_SUITE("fusion.vertical") {
  TEST_CASE("vertical: conv -> relu becomes one anchor+epilogue kernel") {
    Graph g = load_graph(conv_relu());
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv", "relu"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(conv_relu(), "v_conv_relu", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: rejects_multi_use (the conv output feeds relu and sigmoid)") {
    std::string yaml = conv_relu("[y, z]") + "  - {name: sig, op: Sigmoid, inputs: [c], outputs: [z]}\n";
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv", "relu", "sig"});
    CHECK(kernel_count(g, p) == 3);
    auto r = rejections(p, "multi_use");
    REQUIRE(r.size() == 1u);
    CHECK(r[0]->strategy == Strategy::kVertical);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"conv", "relu"});
    CHECK(r[0]->reason == "not fused: 'c' has 2 consumers");
  }

  TEST_CASE("vertical: rejects_graph_output (the conv output is also a graph output)") {
    Graph g = load_graph(conv_relu("[y, c]"));
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv", "relu"});
    CHECK(kernel_count(g, p) == 2);
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"conv", "relu"});
    CHECK(r[0]->reason == "not fused: 'c' is a graph output");
    // Fused and unfused agree on both outputs, the intermediate included.
    check_fused_matches_unfused(conv_relu("[y, c]"), "v_conv_relu_out", {"all"});
  }

  TEST_CASE("vertical: rejects a `fuse: never` hint on the consumer") {
    Graph g = load_graph(conv_relu("[y]", ", fuse: never"));
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv", "relu"});
    CHECK(kernel_count(g, p) == 2);
    auto r = rejections(p, "hint");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"conv", "relu"});
    CHECK(r[0]->reason == "not fused: 'relu' has the hint fuse: never");
    // The hint holds with every strategy on, and through the session.
    FusionPlan all = plan(g, all_strategies());
    check_unfused(g, all, {"relu"});
    CHECK(check_fused_matches_unfused(conv_relu("[y]", ", fuse: never"), "v_hint", {"all"}) == 2);
  }

  TEST_CASE("vertical: gemm -> add(constant bias) -> gelu is one anchor+epilogue kernel") {
    Graph g = load_graph(kGemmBiasGelu);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "add_bias", "gelu"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(kGemmBiasGelu, "v_gemm_bias_gelu", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: conv -> clip -> GlobalAveragePool takes the GAP as a reducing tail") {
    Graph g = load_graph(kConvClipGap);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv", "clip", "gap"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(kConvClipGap, "v_conv_clip_gap", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: GAP tail rejects_graph_output (the clip output is a graph output)") {
    std::string yaml = kConvClipGap;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, r]");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv", "clip"});
    check_unfused(g, p, {"gap"});
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"clip", "gap"});
    CHECK(r[0]->reason == "not fused: 'r' is a graph output");
    check_fused_matches_unfused(yaml, "v_conv_clip_gap_out", {"all"});
  }

  TEST_CASE("vertical: an elementwise chain without an anchor is one elementwise kernel") {
    Graph g = load_graph(kElementwiseChain);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "sig", Strategy::kVertical, GroupKind::kElementwise, {"sig", "mul", "add", "tanh"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(kElementwiseChain, "v_ew_chain", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: elementwise chain rejects_multi_use in the middle (split into two kernels)") {
    std::string yaml = kElementwiseChain;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, z]");
    yaml += "  - {name: neg, op: Relu, inputs: [m], outputs: [z]}\n";
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "sig", Strategy::kVertical, GroupKind::kElementwise, {"sig", "mul"});
    check_group(g, p, "add", Strategy::kVertical, GroupKind::kElementwise, {"add", "tanh"});
    check_unfused(g, p, {"neg"});
    auto r = rejections(p, "multi_use");
    REQUIRE(r.size() == 1u);
    CHECK(r[0]->reason == "not fused: 'm' has 2 consumers");
    check_fused_matches_unfused(yaml, "v_ew_chain_multi", {"vertical", "all"});
  }

  TEST_CASE("vertical: Add(join) + LayerNorm + scale is one row-norm kernel") {
    Graph g = load_graph(kJoinLayerNorm);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    // The join of two computed paths ends the gemm's chain and heads its own row-norm chain.
    check_unfused(g, p, {"relu", "gemm"});
    check_group(g, p, "residual", Strategy::kVertical, GroupKind::kRowNorm, {"residual", "ln", "scale"});
    CHECK(kernel_count(g, p) == 3);
    CHECK(p.rejected.empty());
    check_fused_matches_unfused(kJoinLayerNorm, "v_join_ln", {"vertical", "all"});
  }

  TEST_CASE("vertical: row-norm rejects_graph_output (the join's sum is a graph output)") {
    std::string yaml = kJoinLayerNorm;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, s]");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"relu", "gemm", "residual"});
    check_group(g, p, "ln", Strategy::kVertical, GroupKind::kRowNorm, {"ln", "scale"});
    CHECK(kernel_count(g, p) == 4);
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"residual", "ln"});
    CHECK(r[0]->reason == "not fused: 's' is a graph output");
    check_fused_matches_unfused(yaml, "v_join_ln_out", {"vertical", "all"});
  }

  TEST_CASE("vertical: gemm -> add(graph input) -> LayerNorm is one gemm+layernorm kernel") {
    Graph g = load_graph(kGemmAddInputLayerNorm);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"gemm", "residual", "ln"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(kGemmAddInputLayerNorm, "v_gemm_add_ln", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: gemm+layernorm rejects_multi_use (the Gemm output is read twice)") {
    std::string yaml = kGemmAddInputLayerNorm;
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, z]");
    yaml += "  - {name: side, op: Relu, inputs: [g], outputs: [z]}\n";
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"gemm", "side"});
    check_group(g, p, "residual", Strategy::kVertical, GroupKind::kRowNorm, {"residual", "ln"});
    auto r = rejections(p, "multi_use");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"gemm", "residual"});
    CHECK(r[0]->reason == "not fused: 'g' has 2 consumers");
    check_fused_matches_unfused(yaml, "v_gemm_add_ln_multi", {"vertical", "all"});
  }

  TEST_CASE("vertical: a chain within the register budget stays whole") {
    // gemm (24) + 5 transcendentals (8 each) = 64 registers = the default budget: not cut.
    std::string yaml = gemm_long_chain(5);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue,
                                         {"gemm", "a1", "a2", "a3", "a4", "a5"});
    CHECK(grp.register_estimate == 64);
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(yaml, "v_chain5", {"vertical", "all"}) == 1);
  }

  TEST_CASE("vertical: rejects_register_pressure (a Gemm + 8 transcendentals is split at the budget)") {
    std::string yaml = gemm_long_chain(8);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    // Depth 7 would need 24 + 6 * 8 = 72 > 64 registers: the chain is cut before a6, and the
    // rest (a6 .. a8, 24 registers) forms its own elementwise kernel.
    check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "a1", "a2", "a3", "a4", "a5"});
    check_group(g, p, "a6", Strategy::kVertical, GroupKind::kElementwise, {"a6", "a7", "a8"});
    CHECK(kernel_count(g, p) == 2);
    auto r = rejections(p, "register_pressure");
    REQUIRE(r.size() == 1u);
    CHECK(r[0]->strategy == Strategy::kVertical);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"gemm", "a1", "a2", "a3", "a4", "a5", "a6"});
    CHECK(r[0]->reason ==
          "not fused: register pressure: depth 7 (high) needs ~72 registers > budget 64; chain split before 'a6'");
    CHECK(check_fused_matches_unfused(yaml, "v_chain8", {"vertical", "all"}) == 2);

    SUBCASE("a larger budget keeps the chain whole") {
      FusionOptions o = only({Strategy::kVertical});
      o.register_budget = 1000;
      FusionPlan big = plan(g, o);
      check_group(g, big, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue,
                  {"gemm", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"});
      CHECK(kernel_count(g, big) == 1);
      CHECK(rejections(big, "register_pressure").empty());
    }
    SUBCASE("a smaller budget cuts earlier, with its own numbers") {
      FusionOptions o = only({Strategy::kVertical});
      o.register_budget = 50;
      FusionPlan small = plan(g, o);
      // depth 5 = 24 + 4 * 8 = 56 > 50: cut before a4; a4 .. a8 (5 ops, 40 registers) follow.
      check_group(g, small, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "a1", "a2", "a3"});
      check_group(g, small, "a4", Strategy::kVertical, GroupKind::kElementwise, {"a4", "a5", "a6", "a7", "a8"});
      auto rr = rejections(small, "register_pressure");
      REQUIRE(rr.size() == 1u);
      CHECK(rr[0]->reason ==
            "not fused: register pressure: depth 5 (high) needs ~56 registers > budget 50; chain split before 'a4'");
    }
  }

  TEST_CASE("vertical: short chains (depth < 5) are never cut for register pressure") {
    // The depth table: 2-4 ops are low/medium pressure and always fused, whatever the budget.
    std::string yaml = gemm_long_chain(3);
    Graph g = load_graph(yaml);
    FusionOptions o = only({Strategy::kVertical});
    o.register_budget = 8;
    FusionPlan p = plan(g, o);
    check_group(g, p, "gemm", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"gemm", "a1", "a2", "a3"});
    CHECK(p.rejected.empty());
  }

  TEST_CASE("vertical: with no strategy enabled every node is its own group") {
    Graph g = load_graph(kGemmBiasGelu);
    FusionPlan p = plan(g, only({}));
    CHECK(fused_groups(p).empty());
    CHECK(kernel_count(g, p) == 3);
    CHECK(p.rejected.empty());
  }

  TEST_CASE(
      "vertical: the gated residual x + x * gate(x) is one elementwise kernel; a join with another branch is not") {
    // x (a conv output) is read by the gate's pool, the Mul and the Add: no conv epilogue can
    // take the Mul or the Add, but the Add's other input is the Mul's own input x.
    const std::string rse = R"(fusert: 1
name: rse
inputs: [{name: in, shape: [1, 8, 6, 5]}]
outputs: [y]
initializers:
  - {name: w, shape: [8, 8, 1, 1]}
  - {name: ws, shape: [8, 8, 1, 1]}
  - {name: wz, shape: [8, 8, 1, 1]}
nodes:
  - {name: conv, op: Conv, inputs: [in, w], outputs: [x], attrs: {kernel_shape: [1, 1]}}
  - {name: gap, op: GlobalAveragePool, inputs: [x], outputs: [g]}
  - {name: se, op: Conv, inputs: [g, ws], outputs: [s0], attrs: {kernel_shape: [1, 1]}}
  - {name: gate, op: HardSigmoid, inputs: [s0], outputs: [s]}
  - {name: mul, op: Mul, inputs: [x, s], outputs: [m]}
)";
    const std::string joined = rse + "  - {name: add, op: Add, inputs: [m, x], outputs: [y]}\n";
    Graph g = load_graph(joined);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    INFO(plan_dump(g, p));
    check_group(g, p, "mul", Strategy::kVertical, GroupKind::kElementwise, {"mul", "add"});
    CHECK(check_fused_matches_unfused(joined, "v_gated_residual", {"vertical", "all"}) == 4);  // kernels
    // The Add joins zz, a value of another branch that the chain's head does not read: no group.
    const std::string other =
        rse +
        "  - {name: z, op: Conv, inputs: [in, wz], outputs: [zz], attrs: {kernel_shape: [1, 1]}}\n"
        "  - {name: add, op: Add, inputs: [m, zz], outputs: [y]}\n";
    Graph h = load_graph(other);
    FusionPlan q = plan(h, only({Strategy::kVertical}));
    INFO(plan_dump(h, q));
    check_unfused(h, q, {"mul", "add"});
  }
}  // TEST_SUITE
