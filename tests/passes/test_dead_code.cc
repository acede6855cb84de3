// dead_code: nodes that reach no graph output go, then every value nothing touches; graph
// inputs stay; ids are remapped consistently (the runtime still runs the graph).
#include <doctest/doctest.h>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

const char* kModel = R"(fusert: 1
name: t
inputs: [{name: x, shape: [2, 3]}, {name: unused_in, shape: [4]}]
outputs: [y, z]
initializers:
  - {name: w, shape: [3]}
  - {name: dead_w, shape: [3]}
  - {name: never_read, shape: [5]}
  - {name: k, shape: [1], dtype: i64, value: [0]}
nodes:
  - {name: dead1, op: Mul, inputs: [a, dead_w], outputs: [d1]}
  - {name: a, op: Relu, inputs: [x], outputs: [a]}
  - {name: dead2, op: Sigmoid, inputs: [d1], outputs: [d2]}
  - {name: add, op: Add, inputs: [a, w], outputs: [y]}
  - {name: split, op: Split, inputs: [x], outputs: [s0, s1]}
  - {name: z, op: Relu, inputs: [s0], outputs: [z]}
  - {name: dead3, op: Gather, inputs: [s1, k], outputs: [d3]}
)";

}  // namespace

TEST_CASE("dead_code: removes dead chains and unused values, keeps inputs and multi-output nodes") {
  Graph g = load_graph(kModel);
  auto in = seeded_inputs(g);
  auto ref = run_graph(g, in);
  CHECK(run_pass(make_dead_code_pass(), g));
  for (const char* gone : {"dead1", "dead2", "dead3"}) CHECK_FALSE(find_node(g, gone));
  CHECK(g.nodes.size() == 4);
  for (const char* gone : {"dead_w", "never_read", "k", "d1", "d2", "d3"}) {
    INFO(gone);
    CHECK(g.find_value(gone) == kNoValue);
  }
  // s1 is an unread output of a live node: it stays with its producer.
  for (const char* kept : {"x", "unused_in", "w", "a", "y", "s0", "s1", "z"}) {
    INFO(kept);
    CHECK(g.find_value(kept) != kNoValue);
  }
  CHECK(g.values.size() == 8);
  REQUIRE(g.inputs.size() == 2);
  CHECK(g.value(g.inputs[1]).name == "unused_in");
  CHECK(g.value(g.inputs[1]).is_graph_input);
  CHECK(g.value(g.outputs[1]).name == "z");
  CHECK(g.value(g.find_value("a")).consumers.size() == 1);  // links rebuilt after the remap
  check_same_outputs(ref, run_graph(g, in), 0.0);
  // A second run finds nothing.
  CHECK_FALSE(run_pass(make_dead_code_pass(), g));
}

TEST_CASE("dead_code: a graph with nothing dead is unchanged") {
  Graph g = load_graph(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\n"
      "nodes:\n  - {name: r, op: Relu, inputs: [x], outputs: [y]}\n");
  CHECK_FALSE(run_pass(make_dead_code_pass(), g));
  CHECK(g.nodes.size() == 1);
  CHECK(g.values.size() == 2);
}
