// ONNX nodes imported as several ONNX nodes (internal to graph/onnx): a node that fusert runs
// as a composition of ops it has, written out in ONNX and imported node by node, so that each
// part runs on its kernel and fuses as it does when a model writes it out:
//   Conv, ConvTranspose, MaxPool, AveragePool on [N, C, L]  -> the 2-D op (onnx_lift1d.h)
//   SoftmaxCrossEntropyLoss        -> LogSoftmax(axis 1) -> NegativeLogLikelihoodLoss (ONNX's
//                                     own function body); output 1 is the LogSoftmax's
//   LayerNormalization with Mean / InvStdDev outputs -> LayerNormalization for Y, and
//                                     ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Reciprocal
//                                     over the normalised axes for the statistics
//   Pow of a base and exponent of different dtypes -> Casts around a Pow of one dtype
//   Dropout's mask output (inference) -> Identity for Y, a constant all-true mask of X's shape
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace fusert::onnx_import {

/// The nodes that replace one, in order, the constants they read (by value name), and the
/// opset their nodes are written in.
struct Expansion {
  std::vector<std::pair<std::string, Tensor>> constants;
  std::vector<onnx::NodeProto> nodes;
  int64_t opset = 0;
};

/// Op types imported only through an expansion, and the attributes each consumes.
bool is_expanded_op(const std::string& op);
bool expanded_attr(const std::string& op, const std::string& attr);

/// The expansion of `np` (inputs already in `g`), or nullopt when it imports as one node.
/// `name` prefixes the new nodes' and values' names; errors at `loc`.
Result<std::optional<Expansion>> expand_node(const Graph& g, const onnx::NodeProto& np, int64_t opset,
                                             const std::string& name, const SourceLoc& loc);

/// A value name not in `g` (nor taken by `e`'s constants and node outputs yet), from `base`.
std::string fresh_name(const Graph& g, const Expansion& e, const std::string& base);

/// A node of `op` on `inputs` into `outputs`, named `name`.
onnx::NodeProto make_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);

}  // namespace fusert::onnx_import
