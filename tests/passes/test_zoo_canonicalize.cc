// run_canonicalize on zoo models with seeded weights: every BatchNormalization is folded
// (plain convs in ResNet-18, depthwise ones in MobileNetV2) and the logits do not move.
#include <doctest/doctest.h>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

TEST_CASE("run_canonicalize on zoo models: BN folded, logits unchanged") {
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    INFO(name);
    auto m = load_model(std::string(FUSERT_SOURCE_DIR) + "/models/" + name + ".yaml");
    REQUIRE(m.ok());
    Graph g = std::move(m.value().graph);
    bind_seeded_weights(g, 0);
    const int bns = count_op(g, OpKind::kBatchNormalization);
    const size_t nodes = g.nodes.size();
    CHECK(bns > 0);
    auto in = seeded_inputs(g);
    auto ref = run_graph(g, in);
    auto log = run_canonicalize(g, true);
    REQUIRE(log.ok());
    CHECK(count_op(g, OpKind::kBatchNormalization) == 0);
    CHECK(g.nodes.size() == nodes - static_cast<size_t>(bns));
    auto out = run_graph(g, in);
    for (const auto& [k, t] : ref) {
      INFO(k);
      CHECK(relative_l2(out.at(k), t) < 1e-5);
    }
  }
}
