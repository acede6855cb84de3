// unary_hoist: an elementwise unary read through a view moves in front of it (the anchor's
// epilogue can then carry it), with the same outputs as the graph as written; hand values on a
// small case; the cases it must leave alone.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// x [4, 6] @ w [6, 8] -> y [4, 8] -> Reshape [2, 2, 8] -> `act` -> u; `extra` appended to the nodes.
std::string mlp_yaml(const std::string& act, const std::string& outputs = "[u]", const std::string& extra = "") {
  return "fusert: 1\nname: t\ninputs: [{name: x, shape: [4, 6]}]\noutputs: " + outputs +
         "\ninitializers:\n  - {name: w, shape: [6, 8]}\n  - {name: shp, shape: [3], dtype: i64, value: [2, 2, 8]}\n"
         "nodes:\n  - {name: mm, op: MatMul, inputs: [x, w], outputs: [y]}\n"
         "  - {name: view, op: Reshape, inputs: [y, shp], outputs: [r]}\n"
         "  - {name: act, op: " +
         act + ", inputs: [r], outputs: [u]}\n" + extra;
}

const Node& node_named(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return g.nodes.front();
}

// Runs unary_hoist then dead_code; the outputs must be the graph-as-written's, bit for bit.
Graph hoist(const std::string& yaml, bool expect_change) {
  Graph g = load_graph(yaml);
  auto in = seeded_inputs(g);
  auto ref = run_graph(g, in);
  CHECK(run_pass(make_unary_hoist_pass(), g) == expect_change);
  run_pass(make_dead_code_pass(), g);
  check_same_outputs(ref, run_graph(g, in), 0.0);
  return g;
}

}  // namespace

TEST_CASE("unary_hoist: MatMul -> Reshape -> Gelu becomes MatMul -> Gelu -> Reshape, same values") {
  Graph g = hoist(mlp_yaml("Gelu"), true);
  const Node& act = node_named(g, "act");
  const Node& view = node_named(g, "view");
  CHECK(g.value(act.inputs[0]).name == "y");  // the MatMul's output: the epilogue can take it
  CHECK(g.value(act.outputs[0]).shape == Shape{4, 8});
  CHECK(view.inputs[0] == act.outputs[0]);
  CHECK(g.value(view.outputs[0]).name == "u");  // the graph output keeps its name and shape
  CHECK(g.value(view.outputs[0]).shape == Shape{2, 2, 8});
  CHECK(g.find_value("r") == kNoValue);  // dead_code dropped the old view output
}

TEST_CASE("unary_hoist: hand values through Flatten and Relu") {
  const std::string yaml =
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [1, 2, 1, 2]}]\noutputs: [u]\nnodes:\n"
      "  - {name: neg, op: Neg, inputs: [x], outputs: [y]}\n"
      "  - {name: view, op: Flatten, inputs: [y], outputs: [r]}\n"
      "  - {name: act, op: Relu, inputs: [r], outputs: [u]}\n";
  Graph g = load_graph(yaml);
  CHECK(run_pass(make_unary_hoist_pass(), g));
  run_pass(make_dead_code_pass(), g);
  CHECK(g.nodes[1].name == "act");
  CHECK(g.nodes[2].name == "view");
  const auto out = run_graph(g, {{"x", Tensor::f32({1, 2, 1, 2}, {1.5f, -2.f, 0.f, -0.25f})}});
  const Tensor& u = out.at("u");
  CHECK(u.shape() == Shape{1, 4});
  const float want[] = {0.f, 2.f, 0.f, 0.25f};
  for (int i = 0; i < 4; ++i) CHECK(u.f32()[i] == want[i]);
}

TEST_CASE("unary_hoist: left alone where moving would not help or would change what is read") {
  SUBCASE("the view's source has another reader") {
    hoist(mlp_yaml("Gelu", "[u, z]", "  - {name: other, op: Relu, inputs: [y], outputs: [z]}\n"), false);
  }
  SUBCASE("the view's output is also a graph output") { hoist(mlp_yaml("Gelu", "[u, r]"), false); }
  SUBCASE("the view's output has another reader") {
    hoist(mlp_yaml("Gelu", "[u, z]", "  - {name: other, op: Relu, inputs: [r], outputs: [z]}\n"), false);
  }
  SUBCASE("a binary op after the view") {
    hoist(
        "fusert: 1\nname: t\ninputs: [{name: x, shape: [4, 6]}]\noutputs: [u]\ninitializers:\n"
        "  - {name: w, shape: [6, 8]}\n  - {name: shp, shape: [3], dtype: i64, value: [2, 2, 8]}\n"
        "  - {name: b, shape: [8]}\nnodes:\n  - {name: mm, op: MatMul, inputs: [x, w], outputs: [y]}\n"
        "  - {name: view, op: Reshape, inputs: [y, shp], outputs: [r]}\n"
        "  - {name: act, op: Add, inputs: [r, b], outputs: [u]}\n",
        false);
  }
}
