// Helpers shared by the pass tests: load an inline YAML model with seeded weights, run one pass
// with the post-pass verifier, and run a graph through the unfused CPU runtime so a rewrite
// can be checked against the graph it came from.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <string>

#include "graph/loader/model_loader.h"
#include "graph/passes/pass.h"
#include "runtime/executor.h"
#include "runtime/memory_planner.h"
#include "runtime/weights.h"

namespace fusert::test {

/// Loads `yaml` and binds seeded weights (constants keep their `value`).
inline Graph load_graph(const std::string& yaml, uint64_t seed = 7) {
  auto r = load_model_from_string(yaml, "t.yaml");
  INFO(yaml);
  if (!r.ok()) FAIL("load failed: " << r.status().to_string());
  Graph g = std::move(r.value().graph);
  bind_seeded_weights(g, seed);
  return g;
}

/// Runs `pass` on `g`, requires success and a graph that passes the post-pass verifier.
inline bool run_pass(Pass& pass, Graph& g) {
  Result<bool> r = pass.run(g);
  if (!r.ok()) FAIL("pass " << pass.name() << " failed: " << r.status().to_string());
  Status st = verify_graph_after_pass(g, pass.name());
  if (!st.ok()) FAIL(st.to_string());
  return *r;
}

inline bool run_pass(std::unique_ptr<Pass> pass, Graph& g) { return run_pass(*pass, g); }

/// Seeded values in [-1, 1) for every graph input.
inline std::map<std::string, Tensor> seeded_inputs(const Graph& g, uint64_t seed = 3) {
  std::map<std::string, Tensor> m;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    m.emplace(v.name, seeded_tensor(v.name, v.shape, InitKind::kInput, seed));
  }
  return m;
}

/// Runs `g` unfused on the CPU runtime.
inline std::map<std::string, Tensor> run_graph(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  ExecutionPlan plan;
  auto steps = lower_graph_cpu(g);
  if (!steps.ok()) FAIL("lowering failed: " << steps.status().to_string());
  plan.steps = std::move(steps.value());
  plan_memory(g, plan);
  Executor ex(g, plan);
  auto out = ex.run(inputs);
  if (!out.ok()) FAIL("run failed: " << out.status().to_string());
  return std::move(out.value());
}

/// Every output of `after` within `tol` (max abs diff) of `before`, same names and shapes.
inline void check_same_outputs(const std::map<std::string, Tensor>& before, const std::map<std::string, Tensor>& after,
                               double tol) {
  REQUIRE(before.size() == after.size());
  for (const auto& [name, t] : before) {
    INFO("output " << name);
    auto it = after.find(name);
    REQUIRE(it != after.end());
    REQUIRE(it->second.shape() == t.shape());
    CHECK(max_abs_diff(it->second, t) <= tol);
  }
}

inline int count_op(const Graph& g, OpKind op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

inline const Node* find_node(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

inline const Value& value_named(const Graph& g, const std::string& name) {
  ValueId id = g.find_value(name);
  INFO("value " << name);
  REQUIRE(id != kNoValue);
  return g.value(id);
}

}  // namespace fusert::test
