// Horizontal fusion (graph/fusion/horizontal.h): independent same-structure ops become one
// launch, either on concatenated weights (shared input) or as a grouped launch (same level,
// different inputs). Before/expected pairs with named negative siblings, and numerics.
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// Q/K/V-style projections: three Gemms (transB 1, bias) reading the same input.
std::string qkv(int v_width = 8) {
  std::string vw = std::to_string(v_width);
  return R"(fusert: 1
name: qkv
inputs: [{name: x, shape: [4, 16]}]
outputs: [q.out, k.out, v.out]
initializers:
  - {name: q.weight, shape: [8, 16]}
  - {name: q.bias, shape: [8]}
  - {name: k.weight, shape: [8, 16]}
  - {name: k.bias, shape: [8]}
  - {name: v.weight, shape: [)" +
         vw + R"(, 16]}
  - {name: v.bias, shape: [)" +
         vw + R"(]}
nodes:
  - {name: q, op: Gemm, inputs: [x, q.weight, q.bias], outputs: [q.out], attrs: {transB: 1}}
  - {name: k, op: Gemm, inputs: [x, k.weight, k.bias], outputs: [k.out], attrs: {transB: 1}}
  - {name: v, op: Gemm, inputs: [x, v.weight, v.bias], outputs: [v.out], attrs: {transB: 1}}
)";
}

// Five Gemms on x: a and a2 alike; b transB 0; c alpha 0.5; e reads x as operand B.
const char* kMixedGemms = R"(fusert: 1
name: mixed_gemms
inputs: [{name: x, shape: [4, 16]}]
outputs: [ya, ya2, yb, yc, ye]
initializers:
  - {name: wa, shape: [8, 16]}
  - {name: wa2, shape: [8, 16]}
  - {name: wb, shape: [16, 8]}
  - {name: wc, shape: [8, 16]}
  - {name: we, shape: [3, 4]}
nodes:
  - {name: a, op: Gemm, inputs: [x, wa], outputs: [ya], attrs: {transB: 1}}
  - {name: b, op: Gemm, inputs: [x, wb], outputs: [yb], attrs: {transB: 0}}
  - {name: c, op: Gemm, inputs: [x, wc], outputs: [yc], attrs: {transB: 1, alpha: 0.5}}
  - {name: e, op: Gemm, inputs: [we, x], outputs: [ye]}
  - {name: a2, op: Gemm, inputs: [x, wa2], outputs: [ya2], attrs: {transB: 1}}
)";

// Two sibling 1x1 convs of one input; `s2` is the second conv's stride.
std::string sibling_convs(int s2) {
  std::string s = std::to_string(s2);
  return R"(fusert: 1
name: sibling_convs
inputs: [{name: x, shape: [1, 8, 8, 8]}]
outputs: [ya, yb]
initializers:
  - {name: wa, shape: [4, 8, 1, 1]}
  - {name: ba, shape: [4]}
  - {name: wb, shape: [6, 8, 1, 1]}
  - {name: bb, shape: [6]}
nodes:
  - {name: conv_a, op: Conv, inputs: [x, wa, ba], outputs: [ya], attrs: {kernel_shape: [1, 1]}}
  - {name: conv_b, op: Conv, inputs: [x, wb, bb], outputs: [yb], attrs: {kernel_shape: [1, 1], strides: [)" +
         s + ", " + s + R"(]}}
)";
}

// Two same-shape Gemms on different inputs; `b_src` is what gb reads (b, or relu(b)).
std::string independent_gemms(bool b_through_relu) {
  std::string s = R"(fusert: 1
name: grouped
inputs: [{name: a, shape: [4, 16]}, {name: b, shape: [4, 16]}]
outputs: [ya, yb]
initializers:
  - {name: wa, shape: [8, 16]}
  - {name: ba, shape: [8]}
  - {name: wb, shape: [8, 16]}
  - {name: bb, shape: [8]}
nodes:
  - {name: ga, op: Gemm, inputs: [a, wa, ba], outputs: [ya], attrs: {transB: 1}}
)";
  if (b_through_relu) {
    s += "  - {name: relu_b, op: Relu, inputs: [b], outputs: [rb]}\n";
    s += "  - {name: gb, op: Gemm, inputs: [rb, wb, bb], outputs: [yb], attrs: {transB: 1}}\n";
  } else {
    s += "  - {name: gb, op: Gemm, inputs: [b, wb, bb], outputs: [yb], attrs: {transB: 1}}\n";
  }
  return s;
}

// g2 reads g1's output (directly, or through a Relu): a dependency, never a horizontal pair.
std::string dependent_gemms(bool through_relu) {
  std::string s = R"(fusert: 1
name: dependent
inputs: [{name: x, shape: [4, 16]}]
outputs: [y2]
initializers:
  - {name: w1, shape: [16, 16]}
  - {name: w2, shape: [16, 16]}
nodes:
  - {name: g1, op: Gemm, inputs: [x, w1], outputs: [y1], attrs: {transB: 1}}
)";
  if (through_relu) {
    s += "  - {name: relu, op: Relu, inputs: [y1], outputs: [r]}\n";
    s += "  - {name: g2, op: Gemm, inputs: [r, w2], outputs: [y2], attrs: {transB: 1}}\n";
  } else {
    s += "  - {name: g2, op: Gemm, inputs: [y1, w2], outputs: [y2], attrs: {transB: 1}}\n";
  }
  return s;
}

// Shared input; ga's output lives only briefly, gb runs last: merging makes yb live early.
const char* kPeakGrowth = R"(fusert: 1
name: peak
inputs: [{name: x, shape: [64, 16]}]
outputs: [sa, yb]
initializers:
  - {name: wa, shape: [64, 16]}
  - {name: wb, shape: [64, 16]}
nodes:
  - {name: ga, op: Gemm, inputs: [x, wa], outputs: [ya], attrs: {transB: 1}}
  - {name: ra, op: Relu, inputs: [ya], outputs: [ra]}
  - {name: sa, op: Sigmoid, inputs: [ra], outputs: [sa]}
  - {name: gb, op: Gemm, inputs: [x, wb], outputs: [yb], attrs: {transB: 1}}
)";

std::vector<std::string> output_names(const Graph& g, const FusionGroup& grp) {
  std::vector<std::string> out;
  for (ValueId v : grp.outputs) out.push_back(g.value(v).name);
  return out;
}

}  // namespace

TEST_SUITE("fusion.horizontal") {
  TEST_CASE("horizontal: Q/K/V Gemms sharing an input become one horizontal-gemm kernel, outputs in order") {
    Graph g = load_graph(qkv());
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "q", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"q", "k", "v"});
    CHECK(output_names(g, grp) == std::vector<std::string>{"q.out", "k.out", "v.out"});
    CHECK(grp.launches_saved == 2);
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    // With every strategy on the plan is the same (nothing to fuse vertically).
    FusionPlan all = plan(g, all_strategies());
    check_group(g, all, "q", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"q", "k", "v"});
    CHECK(check_fused_matches_unfused(qkv(), "h_qkv", {"horizontal", "all"}) == 1);
  }

  TEST_CASE("horizontal: shared-input Gemms of different output widths still concatenate") {
    Graph g = load_graph(qkv(12));
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "q", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"q", "k", "v"});
    CHECK(output_names(g, grp) == std::vector<std::string>{"q.out", "k.out", "v.out"});
    CHECK(check_fused_matches_unfused(qkv(12), "h_qkv_widths", {"horizontal", "all"}) == 1);
  }

  TEST_CASE("horizontal: differing transB / alpha fold into the concatenated weights; rejects_operand_order") {
    Graph g = load_graph(kMixedGemms);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    // b (transB 0) and c (alpha 0.5) join a and a2: each member's weights are stored as [N, K]
    // with alpha folded in. e reads x as operand B: not a sibling, no candidate, no refusal.
    const FusionGroup& grp =
        check_group(g, p, "a", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"a", "b", "c", "a2"});
    CHECK(output_names(g, grp) == std::vector<std::string>{"ya", "yb", "yc", "ya2"});
    check_unfused(g, p, {"e"});
    CHECK(kernel_count(g, p) == 2);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(kMixedGemms, "h_mixed", {"horizontal", "all"}) == 2);
  }

  TEST_CASE("horizontal: sibling 1x1 convs with the same strides share one kernel") {
    std::string yaml = sibling_convs(1);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_group(g, p, "conv_a", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"conv_a", "conv_b"});
    CHECK(kernel_count(g, p) == 1);
    // One kernel on the reference kernels; oneDNN's CPU backend keeps the two apart, each in the
    // layout its neighbours keep (runtime/cpu/cpu_backend.cc).
    CHECK(check_fused_matches_unfused(yaml, "h_convs", {"horizontal", "all"}, 1e-5, nullptr, "reference") == 1);
    CHECK(check_fused_matches_unfused(yaml, "h_convs", {"horizontal", "all"}) == 2);
  }

  TEST_CASE("horizontal: 1x1 convs with different strides are not merged") {
    std::string yaml = sibling_convs(2);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv_a", "conv_b"});
    CHECK(kernel_count(g, p) == 2);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(yaml, "h_convs_strides", {"all"}) == 2);
  }

  TEST_CASE("horizontal: same-shape Gemms on different inputs at one level form a grouped-gemm") {
    std::string yaml = independent_gemms(false);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "ga", Strategy::kHorizontal, GroupKind::kGroupedGemm, {"ga", "gb"});
    CHECK(output_names(g, grp) == std::vector<std::string>{"ya", "yb"});
    CHECK(kernel_count(g, p) == 1);
    CHECK(check_fused_matches_unfused(yaml, "h_grouped", {"horizontal", "all"}) == 1);
  }

  TEST_CASE("horizontal: same-shape Gemms at different levels are not grouped") {
    std::string yaml = independent_gemms(true);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"ga", "gb", "relu_b"});
    CHECK(kernel_count(g, p) == 3);
  }

  TEST_CASE("horizontal: rejects_cycle (a Gemm reading another's output is never merged with it)") {
    for (bool through_relu : {false, true}) {
      CAPTURE(through_relu);
      std::string yaml = dependent_gemms(through_relu);
      Graph g = load_graph(yaml);
      for (const FusionOptions& o : {only({Strategy::kHorizontal}), all_strategies()}) {
        FusionPlan p = plan(g, o);
        std::string dump = plan_dump(g, p);
        INFO(dump);
        CHECK(group_of(g, p, "g1").id != group_of(g, p, "g2").id);
        for (const FusionGroup& grp : p.groups) CHECK(grp.strategy != Strategy::kHorizontal);
      }
      // The legality predicate behind it: merging g1 and g2 around an outside node is a cycle.
      FusionDecision d = check_no_cycle(g, {node_index(g, "g1"), node_index(g, "g2")});
      if (through_relu) {
        CHECK_FALSE(d.ok());
        CHECK(d.key() == "cycle");
        CHECK(d.reason() == "merging would create a cycle through 'relu'");
      }
      check_fused_matches_unfused(yaml, through_relu ? "h_dep_relu" : "h_dep", {"horizontal", "all"});
    }
  }

  TEST_CASE("horizontal: rejects a merge that grows peak activation memory past max_peak_growth") {
    Graph g = load_graph(kPeakGrowth);
    FusionPlan p = plan(g, only({Strategy::kHorizontal}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"ga", "gb"});
    // Refused as a shared-input pair and again as a same-level grouped launch (same members).
    auto r = rejections(p, "peak_memory");
    REQUIRE(r.size() >= 1u);
    for (const Rejection* x : r) {
      CHECK(x->strategy == Strategy::kHorizontal);
      CHECK(names_of(g, x->nodes) == std::vector<std::string>{"ga", "gb"});
      // x (4 KiB) + ya + ra (16 KiB each) = 36 KiB at the peak; with yb live from ga on, 52 KiB.
      CHECK(x->reason == "not fused: peak activation memory would grow from 36864 to 53248 bytes (> 25%)");
    }

    SUBCASE("a looser bound admits it") {
      FusionOptions o = only({Strategy::kHorizontal});
      o.max_peak_growth = 0.5;
      FusionPlan loose = plan(g, o);
      check_group(g, loose, "ga", Strategy::kHorizontal, GroupKind::kHorizontalGemm, {"ga", "gb"});
      CHECK(rejections(loose, "peak_memory").empty());
    }
  }

}  // TEST_SUITE
