// ONNX If imported inline (internal to graph/onnx; a case of onnx_expand.h): the branches are
// subgraphs that read the outer graph's values by name. A constant condition inlines the branch
// it chooses; a condition known only at run time inlines both and selects each output with Where
// (both branches run: they have no side effects; their outputs must agree in shape and dtype,
// which the import checks through Expansion::same_shape).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The nodes of subgraph `gp` (an If branch, a Loop body) inlined into `e`: its initializers as
/// Constant nodes, every value it computes renamed under `prefix`, its graph inputs and any
/// outer value named in `names` read as the value named there (references to other outer values
/// kept); nested graphs' references renamed too. Returns its outputs' names as inlined.
std::vector<std::string> inline_graph(const Graph& g, const onnx::GraphProto& gp, const std::string& prefix,
                                      Expansion* e, std::map<std::string, std::string> names = {});

/// The expansion of If `np` (its condition already in `g`): every value a branch computes renamed
/// under "<name>/then/" or "<name>/else/", a branch's initializers as Constant nodes, nested
/// graphs' references renamed too. Errors at `loc`: kParseError (a branch missing, output counts
/// that differ), kShapeMismatch (a condition that is not one bool).
Result<Expansion> if_inlined(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc);

}  // namespace fusert::onnx_import
