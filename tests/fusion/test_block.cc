// Block fusion of inverted residuals (graph/fusion/vertical.cc merge_pointwise_depthwise): a
// 1x1 expansion + chain and the depthwise conv that alone reads it + chain become one vertical
// group of kind 1x1+depthwise; the siblings where it must not (second reader, graph
// output, a backend without the kernel: the CPU reference kernels, CUDA) keep two groups with the
// refusal's key and reason; through a Session fused equals unfused whatever oneDNN decides.
#include "runtime/cpu/lower_cpu.h"
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// x [1, 8, H, H] -> expand 1x1 (48) -> clip -> dw 3x3 stride s -> clip -> project 1x1 (8).
std::string inverted_residual(int64_t h, int64_t stride, const std::string& outputs = "[y]") {
  return R"(fusert: 1
name: inverted_residual
inputs: [{name: x, shape: [1, 8, )" +
         std::to_string(h) + ", " + std::to_string(h) + R"(]}]
outputs: )" +
         outputs +
         R"(
initializers:
  - {name: we, shape: [48, 8, 1, 1]}
  - {name: be, shape: [48]}
  - {name: wd, shape: [48, 1, 3, 3]}
  - {name: bd, shape: [48]}
  - {name: wp, shape: [8, 48, 1, 1]}
nodes:
  - {name: expand, op: Conv, inputs: [x, we, be], outputs: [e], attrs: {kernel_shape: [1, 1]}}
  - {name: clip1, op: Clip, inputs: [e], outputs: [ec], attrs: {min: 0.0, max: 6.0}}
  - {name: dw, op: Conv, inputs: [ec, wd, bd], outputs: [d], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1], strides: [)" +
         std::to_string(stride) + ", " + std::to_string(stride) + R"(], group: 48}}
  - {name: clip2, op: Clip, inputs: [d], outputs: [dc], attrs: {min: 0.0, max: 6.0}}
  - {name: project, op: Conv, inputs: [dc, wp], outputs: [y], attrs: {kernel_shape: [1, 1]}}
)";
}

FusionDecision refuse_blocks(const Graph&, const FusionGroup& c) {
  if (c.kind == GroupKind::kPointwiseDepthwise) return FusionDecision::no("backend", "no block kernel here");
  return FusionDecision::yes();
}

}  // namespace

TEST_SUITE("fusion.block") {
  TEST_CASE("block: 1x1 expand + clip + depthwise + clip is one 1x1+depthwise vertical group") {
    Graph g = load_graph(inverted_residual(16, 2));
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    INFO(plan_dump(g, p));
    const FusionGroup& grp = check_group(g, p, "expand", Strategy::kVertical, GroupKind::kPointwiseDepthwise,
                                         {"expand", "clip1", "dw", "clip2"});
    CHECK(grp.launches_saved == 3);
    CHECK(grp.bytes_saved > 0);
    check_unfused(g, p, {"project"});
    CHECK(kernel_count(g, p) == 2);
  }

  TEST_CASE("block: rejects_graph_output (the expanded map is also a graph output)") {
    Graph g = load_graph(inverted_residual(16, 1, "[y, ec]"));
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    INFO(plan_dump(g, p));
    check_group(g, p, "expand", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"expand", "clip1"});
    check_group(g, p, "dw", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"dw", "clip2"});
    auto r = rejections(p, "graph_output");
    REQUIRE(r.size() == 1u);
    CHECK(names_of(g, r[0]->nodes) == std::vector<std::string>{"expand", "clip1", "dw", "clip2"});
  }

  TEST_CASE("block: a second reader of the expanded map keeps two groups") {
    std::string yaml =
        inverted_residual(16, 1, "[y, z]") + "  - {name: sig, op: Sigmoid, inputs: [ec], outputs: [z]}\n";
    Graph g = load_graph(yaml);
    FusionPlan p = plan(g, only({Strategy::kVertical}));
    INFO(plan_dump(g, p));
    for (const FusionGroup* grp : p.kernel_groups()) CHECK(grp->kind != GroupKind::kPointwiseDepthwise);
  }

  TEST_CASE("block: rejects_unsupported_group: a backend without the kernel keeps two groups, with its reason") {
    Graph g = load_graph(inverted_residual(16, 1));
    FusionOptions o = only({Strategy::kVertical});
    o.supports = refuse_blocks;
    FusionPlan p = plan(g, o);
    INFO(plan_dump(g, p));
    check_group(g, p, "expand", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"expand", "clip1"});
    check_group(g, p, "dw", Strategy::kVertical, GroupKind::kAnchorEpilogue, {"dw", "clip2"});
    auto r = rejections(p, "backend");
    REQUIRE(r.size() == 1u);
    CHECK(contains(r[0]->reason, "no block kernel here"));
  }

  TEST_CASE("block: the reference lowering runs the block as two convolutions and matches the unfused plan") {
    const std::string path = write_model(inverted_residual(15, 2), "block_reference");
    SessionOptions o;
    o.seeded = true;
    o.cpu_kernels = "reference";
    o.all_blocks = true;  // the reference kernels' capability refuses blocks otherwise
    auto fused = Session::load(path, o);
    REQUIRE_MESSAGE(fused.ok(), fused.status().to_string());
    REQUIRE(fused.value()->plan().steps.size() == 2u);
    CHECK(fused.value()->plan().steps[0].kernel == "conv2d_fused x2");
    o.fusion = "raw";
    auto raw = Session::load(path, o);
    REQUIRE(raw.ok());
    const TensorMap in = raw.value()->seeded_inputs(3);
    check_outputs_close(run_session(*raw.value(), in), run_session(*fused.value(), in), 1e-6);
  }

  TEST_CASE("block: the CPU backend forms blocks where oneDNN's kernel pays, else says why; fused == unfused") {
    // Large maps (oneDNN's single-pass kernel on AVX2) and small ones (its two-pass kernel).
    for (auto [h, stride] : {std::pair<int64_t, int64_t>{112, 2}, {56, 2}, {7, 1}, {15, 2}}) {
      CAPTURE(h);
      CAPTURE(stride);
      const std::string yaml = inverted_residual(h, stride);
      const std::string path = write_model(yaml, "block_" + std::to_string(h) + "_" + std::to_string(stride));
      auto s = open_session(path, "all");
      bool block = false;
      for (const FusionGroup* grp : s->fusion_plan().kernel_groups())
        block |= grp->kind == GroupKind::kPointwiseDepthwise;
      std::string details, reasons;
      for (const Step& st : s->plan().steps) details += st.kernel + ": " + st.detail + "\n";
      for (const Rejection& r : s->fusion_plan().rejected) reasons += r.key + ": " + r.reason + "\n";
      INFO(details);
      INFO(reasons);
      // Either the block formed (one oneDNN step with the dw post-op) or oneDNN's reason is given.
      if (block) {
        CHECK(s->stats().kernels == 2);
        CHECK(contains(details, "onednn_conv_dw: "));
        CHECK(contains(details, "dw 3x3 s" + std::to_string(stride)));
      } else {
        CHECK(s->stats().kernels == 3);
        CHECK(contains(reasons, "backend: not fused: "));
        CHECK(contains(reasons, "1x1 + depthwise"));
      }
      MESSAGE("h " << h << " stride " << stride << ": " << std::string(block ? "one oneDNN block" : "two groups"));
      check_fused_matches_unfused(yaml, "block_cmp_" + std::to_string(h), {"all", "vertical"}, 1e-5);
      SessionOptions ref;
      ref.fusion = "all";
      ref.seeded = true;
      ref.cpu_kernels = "reference";
      auto r = Session::load(path, ref);
      REQUIRE(r.ok());
      CHECK(r.value()->stats().kernels == 3);  // reference kernels: refused (no single-pass kernel)
      bool said = false;
      for (const Rejection& rj : r.value()->fusion_plan().rejected)
        said |= contains(rj.reason, "no single-pass 1x1 + depthwise kernel");
      CHECK(said);
    }
  }

  TEST_CASE("block: rejects_unsupported_group on CUDA (cuDNN has no 1x1 + depthwise fusion)") {
    const std::string path = write_model(inverted_residual(56, 2), "block_cuda_plan");
    SessionOptions o;
    o.seeded = true;
    o.device = "cuda";
    o.plan_only = true;  // the CUDA backend's plan and capability answers, no device needed
    auto s = Session::load(path, o);
    if (!s.ok()) {  // a build without the CUDA backend
      MESSAGE("skipped: " << s.status().to_string());
      return;
    }
    for (const FusionGroup* grp : s.value()->fusion_plan().kernel_groups())
      CHECK(grp->kind != GroupKind::kPointwiseDepthwise);
    bool said = false;
    for (const Rejection& r : s.value()->fusion_plan().rejected)
      said |= r.key == "backend" && contains(r.reason, "no CUDA kernel for a 1x1 + depthwise block");
    CHECK(said);
  }
}
