// ONNX subgraphs (internal to graph/onnx): the branches of If and the body of Loop, which read
// the outer graph's values by name. A subgraph is either inlined into the outer graph (a
// constant condition, an unrolled loop) or made a model of its own that a session runs between
// execution stages (a run-time If's branch, a run-time Loop's body; runtime/staged.h).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The nodes of subgraph `gp` (an If branch, a Loop body) inlined into `e`: its initializers as
/// Constant nodes, every value it computes renamed under `prefix`, its graph inputs and any
/// outer value named in `names` read as the value named there (references to other outer values
/// kept); nested graphs' references renamed too. Returns its outputs' names as inlined.
std::vector<std::string> inline_graph(const Graph& g, const onnx::GraphProto& gp, const std::string& prefix,
                                      Expansion* e, std::map<std::string, std::string> names = {});

/// Renames the values node `n` (and the graphs nested in it) reads to those `names` maps them to.
void rename_reads(onnx::NodeProto* n, const std::map<std::string, std::string>& names);

/// The names subgraph `gp` (and the graphs nested in it) reads from outside, in order of first
/// use, appended to `out` unless already in `seen`.
void subgraph_reads(const onnx::GraphProto& gp, std::vector<std::string>* out, std::set<std::string>* seen);

/// The ONNX elem_type of `t` (FLOAT for f32 and anything else).
int onnx_elem_type(DType t);

/// Subgraph `gp` as a serialized ModelProto of opset `opset` named `name`: gp's own inputs as
/// they are, then each value of `outer` (values of `g`) as an input with every dim symbolic
/// ("<value>.<d>"), or, when a constant, as an initializer.
std::string subgraph_model(const Graph& g, const onnx::GraphProto& gp, const std::vector<std::string>& outer,
                           int64_t opset, const std::string& name);

/// The shapes of the values of `outer` that are not constants (the inputs subgraph_model adds).
std::map<std::string, Shape> outer_shapes(const Graph& g, const std::vector<std::string>& outer);

/// The outputs' shapes and dtypes of subgraph model `bytes` at input shapes `shapes` (every
/// input named); `where` names it in errors; `data_dependent` (optional): set when they follow a
/// count of a data-dependent op inside (then they are shapes at that op's planning count).
/// Errors: those of importing it there.
Result<std::vector<std::pair<Shape, DType>>> subgraph_outputs(const std::string& bytes,
                                                              const std::map<std::string, Shape>& shapes,
                                                              const std::string& where, bool* data_dependent = nullptr);

}  // namespace fusert::onnx_import
