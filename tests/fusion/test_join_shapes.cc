// Every operand that joins a fused group is checked for its own shape (issue "Fusion that is
// never wrong"): before/expected pairs for the root causes the planner fuzzer found, each with
// the nearby pattern that must still fuse and the one that must not, and fused-vs-unfused
// numerics on every one.
#include "graph/fusion/cross.h"
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// x = relu(input); y = x * HardSigmoid(conv_up(relu(conv_down(GAP(x))))); proj = conv1x1(y).
// The MobileNetV3 squeeze-and-excitation block.
const char* kSeBlock = R"(fusert: 1
name: se_block
inputs: [{name: input, shape: [2, 8, 5, 6]}]
outputs: [out]
initializers:
  - {name: down.w, shape: [2, 8, 1, 1]}
  - {name: down.b, shape: [2], init: uniform}
  - {name: up.w, shape: [8, 2, 1, 1]}
  - {name: up.b, shape: [8], init: uniform}
  - {name: proj.w, shape: [4, 8, 1, 1]}
nodes:
  - {name: stem, op: Relu, inputs: [input], outputs: [x]}
  - {name: squeeze, op: GlobalAveragePool, inputs: [x], outputs: [s]}
  - {name: down, op: Conv, inputs: [s, down.w, down.b], outputs: [d], attrs: {kernel_shape: [1, 1]}}
  - {name: down.relu, op: Relu, inputs: [d], outputs: [dr]}
  - {name: up, op: Conv, inputs: [dr, up.w, up.b], outputs: [u], attrs: {kernel_shape: [1, 1]}}
  - {name: gate, op: HardSigmoid, inputs: [u], outputs: [g], attrs: {alpha: 0.1666667, beta: 0.5}}
  - {name: excite, op: Mul, inputs: [x, g], outputs: [y]}
  - {name: proj, op: Conv, inputs: [y, proj.w], outputs: [out], attrs: {kernel_shape: [1, 1]}}
)";

// The sibling that must still fuse: the gate multiplied into a conv's own output (single use):
// a broadcast-multiply epilogue of that conv.
const char* kGatedConv = R"(fusert: 1
name: gated_conv
inputs: [{name: input, shape: [2, 8, 5, 6]}]
outputs: [y]
initializers:
  - {name: conv.w, shape: [8, 8, 3, 3]}
  - {name: up.w, shape: [8, 8, 1, 1]}
nodes:
  - {name: stem, op: Relu, inputs: [input], outputs: [x]}
  - {name: conv, op: Conv, inputs: [x, conv.w], outputs: [c], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: squeeze, op: GlobalAveragePool, inputs: [x], outputs: [s]}
  - {name: up, op: Conv, inputs: [s, up.w], outputs: [u], attrs: {kernel_shape: [1, 1]}}
  - {name: gate, op: Sigmoid, inputs: [u], outputs: [g]}
  - {name: excite, op: Mul, inputs: [g, c], outputs: [y]}
)";

// Two linear convs on different inputs, one of them with a single output channel: the Add
// broadcasts it over channels, so the two cannot accumulate into one tile.
const char* kChannelBroadcast = R"(fusert: 1
name: channel_broadcast
inputs: [{name: a, shape: [1, 4, 6, 6]}, {name: b, shape: [1, 4, 6, 6]}]
outputs: [y]
initializers:
  - {name: wa, shape: [6, 4, 1, 1]}
  - {name: wb, shape: [1, 4, 1, 1]}
nodes:
  - {name: ra, op: Relu, inputs: [a], outputs: [xa]}
  - {name: rb, op: Relu, inputs: [b], outputs: [xb]}
  - {name: conv_a, op: Conv, inputs: [xa, wa], outputs: [ya], attrs: {kernel_shape: [1, 1]}}
  - {name: conv_b, op: Conv, inputs: [xb, wb], outputs: [yb], attrs: {kernel_shape: [1, 1]}}
  - {name: add, op: Add, inputs: [yb, ya], outputs: [y]}
)";

// Two conv branches on one input with asymmetric kernels (Inception-v3, ACNet): kh x kw with
// pads pa beside the second with pads pb, each + Relu, Add, Relu.
std::string asymmetric(const std::string& k1, const std::string& p1, const std::string& k2, const std::string& p2,
                       const std::string& w1, const std::string& w2) {
  return R"(fusert: 1
name: asymmetric
inputs: [{name: input, shape: [1, 4, 7, 6]}]
outputs: [y]
initializers:
  - {name: w1, shape: )" +
         w1 + R"(}
  - {name: w2, shape: )" +
         w2 + R"(}
nodes:
  - {name: stem, op: Relu, inputs: [input], outputs: [x]}
  - {name: c1, op: Conv, inputs: [x, w1], outputs: [y1], attrs: {kernel_shape: )" +
         k1 + ", pads: " + p1 + R"(}}
  - {name: r1, op: Relu, inputs: [y1], outputs: [a1]}
  - {name: c2, op: Conv, inputs: [x, w2], outputs: [y2], attrs: {kernel_shape: )" +
         k2 + ", pads: " + p2 + R"(}}
  - {name: r2, op: Relu, inputs: [y2], outputs: [a2]}
  - {name: add, op: Add, inputs: [a1, a2], outputs: [s]}
  - {name: relu, op: Relu, inputs: [s], outputs: [y]}
)";
}

// Sibling Gemms on one input whose biases broadcast differently: [M,N], [M,1], [1,N], [N], scalar.
std::string sibling_gemms(int width) {
  static const char* kBias[] = {"[5, 3]", "[5, 1]", "[1, 3]", "[3]", "[1]"};
  std::string inits, nodes, outs;
  for (int i = 0; i < width; ++i) {
    std::string n = "g" + std::to_string(i);
    inits +=
        "  - {name: " + n + ".w, shape: [3, 6]}\n  - {name: " + n + ".b, shape: " + kBias[i % 5] + ", init: uniform}\n";
    nodes += "  - {name: " + n + ", op: Gemm, inputs: [x, " + n + ".w, " + n + ".b], outputs: [" + n +
             ".y], attrs: {transB: 1" + (i % 3 == 1 ? ", beta: 2.0" : "") + "}}\n";
    outs += (i ? ", " : "") + n + ".y";
  }
  return "fusert: 1\nname: sibling_gemms\ninputs: [{name: input, shape: [5, 6]}]\noutputs: [" + outs +
         "]\ninitializers:\n" + inits + "nodes:\n  - {name: stem, op: Relu, inputs: [input], outputs: [x]}\n" + nodes;
}

// Runs `yaml` unfused and with `fusion` planned for `plan_for` on the CPU kernels.
void check_plan_for(const std::string& yaml, const std::string& stem, const std::string& plan_for) {
  std::string path = write_model(yaml, stem);
  auto ref = open_session(path, "none");
  TensorMap in = ref->seeded_inputs(0);
  SessionOptions o;
  o.seeded = true;
  o.plan_for = plan_for;
  auto s = Session::load(path, o);
  REQUIRE(s.ok());
  check_outputs_close(run_session(*ref, in), run_session(**s, in), 1e-5);
}

}  // namespace

TEST_CASE("join shapes: an SE gate [N,C,1,1] never hosts the join that broadcasts it (rejects_broadcast_host)") {
  Graph g = load_graph(kSeBlock, true);
  FusionPlan p = plan(g, all_strategies());
  INFO(plan_dump(g, p));
  const FusionGroup& gate = group_of(g, p, "up");
  CHECK(std::find(gate.nodes.begin(), gate.nodes.end(), node_index(g, "excite")) == gate.nodes.end());
  auto r = rejections(p, "broadcast_join");
  REQUIRE(r.size() == 1u);
  CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"up", "excite"});
  CHECK(contains(r[0]->reason, "'g' [2, 8, 1, 1] is broadcast to the join's [2, 8, 5, 6]"));
  for (const char* mode : {"all", "cross", "vertical,cross", "compound"}) {
    INFO(mode);
    check_fused_matches_unfused(kSeBlock, "j_se", {mode});
  }
}

TEST_CASE("join shapes: a gate multiplied into a conv's own output is that conv's broadcast-multiply epilogue") {
  Graph g = load_graph(kGatedConv, true);
  FusionPlan p = plan(g, all_strategies());
  INFO(plan_dump(g, p));
  const FusionGroup& grp = check_group(g, p, "conv", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv", "excite"});
  CHECK(grp.note == "broadcast join into 'conv' epilogue; operand 'g' [2, 8, 1, 1] broadcast per output element");
  CHECK(check_fused_matches_unfused(kGatedConv, "j_gated", {"all"}) < 6);
}

TEST_CASE("join shapes: a one-channel conv branch is no conv-sum; the full-width conv hosts the join") {
  Graph g = load_graph(kChannelBroadcast, true);
  FusionPlan p = plan(g, all_strategies());
  INFO(plan_dump(g, p));
  for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kConvSum);
  check_group(g, p, "conv_a", Strategy::kCross, GroupKind::kAnchorEpilogue, {"conv_a", "add"});
  check_fused_matches_unfused(kChannelBroadcast, "j_chan", {"all", "cross"});
}

TEST_CASE("join shapes: 3x1 beside 1x3 stacks as one 3x3 conv; misaligned pads do not stack") {
  const std::string yaml =
      asymmetric("[3, 1]", "[1, 0, 1, 0]", "[1, 3]", "[0, 1, 0, 1]", "[4, 4, 3, 1]", "[4, 4, 1, 3]");
  Graph g = load_graph(yaml, true);
  StackedConv sc;
  REQUIRE(stacked_conv(g, g.nodes[static_cast<size_t>(node_index(g, "c1"))],
                       g.nodes[static_cast<size_t>(node_index(g, "c2"))], &sc));
  CHECK(sc.kh == 3);
  CHECK(sc.kw == 3);
  CHECK(sc.pads == std::vector<int64_t>{1, 1, 1, 1});
  FusionOptions cuda;
  REQUIRE(set_planner_backend("cuda", &cuda).ok());  // the roofline where balancing pays: one branch-merge kernel
  FusionPlan p = plan(g, cuda);
  INFO(plan_dump(g, p));
  const FusionGroup& grp =
      check_group(g, p, "c1", Strategy::kCross, GroupKind::kBranchMerge, {"c1", "r1", "c2", "r2", "add", "relu"});
  CHECK(grp.join == node_index(g, "add"));
  check_plan_for(yaml, "j_asym", "cuda");
  check_fused_matches_unfused(yaml, "j_asym_cpu", {"all", "cross"});
  // 5x1 beside 3x3 stacks as 5x3 with pads [2, 1, 2, 1].
  const std::string tall =
      asymmetric("[5, 1]", "[2, 0, 2, 0]", "[3, 3]", "[1, 1, 1, 1]", "[4, 4, 5, 1]", "[4, 4, 3, 3]");
  Graph g2 = load_graph(tall, true);
  REQUIRE(stacked_conv(g2, g2.nodes[static_cast<size_t>(node_index(g2, "c1"))],
                       g2.nodes[static_cast<size_t>(node_index(g2, "c2"))], &sc));
  CHECK(sc.kh == 5);
  CHECK(sc.kw == 3);
  CHECK(sc.pads == std::vector<int64_t>{2, 1, 2, 1});
  check_plan_for(tall, "j_tall", "cuda");
  // rejects_misaligned_pads: same output shape, but the zero taps would not line up.
  const std::string off =
      asymmetric("[3, 1]", "[0, 0, 2, 0]", "[1, 3]", "[0, 1, 0, 1]", "[4, 4, 3, 1]", "[4, 4, 1, 3]");
  Graph g3 = load_graph(off, true);
  CHECK_FALSE(stacked_conv(g3, g3.nodes[static_cast<size_t>(node_index(g3, "c1"))],
                           g3.nodes[static_cast<size_t>(node_index(g3, "c2"))], &sc));
  FusionPlan p3 = plan(g3, cuda);
  for (const FusionGroup* grp3 : p3.kernel_groups()) CHECK(grp3->kind != GroupKind::kBranchMerge);
  check_plan_for(off, "j_off", "cuda");
}

TEST_CASE("join shapes: sibling Gemms with [M,N], [M,1], [1,N], [N] and scalar biases are one exact horizontal GEMM") {
  for (int width : {4, 5, 8}) {
    INFO("width " << width);
    const std::string yaml = sibling_gemms(width);
    Graph g = load_graph(yaml, true);
    FusionPlan p = plan(g, all_strategies());
    INFO(plan_dump(g, p));
    const FusionGroup& grp = group_of(g, p, "g0");
    CHECK(grp.kind == GroupKind::kHorizontalGemm);
    CHECK(grp.nodes.size() == static_cast<size_t>(width));
    CHECK(check_fused_matches_unfused(yaml, "j_siblings" + std::to_string(width), {"all", "horizontal"}) == 2);
  }
}

TEST_CASE("join shapes: MatMul + LayerNorm runs as one kernel; a Softmax after a join is no Gemm epilogue") {
  const std::string yaml = R"(fusert: 1
name: matmul_ln
inputs: [{name: input, shape: [2, 3, 6]}, {name: r, shape: [2, 3, 5]}]
outputs: [y, z]
initializers:
  - {name: w, shape: [6, 5]}
  - {name: ln.s, shape: [5], init: bn_scale}
  - {name: g.w, shape: [5, 6]}
  - {name: g.b, shape: [5], init: uniform}
nodes:
  - {name: stem, op: Relu, inputs: [input], outputs: [x]}
  - {name: mm, op: MatMul, inputs: [x, w], outputs: [m]}
  - {name: ln, op: LayerNormalization, inputs: [m, ln.s], outputs: [y], attrs: {axis: -1}}
  - {name: flat, op: Reshape, inputs: [x], outputs: [xf], attrs: {shape: [6, 6]}}
  - {name: gemm, op: Gemm, inputs: [xf, g.w, g.b], outputs: [gy], attrs: {transB: 1}}
  - {name: rr, op: Relu, inputs: [r], outputs: [rc]}
  - {name: rf, op: Reshape, inputs: [rc], outputs: [rcf], attrs: {shape: [6, 5]}}
  - {name: add, op: Add, inputs: [gy, rcf], outputs: [s]}
  - {name: sm, op: Softmax, inputs: [s], outputs: [z], attrs: {axis: -1}}
)";
  Graph g = load_graph(yaml, true);
  FusionPlan p = plan(g, all_strategies());
  INFO(plan_dump(g, p));
  check_group(g, p, "mm", Strategy::kVertical, GroupKind::kGemmLayerNorm, {"mm", "ln"});
  const FusionGroup& gemm = group_of(g, p, "gemm");
  CHECK(std::find(gemm.nodes.begin(), gemm.nodes.end(), node_index(g, "sm")) == gemm.nodes.end());
  CHECK(rejections(p, "epilogue").size() == 1u);
  check_fused_matches_unfused(yaml, "j_mm_ln", {"all", "vertical", "cross"});
}
