// ONNX If imported inline (internal to graph/onnx; a case of onnx_expand.h): the branches are
// subgraphs that read the outer graph's values by name. A constant condition inlines the branch
// it chooses; a condition known only at run time makes the op If, run between execution stages:
// only the branch the condition takes runs, as a session of its own (runtime/staged.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_subgraph.h"

namespace fusert::onnx_import {

/// The expansion of If `np` (its condition already in `g`): every value a branch computes renamed
/// under "<name>/then/" or "<name>/else/", a branch's initializers as Constant nodes, nested
/// graphs' references renamed too. Errors at `loc`: kParseError (a branch missing, output counts
/// that differ), kShapeMismatch (a condition that is not one bool).
Result<Expansion> if_inlined(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc,
                             int64_t opset);

/// A run-time If as the op If run between execution stages (runtime/staged.h): each branch a
/// serialized ONNX model (opset `opset`) whose inputs are the outer values it reads (outer
/// constants its initializers), the node's inputs the condition and those values, its outputs'
/// shapes and dtypes those of the branches at the current shapes (attributes then_model,
/// else_model, out_ranks, out_dims, out_dtypes). A branch without valid shapes here is left to
/// fail when a run takes it. Errors: neither branch valid; the branches' shapes differ.
Result<onnx::NodeProto> if_between_stages(const Graph& g, const onnx::NodeProto& np, const onnx::GraphProto& tg,
                                          const onnx::GraphProto& eg, const std::string& name, const SourceLoc& loc,
                                          int64_t opset);

}  // namespace fusert::onnx_import
