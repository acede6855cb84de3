// Compound fusion (graph/fusion/compound.h): serial merges (vertical inside each branch, then
// horizontal across) and the parallel Transformer case (one attention kernel over all heads),
// as before/expected pairs with named negative siblings, plus fused-vs-unfused numerics.
#include "tests/fusion/fusion_test_util.h"

#include <set>

using namespace fusert;
using namespace fusert::ftest;

namespace {

// Two heads on one input: Gemm -> LayerNorm each; `h1_tail` replaces head 1's LayerNorm line.
std::string two_heads(const std::string& outputs = "[h0.out, h1.out]", const std::string& h1_tail = "") {
  std::string s = R"(fusert: 1
name: two_heads
inputs: [{name: x, shape: [4, 16]}]
outputs: )" + outputs +
                  R"(
initializers:
  - {name: h0.fc.weight, shape: [8, 16]}
  - {name: h0.fc.bias, shape: [8]}
  - {name: h0.norm.weight, shape: [8], init: bn_scale}
  - {name: h0.norm.bias, shape: [8]}
  - {name: h1.fc.weight, shape: [8, 16]}
  - {name: h1.fc.bias, shape: [8]}
  - {name: h1.norm.weight, shape: [8], init: bn_scale}
  - {name: h1.norm.bias, shape: [8]}
nodes:
  - {name: h0.fc, op: Gemm, inputs: [x, h0.fc.weight, h0.fc.bias], outputs: [h0.fc.out], attrs: {transB: 1}}
  - {name: h0.norm, op: LayerNormalization, inputs: [h0.fc.out, h0.norm.weight, h0.norm.bias], outputs: [h0.out], attrs: {axis: -1}}
  - {name: h1.fc, op: Gemm, inputs: [x, h1.fc.weight, h1.fc.bias], outputs: [h1.fc.out], attrs: {transB: 1}}
)";
  s += h1_tail.empty() ? "  - {name: h1.norm, op: LayerNormalization, inputs: [h1.fc.out, h1.norm.weight, "
                         "h1.norm.bias], outputs: [h1.out], attrs: {axis: -1}}\n"
                       : h1_tail;
  return s;
}

// Two sibling 1x1 convs of one input, each + Relu: serial compound of conv branches.
const char* kConvBranches = R"(fusert: 1
name: conv_branches
inputs: [{name: x, shape: [1, 8, 6, 6]}]
outputs: [ya, yb]
initializers:
  - {name: wa, shape: [4, 8, 1, 1]}
  - {name: ba, shape: [4]}
  - {name: wb, shape: [12, 8, 1, 1]}
  - {name: bb, shape: [12]}
nodes:
  - {name: conv_a, op: Conv, inputs: [x, wa, ba], outputs: [ca], attrs: {kernel_shape: [1, 1]}}
  - {name: relu_a, op: Relu, inputs: [ca], outputs: [ya]}
  - {name: conv_b, op: Conv, inputs: [x, wb, bb], outputs: [cb], attrs: {kernel_shape: [1, 1]}}
  - {name: relu_b, op: Relu, inputs: [cb], outputs: [yb]}
)";

// A 2-head self-attention (batch 1, seq 4, head_dim 4) in the ONNX-export decomposition.
std::string tiny_attention(const std::string& outputs = "[y]") {
  std::string s = R"(fusert: 1
name: tiny_attention
inputs: [{name: x, shape: [4, 8]}, {name: mask, shape: [1, 1, 1, 4]}]
outputs: )" + outputs +
                  R"(
initializers:
  - {name: shape_bshd, shape: [4], dtype: i64, value: [1, 4, 2, 4]}
  - {name: shape_tokens, shape: [2], dtype: i64, value: [4, 8]}
  - {name: sqrt_d, shape: [], value: 2.0}
)";
  for (const char* p : {"q", "k", "v"}) {
    std::string n = p;
    s += "  - {name: " + n + ".weight, shape: [8, 8]}\n  - {name: " + n + ".bias, shape: [8]}\n";
  }
  s += "nodes:\n";
  for (const char* p : {"q", "k", "v"}) {
    std::string n = p;
    s += "  - {name: " + n + ", op: Gemm, inputs: [x, " + n + ".weight, " + n + ".bias], outputs: [" + n +
         ".out], attrs: {transB: 1}}\n";
    s += "  - {name: " + n + ".split, op: Reshape, inputs: [" + n + ".out, shape_bshd], outputs: [" + n + ".bshd]}\n";
  }
  s += R"(  - {name: q.heads, op: Transpose, inputs: [q.bshd], outputs: [q.bhsd], attrs: {perm: [0, 2, 1, 3]}}
  - {name: k.heads, op: Transpose, inputs: [k.bshd], outputs: [k.bhds], attrs: {perm: [0, 2, 3, 1]}}
  - {name: v.heads, op: Transpose, inputs: [v.bshd], outputs: [v.bhsd], attrs: {perm: [0, 2, 1, 3]}}
  - {name: qk, op: MatMul, inputs: [q.bhsd, k.bhds], outputs: [qk]}
  - {name: scale, op: Div, inputs: [qk, sqrt_d], outputs: [scores]}
  - {name: mask_add, op: Add, inputs: [scores, mask], outputs: [masked]}
  - {name: softmax, op: Softmax, inputs: [masked], outputs: [probs], attrs: {axis: -1}}
  - {name: pv, op: MatMul, inputs: [probs, v.bhsd], outputs: [context]}
  - {name: merge, op: Transpose, inputs: [context], outputs: [context_bshd], attrs: {perm: [0, 2, 1, 3]}}
  - {name: flatten, op: Reshape, inputs: [context_bshd, shape_tokens], outputs: [y]}
)";
  return s;
}

const std::vector<std::string> kAttentionNodes = {"q.split", "k.split", "v.split", "q.heads",  "k.heads",
                                                  "v.heads", "qk",      "scale",   "mask_add", "softmax",
                                                  "pv",      "merge",   "flatten"};

// `names` in the graph's node order (groups list members topologically).
std::vector<std::string> in_graph_order(const Graph& g, const std::vector<std::string>& names) {
  std::set<std::string> want(names.begin(), names.end());
  std::vector<std::string> out;
  for (const Node& n : g.nodes)
    if (want.count(n.name)) out.push_back(n.name);
  REQUIRE(out.size() == names.size());
  return out;
}

}  // namespace

TEST_SUITE("fusion.compound") {
  TEST_CASE("compound serial: shared-input Gemm -> LayerNorm heads become one horizontal-gemm kernel") {
    std::string yaml = two_heads();
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "h0.fc", Strategy::kCompound, GroupKind::kHorizontalGemm,
                                         {"h0.fc", "h0.norm", "h1.fc", "h1.norm"});
    std::vector<std::string> outs;
    for (ValueId v : grp.outputs) outs.push_back(g.value(v).name);
    CHECK(outs == std::vector<std::string>{"h0.out", "h1.out"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    // Each strategy alone: vertical gives two gemm+layernorm kernels; compound needs them.
    FusionPlan v = plan(g, only({Strategy::kVertical}));
    check_group(g, v, "h0.fc", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"h0.fc", "h0.norm"});
    check_group(g, v, "h1.fc", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"h1.fc", "h1.norm"});
    CHECK(kernel_count(g, v) == 2);
    CHECK(check_fused_matches_unfused(yaml, "k_two_heads", {"vertical", "vertical,compound", "all"}) == 1);
  }

  TEST_CASE("compound serial: heads with different epilogues are not merged") {
    std::string yaml =
        two_heads("[h0.out, h1.out]", "  - {name: h1.relu, op: Relu, inputs: [h1.fc.out], outputs: [h1.out]}\n");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "h0.fc", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"h0.fc", "h0.norm"});
    check_group(g, p, "h1.fc", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"h1.fc", "h1.relu"});
    CHECK(kernel_count(g, p) == 2);
    CHECK(check_fused_matches_unfused(yaml, "k_two_heads_mixed", {"all"}) == 2);
  }

  TEST_CASE("compound serial: rejects_graph_output (one head's Gemm output is a graph output)") {
    std::string yaml = two_heads("[h0.out, h1.out, h0.fc.out]");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"h0.fc", "h0.norm"});
    check_group(g, p, "h1.fc", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"h1.fc", "h1.norm"});
    CHECK(kernel_count(g, p) == 3);
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"h0.fc", "h0.norm"});
    CHECK(r[0]->reason == "not fused: 'h0.fc.out' is a graph output");
    check_fused_matches_unfused(yaml, "k_two_heads_out", {"all"});
  }

  TEST_CASE("compound serial: sibling 1x1 conv + relu branches become one kernel") {
    Graph g = load_graph(kConvBranches);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv_a", Strategy::kCompound, GroupKind::kHorizontalGemm,
                {"conv_a", "relu_a", "conv_b", "relu_b"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(kConvBranches, "k_conv_branches", {"all"}, 1e-5, nullptr, "reference") == 1);
    CHECK(check_fused_matches_unfused(kConvBranches, "k_conv_branches", {"all"}) == 2);  // apart on oneDNN
  }

  TEST_CASE("compound serial: models/multitask_heads.yaml runs in 2 kernels") {
    const std::string path = std::string(FUSERT_SOURCE_DIR) + "/models/multitask_heads.yaml";
    if (!std::filesystem::exists(path)) {
      MESSAGE("models/multitask_heads.yaml absent: skipped");
      return;
    }
    auto s = open_session(path, "all");
    std::string dump = plan_dump(s->graph(), s->fusion_plan());
    INFO(dump);
    CHECK(s->stats().kernels == 2);
    check_group(s->graph(), s->fusion_plan(), "trunk", Strategy::kVertical, GroupKind::kAnchorEpilogue,
                {"trunk", "trunk.relu"});
    check_group(s->graph(), s->fusion_plan(), "heads.0.fc", Strategy::kCompound, GroupKind::kHorizontalGemm,
                {"heads.0.fc", "heads.0.norm", "heads.1.fc", "heads.1.norm", "heads.2.fc", "heads.2.norm", "heads.3.fc",
                 "heads.3.norm"});
    auto ref = open_session(path, "none");
    CHECK(ref->stats().kernels == 10);
    TensorMap in = ref->seeded_inputs(0);
    check_outputs_close(run_session(*ref, in), run_session(*s, in), 1e-5);
  }

  TEST_CASE("compound parallel: a 2-head self-attention becomes one attention kernel") {
    std::string yaml = tiny_attention();
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    CHECK(p.family == "transformer");
    check_group(g, p, "q", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"q", "k", "v"});
    const FusionGroup& att =
        check_group(g, p, "softmax", Strategy::kCompound, GroupKind::kAttention, in_graph_order(g, kAttentionNodes));
    REQUIRE(att.outputs.size() == 1u);
    CHECK(g.value(att.outputs[0]).name == "y");
    int attention_groups = 0;
    for (const FusionGroup* grp : p.kernel_groups()) attention_groups += grp->kind == GroupKind::kAttention;
    CHECK(attention_groups == 1);
    CHECK(kernel_count(g, p) == 2);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(yaml, "k_attention", {"horizontal,vertical,compound", "all"}) == 2);
  }

  TEST_CASE("compound parallel: no attention for a divisor without a finite reciprocal (its scale would be inf)") {
    std::string yaml = tiny_attention();
    const std::string from = "{name: sqrt_d, shape: [], value: 2.0}";
    yaml.replace(yaml.find(from), from.size(), "{name: sqrt_d, shape: [], value: 1.0e-39}");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    INFO(plan_dump(g, p));
    // 1/1e-39 overflows to inf: the Div runs as written (finite scores where QK^T is small).
    for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kAttention);
    check_group(g, p, "qk", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"qk", "scale", "mask_add"});
  }

  TEST_CASE("compound parallel: the attention pattern is not matched when the Softmax output is a graph output") {
    std::string yaml = tiny_attention("[y, probs]");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kAttention);
    // Q/K/V stay merged; the scores chain is an ordinary vertical anchor+epilogue kernel.
    check_group(g, p, "q", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"q", "k", "v"});
    check_group(g, p, "qk", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"qk", "scale", "mask_add"});
    check_unfused(g, p, {"softmax", "pv"});
    CHECK(kernel_count(g, p) > 2);
    check_fused_matches_unfused(yaml, "k_attention_probs_out", {"all"});
  }

}  // TEST_SUITE
