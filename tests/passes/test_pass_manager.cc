// PassManager and run_canonicalize: order, records and log lines, the verifier catching a
// pass that breaks the graph, and errors naming the pass.
#include <doctest/doctest.h>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// A pass with a scripted outcome, to test the manager itself.
class ScriptedPass : public Pass {
 public:
  enum class Action { kNothing, kDropProducer, kWrongShape, kFail };
  ScriptedPass(const char* name, Action a) : name_(name), action_(a) {}
  const char* name() const override { return name_; }
  Result<bool> run(Graph& g) override {
    ++runs;
    switch (action_) {
      case Action::kNothing:
        return false;
      case Action::kDropProducer:  // removes the node writing the graph output
        g.nodes.pop_back();
        g.rebuild_links();
        return true;
      case Action::kWrongShape:
        g.value(g.outputs[0]).shape.push_back(1);
        return true;
      case Action::kFail:
        return error(StatusCode::kUnsupported) << "cannot do this";
    }
    return false;
  }
  int runs = 0;

 private:
  const char* name_;
  Action action_;
};

const char* kSmall =
    "fusert: 1\nname: t\ninputs: [{name: x, shape: [2, 3]}]\noutputs: [y]\n"
    "nodes:\n  - {name: a, op: Relu, inputs: [x], outputs: [a]}\n"
    "  - {name: b, op: Sigmoid, inputs: [a], outputs: [y]}\n";

// conv -> bn -> relu, a constant chain feeding an Add, a LayerNorm and a GELU: each
// canonicalisation pass has something to do.
const char* kPipeline = R"(fusert: 1
name: t
inputs: [{name: x, shape: [1, 2, 4, 8]}]
outputs: [out]
initializers:
  - {name: w, shape: [2, 2, 1, 1]}
  - {name: s, shape: [2], init: bn_scale}
  - {name: b, shape: [2]}
  - {name: m, shape: [2]}
  - {name: v, shape: [2], init: bn_var}
  - {name: row, shape: [8]}
  - {name: row_shape, shape: [4], dtype: i64, value: [1, 1, 1, 8]}
  - {name: two, shape: [], value: 2.0}
  - {name: eps, shape: [], value: 1e-5}
  - {name: half, shape: [], value: 0.5}
  - {name: one, shape: [], value: 1.0}
  - {name: sqrt2, shape: [], value: 1.4142135}
nodes:
  - {name: conv, op: Conv, inputs: [x, w], outputs: [c]}
  - {name: bn, op: BatchNormalization, inputs: [c, s, b, m, v], outputs: [cb]}
  - {name: relu, op: Relu, inputs: [cb], outputs: [r]}
  - {name: reshape, op: Reshape, inputs: [row, row_shape], outputs: [row4]}
  - {name: shift, op: Add, inputs: [r, row4], outputs: [x1]}
  - {name: mean, op: ReduceMean, inputs: [x1], outputs: [mu], attrs: {axes: [-1]}}
  - {name: sub, op: Sub, inputs: [x1, mu], outputs: [d]}
  - {name: pow, op: Pow, inputs: [d, two], outputs: [d2]}
  - {name: var, op: ReduceMean, inputs: [d2], outputs: [va], attrs: {axes: [-1]}}
  - {name: add_eps, op: Add, inputs: [va, eps], outputs: [ve]}
  - {name: sqrt, op: Sqrt, inputs: [ve], outputs: [sd]}
  - {name: div, op: Div, inputs: [d, sd], outputs: [ln]}
  - {name: h, op: Mul, inputs: [ln, half], outputs: [h]}
  - {name: sc, op: Div, inputs: [ln, sqrt2], outputs: [sc]}
  - {name: erf, op: Erf, inputs: [sc], outputs: [e]}
  - {name: t, op: Add, inputs: [e, one], outputs: [t]}
  - {name: gelu, op: Mul, inputs: [h, t], outputs: [out]}
)";

}  // namespace

TEST_CASE("run_canonicalize: the standard pipeline, its log and an unchanged result") {
  Graph g = load_graph(kPipeline);
  auto in = seeded_inputs(g);
  auto ref = run_graph(g, in);
  auto log = run_canonicalize(g, true);
  REQUIRE(log.ok());
  REQUIRE(log->size() == 5);
  CHECK((*log)[0] == "constant_folding: changed, nodes 17 -> 16 (folded reshape)");
  CHECK((*log)[1] == "bn_folding: changed, nodes 16 -> 15 (folded bn into conv)");
  CHECK((*log)[2] == "pattern_rewrite: changed, nodes 15 -> 5 (gelu x1 (gelu); layer_norm x1 (div))");
  // 30 values loaded + 2 folded BN tensors + 1 unit LN scale = 33; kept: x, the folded weight
  // and bias, cb, r, row4 (now a constant), x1, the unit scale, ln, out.
  CHECK((*log)[3] == "unary_hoist: unchanged, nodes 5 -> 5");  // no activation behind a view here
  CHECK((*log)[4] == "dead_code: changed, nodes 5 -> 5 (removed 0 nodes, 23 values)");
  CHECK(g.values.size() == 10);
  std::vector<OpKind> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op);
  CHECK(ops ==
        std::vector<OpKind>{OpKind::kConv, OpKind::kRelu, OpKind::kAdd, OpKind::kLayerNormalization, OpKind::kGelu});
  check_same_outputs(ref, run_graph(g, in), 2e-5);
  // Canonical form is a fixed point.
  auto again = run_canonicalize(g, true);
  REQUIRE(again.ok());
  for (const std::string& line : *again) CHECK(line.find("unchanged") != std::string::npos);
}

TEST_CASE("PassManager: records per pass, stops at the first error naming the pass") {
  Graph g = load_graph(kSmall);
  PassManager pm;
  auto first = std::make_unique<ScriptedPass>("first", ScriptedPass::Action::kNothing);
  auto failing = std::make_unique<ScriptedPass>("failing", ScriptedPass::Action::kFail);
  auto never = std::make_unique<ScriptedPass>("never", ScriptedPass::Action::kNothing);
  ScriptedPass* never_ptr = never.get();
  pm.add(std::move(first)).add(std::move(failing)).add(std::move(never));
  auto r = pm.run(g);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(r.status().message() == "pass 'failing': cannot do this");
  CHECK(never_ptr->runs == 0);
  REQUIRE(pm.records().size() == 1);
  CHECK(pm.log_lines()[0] == "first: unchanged, nodes 2 -> 2");
}

TEST_CASE("PassManager: the verifier after each pass catches a broken graph") {
  for (auto action : {ScriptedPass::Action::kDropProducer, ScriptedPass::Action::kWrongShape}) {
    for (bool verify : {true, false}) {
      Graph g = load_graph(kSmall);
      PassManager pm(verify);
      pm.add(std::make_unique<ScriptedPass>("breaker", action));
      auto r = pm.run(g);
      CHECK(r.ok() == !verify);
      if (verify) {
        CHECK(r.status().code() == StatusCode::kInternal);
        CHECK(r.status().message().rfind("after pass 'breaker': ", 0) == 0);
        CHECK(r.status().message().find(action == ScriptedPass::Action::kWrongShape
                                            ? "shape inference gives f32 [2, 3]"
                                            : "graph output 'y' is never produced") != std::string::npos);
      }
    }
  }
}

TEST_CASE("verify_graph_after_pass: an initializer whose data disagrees with its declaration") {
  Graph g = load_graph(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [3]}]\noutputs: [y]\n"
      "initializers:\n  - {name: w, shape: [3]}\n"
      "nodes:\n  - {name: a, op: Add, inputs: [x, w], outputs: [y]}\n");
  CHECK(verify_graph_after_pass(g, "p").ok());
  g.value(g.find_value("w")).data = Tensor(DType::kF32, {4});
  Status st = verify_graph_after_pass(g, "p");
  CHECK(st.message() == "after pass 'p': initializer 'w' is declared f32 [3] but holds f32 [4]");
}
