// Small graph-editing helpers shared by the passes.
#pragma once

#include <string>
#include <vector>

#include "graph/ir.h"

namespace fusert {

/// Removes the nodes whose index has `erase[i]` set, keeping the order of the rest, and rebuilds
/// the links. Values are left in place (dead_code drops the orphans).
void erase_nodes(Graph& g, const std::vector<bool>& erase);

/// `base` if no value has that name, else `base_2`, `base_3`, ...
std::string unique_value_name(const Graph& g, const std::string& base);

/// Adds a bound initializer holding `data` (shape and dtype from it) and returns its id.
/// `constant` marks it as model-defined (never read from a weights file).
ValueId add_initializer(Graph& g, const std::string& name, Tensor data, bool constant, const SourceLoc& loc);

/// The initializer contents of `v` when it is an initializer (not a graph input) with data
/// bound, else nullptr.
const Tensor* bound_data(const Graph& g, ValueId v);

/// bound_data() of a constant whose value is the same at every shape: nullptr too for a
/// Value::symbolic one (computed from a symbolic dim, recomputed per input shape). Pattern rules
/// read constants through this, so that no rewrite bakes in the value at the planned shape.
const Tensor* fixed_data(const Graph& g, ValueId v);

/// The single element of a one-element f32 fixed_data() constant, as double; false otherwise.
bool scalar_constant(const Graph& g, ValueId v, double* out);

/// A node of `op` with every attribute at its op-table default.
Node make_node(OpKind op, const std::string& name, const SourceLoc& loc);

}  // namespace fusert
