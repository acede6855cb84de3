// Backend capability (FusionOptions::supports, runtime/backend.h): the planner asks the backend
// before it forms a group, so a group the backend cannot run is never formed (the refusal is
// a rejection with key "backend" and the backend's reason), and a single op it cannot run is
// planned on the host up front, shown by --explain.
#include "graph/fusion/explain.h"
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

namespace {

// Gemm -> Add(bias) -> Relu, then a LayerNorm and a Softmax over the last axis.
const char* kChain = R"(fusert: 1
name: chain
inputs: [{name: x, shape: [4, 16]}]
outputs: [y]
initializers:
  - {name: w, shape: [16, 16]}
  - {name: b, shape: [16]}
  - {name: s, shape: [16]}
nodes:
  - {name: gemm, op: Gemm, inputs: [x, w, b], outputs: [g]}
  - {name: relu, op: Relu, inputs: [g], outputs: [r]}
  - {name: ln, op: LayerNormalization, inputs: [r, s], outputs: [l]}
  - {name: sm, op: Softmax, inputs: [l], outputs: [y]}
)";

// A backend that runs every group except those containing a LayerNormalization, and no Softmax.
FusionDecision no_layernorm(const Graph& g, const FusionGroup& c) {
  for (int ni : c.nodes) {
    const OpKind op = g.nodes[static_cast<size_t>(ni)].op;
    if (op == OpKind::kLayerNormalization && c.nodes.size() > 1)
      return FusionDecision::no("backend", "no fused LayerNorm kernel");
    if (op == OpKind::kSoftmax) return FusionDecision::no("backend", "no Softmax kernel");
  }
  return FusionDecision::yes();
}

}  // namespace

TEST_CASE("capability: without a check the chain fuses through the LayerNorm") {
  Graph g = load_graph(kChain);
  FusionPlan p = plan(g, only({Strategy::kVertical}));
  const FusionGroup& grp = group_of(g, p, "gemm");
  CHECK(member_names(g, grp) == std::vector<std::string>{"gemm", "relu", "ln"});
  for (const FusionGroup* k : p.kernel_groups()) CHECK(k->host_reason.empty());
}

TEST_CASE("capability: rejects_unsupported_group: the backend's no stops the chain, with its reason") {
  Graph g = load_graph(kChain);
  FusionOptions o = only({Strategy::kVertical});
  int asked = 0;
  o.supports = [&](const Graph& gr, const FusionGroup& c) {
    ++asked;
    CHECK(std::is_sorted(c.nodes.begin(), c.nodes.end()));
    CHECK_FALSE(c.outputs.empty());
    return no_layernorm(gr, c);
  };
  FusionPlan p = plan(g, o);
  CHECK(asked > 0);
  CHECK(member_names(g, group_of(g, p, "gemm")) == std::vector<std::string>{"gemm", "relu"});
  CHECK(member_names(g, group_of(g, p, "ln")) == std::vector<std::string>{"ln"});
  bool found = false;
  for (const Rejection& r : p.rejected) {
    if (r.key != "backend") continue;
    found = true;
    CHECK(r.reason == "not fused: cpu cannot run this gemm+layernorm group as one launch: no fused LayerNorm kernel");
  }
  CHECK(found);
  // The single Softmax is planned on the host, and --explain says so before anything runs.
  const FusionGroup& sm = group_of(g, p, "sm");
  CHECK(sm.host_reason == "no Softmax kernel");
  CHECK(group_of(g, p, "ln").host_reason.empty());
  const std::string text = explain_plan(g, p);
  CHECK(text.find("host fallbacks (1 ops the backend runs on the CPU, decided by its capability check):\n  "
                  "sm(Softmax): no Softmax kernel\n") != std::string::npos);
}
