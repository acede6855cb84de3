// Read-only helpers for pattern rules: walk producer/consumer links and test constants.
// They rely on Graph links being current (the rewrite pass rebuilds them before each sweep).
#pragma once

#include <cmath>

#include "graph/ir.h"
#include "graph/passes/graph_edit.h"

namespace fusert::match {

/// Index of the node producing `v` when its op is `op`, else -1.
inline int producer(const Graph& g, ValueId v, OpKind op) {
  if (v == kNoValue) return -1;
  int p = g.value(v).producer;
  return p >= 0 && g.nodes[static_cast<size_t>(p)].op == op ? p : -1;
}

/// The one node reading `v` through one input slot, when `v` is not a graph output; else -1.
/// An intermediate of a pattern must pass this, or the rewrite would drop a value in use.
inline int sole_consumer(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return val.consumers.size() == 1 && !val.is_graph_output ? val.consumers[0] : -1;
}

/// sole_consumer() restricted to op `op`.
inline int sole_consumer(const Graph& g, ValueId v, OpKind op) {
  int c = sole_consumer(g, v);
  return c >= 0 && g.nodes[static_cast<size_t>(c)].op == op ? c : -1;
}

/// For a two-input node reading `v`: the other input (kNoValue when `v` is not one of them).
inline ValueId other_input(const Node& n, ValueId v) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == v) return n.inputs[1];
  if (n.inputs[1] == v) return n.inputs[0];
  return kNoValue;
}

/// True when `v` is a one-element f32 constant within relative tolerance `rel` of `want`.
inline bool is_scalar(const Graph& g, ValueId v, double want, double rel = 1e-5) {
  double got;
  return v != kNoValue && scalar_constant(g, v, &got) && std::fabs(got - want) <= rel * std::fabs(want);
}

}  // namespace fusert::match
