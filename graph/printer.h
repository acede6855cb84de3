// Human-readable text dump and Graphviz DOT export of a graph.
#pragma once

#include <string>

#include "graph/ir.h"

namespace fusert {

/// One line per input, initializer (name, shape, init kind) and node (op, inputs -> outputs
/// with shapes, non-default attributes).
std::string dump_graph(const Graph& g);
/// Graphviz DOT (digraph): nodes as boxes labelled "name\nOp", edges labelled with value shapes.
std::string graph_to_dot(const Graph& g);
std::string attr_to_string(const AttrValue& a);

}  // namespace fusert
