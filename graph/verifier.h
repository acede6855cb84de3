// Graph verifier: the invariants every stage (loader, passes, planner) must preserve.
#pragma once

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

/// Checks: every value has at most one producer; node order is topological (so the graph is
/// acyclic); every node input is a graph input, an initializer or produced earlier; input
/// counts within the op table's arity; graph outputs are produced; shapes are known.
/// Errors name the node and value.
Status verify_graph(const Graph& g);

/// Sorts nodes topologically (stable: keeps file order where possible). Errors on a cycle or on
/// an input that nothing produces, naming the node and value.
Status topo_sort(Graph& g);

}  // namespace fusert
