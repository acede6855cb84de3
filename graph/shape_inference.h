// Per-op shape inference, dispatched through the op table (shape_<Op> functions).
#pragma once

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

/// What a shape function sees: the node (attributes may be canonicalised in place, e.g.
/// auto_pad resolved into explicit pads, defaults sized to the input rank) and its inputs.
struct ShapeContext {
  Graph& graph;
  Node& node;
  size_t num_inputs() const { return node.inputs.size(); }
  bool has_input(size_t i) const { return i < node.inputs.size() && node.inputs[i] != kNoValue; }
  const Shape& in(size_t i) const { return graph.value(node.inputs[i]).shape; }
  DType in_dtype(size_t i) const { return graph.value(node.inputs[i]).dtype; }
  /// Constant contents of input i (an initializer with data), or nullptr.
  const Tensor* constant(size_t i) const;
  /// True if input i is computed from constants only (constant folding will fold it).
  bool constant_derived(size_t i) const;
  void set_out(size_t i, Shape s, DType t = DType::kF32);
  /// Error naming the node, its source location and the problem.
  ErrorBuilder fail() const;
  /// The same for a valid model fusert does not implement (kUnsupported: a 1-D convolution,
  /// integer arithmetic at run time, an unsupported Cast): importers report it as a skip.
  ErrorBuilder unsupported() const;
};

/// Infers one node's output shapes (its inputs' shapes known), as infer_shapes does.
Status infer_node_shapes(Graph& g, Node& n);
/// Infers every node's output shapes in order; errors name node, expected and actual shapes.
Status infer_shapes(Graph& g);

/// Numpy broadcasting of two shapes; false when incompatible.
bool broadcast_shapes(const Shape& a, const Shape& b, Shape* out);

}  // namespace fusert
