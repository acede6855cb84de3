// Cross fusion (graph/fusion/cross.h): split-then-merge regions and residual joins, as
// before/expected pairs with named negative siblings (the 1:3 branch rule among them), the
// source's two-branch example on the cpu and cuda cost models, and fused-vs-unfused numerics.
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// ResNet-like identity block on a computed block input x = relu(input) (a graph input would
// make the Add an ordinary epilogue step, not a join): conv1 + relu1 -> conv2 -> Add(x) -> relu.
std::string identity_block(const std::string& outputs = "[y]") {
  return R"(fusert: 1
name: identity_block
inputs: [{name: input, shape: [1, 8, 8, 8]}]
outputs: )" +
         outputs + R"(
initializers:
  - {name: conv1.weight, shape: [8, 8, 3, 3]}
  - {name: conv1.bias, shape: [8]}
  - {name: conv2.weight, shape: [8, 8, 3, 3]}
  - {name: conv2.bias, shape: [8]}
nodes:
  - {name: stem, op: Relu, inputs: [input], outputs: [x]}
  - {name: conv1, op: Conv, inputs: [x, conv1.weight, conv1.bias], outputs: [c1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: relu1, op: Relu, inputs: [c1], outputs: [r1]}
  - {name: conv2, op: Conv, inputs: [r1, conv2.weight, conv2.bias], outputs: [c2], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: add, op: Add, inputs: [c2, x], outputs: [s]}
  - {name: relu, op: Relu, inputs: [s], outputs: [y]}
)";
}

// Two linear convs on different inputs joined by Add, then Relu: conv_a (8 -> 16 channels,
// k_a x k_a) on a, conv_b (4 -> 16, 1x1) on b. FLOP ratio 2 for k_a = 1, 18 for k_a = 3. The Add
// reads conv_b's output first, so the heavier branch is the join's second operand.
std::string two_input_convs(int k_a) {
  std::string k = std::to_string(k_a), p = std::to_string(k_a / 2);
  return R"(fusert: 1
name: two_input_convs
inputs: [{name: a, shape: [1, 8, 8, 8]}, {name: b, shape: [1, 4, 8, 8]}]
outputs: [y]
initializers:
  - {name: wa, shape: [16, 8, )" +
         k + ", " + k + R"(]}
  - {name: ba, shape: [16]}
  - {name: wb, shape: [16, 4, 1, 1]}
  - {name: bb, shape: [16]}
nodes:
  - {name: conv_a, op: Conv, inputs: [a, wa, ba], outputs: [ya], attrs: {kernel_shape: [)" +
         k + ", " + k + "], pads: [" + p + ", " + p + ", " + p + ", " + p + R"(]}}
  - {name: conv_b, op: Conv, inputs: [b, wb, bb], outputs: [yb], attrs: {kernel_shape: [1, 1]}}
  - {name: add, op: Add, inputs: [yb, ya], outputs: [s]}
  - {name: relu, op: Relu, inputs: [s], outputs: [y]}
)";
}

// Linear branches on one input: conv3x3 and conv1x1, Add, Relu (re-parameterisable).
const char* kLinearBranches = R"(fusert: 1
name: linear_branches
inputs: [{name: x, shape: [1, 8, 8, 8]}]
outputs: [y]
initializers:
  - {name: w3, shape: [8, 8, 3, 3]}
  - {name: b3, shape: [8]}
  - {name: w1, shape: [8, 8, 1, 1]}
  - {name: b1, shape: [8]}
nodes:
  - {name: conv3, op: Conv, inputs: [x, w3, b3], outputs: [c3], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: conv1, op: Conv, inputs: [x, w1, b1], outputs: [c1], attrs: {kernel_shape: [1, 1]}}
  - {name: add, op: Add, inputs: [c3, c1], outputs: [s]}
  - {name: relu, op: Relu, inputs: [s], outputs: [y]}
)";

const std::string kBranchMerge = std::string(FUSERT_SOURCE_DIR) + "/models/branch_merge.yaml";

Graph load_file(const std::string& path) {
  auto m = load_model(path);
  if (!m.ok()) FAIL(m.status().to_string());
  Graph g = std::move(m.value().graph);
  bind_seeded_weights(g, 0);
  auto log = run_canonicalize(g, true);
  if (!log.ok()) FAIL(log.status().to_string());
  return g;
}

}  // namespace

TEST_SUITE("fusion.cross") {
  TEST_CASE("cross: an identity residual join runs in the last conv's epilogue") {
    std::string yaml = identity_block();
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    CHECK(p.family == "cnn-residual");
    check_group(g, p, "conv1", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv1", "relu1"});
    const FusionGroup& grp =
        check_group(g, p, "conv2", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv2", "add", "relu"});
    CHECK(grp.note == "residual join into 'conv2' epilogue; shortcut 'x' read once");
    check_unfused(g, p, {"stem"});
    CHECK(kernel_count(g, p) == 3);
    CHECK(p.rejected.empty());
    // Compound "to finish": the block is one region over its two kernels.
    auto regs = regions(p);
    REQUIRE(regs.size() == 1u);
    CHECK(regs[0]->strategy == Strategy::kCompound);
    CHECK(names_of(g, regs[0]->nodes) == std::vector<std::string>{"conv1", "relu1", "conv2", "add", "relu"});
    CHECK(check_fused_matches_unfused(yaml, "c_identity", {"vertical,cross", "all"}) == 3);
  }

  TEST_CASE("cross: with vertical off the join still takes its trailing epilogue ops") {
    Graph g = load_graph(identity_block());
    FusionPlan p = plan(g, only({Strategy::kCross}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"stem", "conv1", "relu1"});
    check_group(g, p, "conv2", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv2", "add", "relu"});
    CHECK(kernel_count(g, p) == 4);
    check_fused_matches_unfused(identity_block(), "c_identity_cross_only", {"cross"});
  }

  TEST_CASE("cross: identity join rejects_graph_output (the conv2 output is a graph output)") {
    std::string yaml = identity_block("[y, c2]");
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"stem", "conv2"});
    check_group(g, p, "add", Strategy::kVertical, GroupKind::kElementwise, {"add", "relu"});
    CHECK(kernel_count(g, p) == 4);
    check_fused_matches_unfused(yaml, "c_identity_out", {"all"});
    // Every "no" carries a reason (docs STYLE): the join had a conv branch and was refused.
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(r[0]->strategy == Strategy::kCross);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"conv2", "add"});
    CHECK(r[0]->reason == "not fused: 'c2' is a graph output");
  }

  TEST_CASE("cross: a conv shortcut (two linear convs on different inputs, ratio <= 3) is one conv-sum") {
    std::string yaml = two_input_convs(1);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    // conv_a: 2*16*64*8 FLOPs, conv_b: 2*16*64*4: ratio 2.
    const FusionGroup& grp =
        check_group(g, p, "conv_a", Strategy::kCross, GroupKind::kConvSum, {"conv_a", "conv_b", "add", "relu"});
    CHECK(grp.imbalance_ratio == doctest::Approx(2.0));
    CHECK_FALSE(grp.balanced);
    CHECK(grp.note == "conv shortcut: both GEMMs accumulate per output tile; branch FLOP ratio 2.0");
    CHECK(kernel_count(g, p) == 1);
    CHECK(p.rejected.empty());
    CHECK(check_fused_matches_unfused(yaml, "c_conv_sum", {"vertical,cross", "all"}) == 1);
  }

  TEST_CASE("cross: rejects_imbalanced_branches (3x3 vs 1x1 on different inputs: no conv-sum)") {
    std::string yaml = two_input_convs(3);
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    // conv_a: 2*16*64*8*9 FLOPs, conv_b: 2*16*64*4: ratio 18 > 3. The join goes into the
    // heavier branch's epilogue; the light branch is written and read back as the shortcut.
    auto r = rejections(p, "imbalance");
    REQUIRE(r.size() == 1u);
    CHECK(r[0]->strategy == Strategy::kCross);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"conv_b", "conv_a", "add"});
    CHECK(r[0]->reason == "not fused: conv branch FLOP ratio 18.0 > 3.0");
    for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kConvSum);
    const FusionGroup& grp =
        check_group(g, p, "conv_a", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv_a", "add", "relu"});
    // The shortcut operand is the light branch's output yb, not the heavy branch's own ya.
    CHECK(grp.note == "residual join into 'conv_a' epilogue; shortcut 'yb' read once");
    check_unfused(g, p, {"conv_b"});
    CHECK(kernel_count(g, p) == 2);
    CHECK(check_fused_matches_unfused(yaml, "c_imbalanced", {"all"}) == 2);

    SUBCASE("a looser max_imbalance admits the conv-sum") {
      FusionOptions o = all_strategies();
      o.max_imbalance = 20;
      FusionPlan loose = plan(g, o);
      check_group(g, loose, "conv_a", Strategy::kCross, GroupKind::kConvSum, {"conv_a", "conv_b", "add", "relu"});
      CHECK(rejections(loose, "imbalance").empty());
    }
  }

  TEST_CASE(
      "cross: branch_merge.yaml on cpu: refused (ratio 8.9, balancing does not pay), join into the heavier branch") {
    Graph g = load_file(kBranchMerge);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    auto imb = rejections(p, "imbalance");
    REQUIRE(imb.size() == 1u);
    CHECK(imb[0]->strategy == Strategy::kCross);
    CHECK(names_of(g, imb[0]->nodes) == std::vector<std::string>{"conv1", "conv2", "add"});
    CHECK(imb[0]->reason == "not fused: conv branch FLOP ratio 8.9 > 3.0");
    auto cost = rejections(p, "balancing_cost");
    REQUIRE(cost.size() == 1u);
    CHECK(names_of(g, cost[0]->nodes) == std::vector<std::string>{"conv1", "conv2", "add"});
    // Zero-padding conv2 to 3x3: 2 * 32*28*28 * 32 * 8 = 12.8 MFLOP at 50 GFLOP/s = 0.257 ms,
    // against 4 intermediates of 98 KiB written and read (0.77 MiB at 15 GB/s) + 4 launches.
    CHECK(cost[0]->reason ==
          "not fused: balancing by zero-padding adds 12.8 MFLOP (+0.257 ms) for 0.77 MiB less traffic (-0.074 ms) on "
          "cpu");
    check_group(g, p, "conv1", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv1", "relu1", "add", "relu3"});
    CHECK(group_of(g, p, "conv1").note == "residual join into 'conv1' epilogue; shortcut 'r2' read once");
    check_group(g, p, "conv2", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"conv2", "relu2"});
    CHECK(kernel_count(g, p) == 2);
    for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kBranchMerge);

    auto s = open_session(kBranchMerge, "all");
    CHECK(s->stats().kernels == 2);
    auto ref = open_session(kBranchMerge, "none");
    TensorMap in = ref->seeded_inputs(0);
    check_outputs_close(run_session(*ref, in), run_session(*s, in), 1e-5);
  }

  TEST_CASE("cross: branch_merge.yaml planned for cuda: one balanced branch-merge kernel") {
    Graph g = load_file(kBranchMerge);
    FusionOptions o = all_strategies();
    REQUIRE(set_planner_backend("cuda", &o).ok());  // planning only: nothing runs
    FusionPlan p = plan(g, o);
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp = check_group(g, p, "conv1", Strategy::kCross, GroupKind::kBranchMerge,
                                         {"conv1", "relu1", "conv2", "relu2", "add", "relu3"});
    CHECK(grp.balanced);
    CHECK(grp.imbalance_ratio == doctest::Approx(1.0));
    CHECK(grp.note ==
          "two branches on one input; balanced by zero-padding the smaller kernel; branch FLOP ratio 8.9 -> 1.0");
    CHECK(kernel_count(g, p) == 1);
    // The raw ratio is still reported; balancing pays on this backend, so no cost refusal.
    CHECK(rejections(p, "imbalance").size() == 1u);
    CHECK(rejections(p, "balancing_cost").empty());
  }

  TEST_CASE("cross: linear branches (3x3 + 1x1, no activation before the Add) are re-parameterised") {
    Graph g = load_graph(kLinearBranches);
    FusionPlan p = plan(g, all_strategies());
    std::string dump = plan_dump(g, p);
    INFO(dump);
    const FusionGroup& grp =
        check_group(g, p, "conv3", Strategy::kCross, GroupKind::kBranchMerge, {"conv3", "conv1", "add", "relu"});
    CHECK(grp.balanced);
    CHECK(grp.imbalance_ratio == doctest::Approx(1.0));
    CHECK(grp.note.rfind("re-parameterised into one conv; ", 0) == 0);
    CHECK(kernel_count(g, p) == 1);
    // No extra work on re-parameterisation, so balancing pays even on cpu.
    CHECK(rejections(p, "balancing_cost").empty());
    CHECK(check_fused_matches_unfused(kLinearBranches, "c_linear", {"vertical,cross", "all"}) == 1);
  }

  TEST_CASE("cross: disabled, the join stays an elementwise kernel of its own") {
    Graph g = load_graph(kLinearBranches);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    std::string dump = plan_dump(g, p);
    INFO(dump);
    check_unfused(g, p, {"conv3", "conv1"});
    check_group(g, p, "add", Strategy::kVertical, GroupKind::kElementwise, {"add", "relu"});
    CHECK(kernel_count(g, p) == 3);
  }

}  // TEST_SUITE
