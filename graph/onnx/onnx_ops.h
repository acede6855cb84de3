// ONNX nodes onto fusert's op table (internal to graph/onnx): which op types and attributes
// are supported, and the rewrites of spellings that differ across opsets or that fusert
// expresses otherwise (Squeeze as Reshape, attribute axes as constant inputs, ...).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <set>
#include <string>

#include "graph/ir.h"
#include "graph/onnx/onnx_rules.h"

namespace fusert::onnx_import {

/// ONNX op types imported as the fusert op of the same name (the rules of onnx_rules.h may still
/// change what one becomes; rewritten_ops() and consumed_attr() are there).
const std::set<std::string>& direct_ops();

/// One error (kUnsupported) listing every unsupported op type (count, first node names) and
/// every unsupported attribute of `g`; ok when there is none. `f64_as_f32`: a CastLike to a
/// float64 initializer is a Cast to float32.
Status check_supported(const onnx::GraphProto& g, int64_t opset, const std::string& path, bool f64_as_f32 = false);

/// A node as fusert has it, or the constant it computes (Constant, Shape, Size).
struct Mapped {
  Node node;
  std::optional<Tensor> constant;
};

/// Maps `np` (its inputs already in `g`, shapes inferred). Constant inputs the rewrite needs
/// (axes, a Reshape target) are added to `g` as constants named after the node.
Status map_node(Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name, const SourceLoc& loc,
                const std::string& base_dir, Mapped* out);

}  // namespace fusert::onnx_import
