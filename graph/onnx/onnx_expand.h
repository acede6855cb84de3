// ONNX nodes imported as several ONNX nodes (internal to graph/onnx): a node that fusert runs
// as a composition of ops it has, written out in ONNX and imported node by node, so that each
// part runs on its kernel and fuses as it does when a model writes it out:
//   Conv, ConvTranspose, MaxPool, AveragePool on [N, C, L]  -> the 2-D op (onnx_lift1d.h)
//   SoftmaxCrossEntropyLoss        -> LogSoftmax(axis 1) -> NegativeLogLikelihoodLoss (ONNX's
//                                     own function body); output 1 is the LogSoftmax's
//   LayerNormalization with Mean / InvStdDev outputs -> LayerNormalization for Y, and
//                                     ReduceMean, Sub, Mul, ReduceMean, Add, Sqrt, Reciprocal
//                                     over the normalised axes for the statistics
//   If (onnx_if.h)                 -> the branch a constant condition chooses, inlined; with a
//                                     run-time condition the op If (branches as models of their own)
//   Loop (onnx_loop.h)             -> unrolled: constant trip count and condition, the body's
//                                     copies in sequence, scan outputs stacked by Concat; else
//                                     the op Loop (its body a model of its own, run per iteration)
//   Scan (onnx_scan.h)             -> the Loop it is (M the scan length, slices by Gather), then
//                                     Slice (reversed outputs) or Transpose (scan_output_axes)
//   Einsum                         -> Transpose, ReduceSum, Reshape, MatMul (onnx_einsum.h)
//   QLinearConv, QLinearMatMul     -> ConvInteger / MatMulInteger, DequantizeLinear, QuantizeLinear
//                                     (onnx_qlinear.h)
//   GlobalMaxPool                  -> ReduceMax over the spatial dims
//   IsNaN, IsInf                   -> Equal (x with itself, with +-inf), Not / Or
//   MeanVarianceNormalization      -> its function body (reductions and arithmetic)
//   Add, Sub, Mul, Div, Pow, the comparisons and logic below opset 7 with `broadcast` -> the op,
//                                     B unsqueezed to align at `axis`
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
/// opset their nodes are written in (0: the model's), and pairs of values whose shapes and dtypes
/// must agree once imported (the branches of a run-time If).
struct Expansion {
  std::vector<std::pair<std::string, Tensor>> constants;
  std::vector<onnx::NodeProto> nodes;
  int64_t opset = 0;
  std::vector<std::pair<std::string, std::string>> same_shape;
};

/// Op types imported only through an expansion, and the attributes each consumes.
bool is_expanded_op(const std::string& op);
bool expanded_attr(const std::string& op, const std::string& attr, int64_t opset);
/// Ops whose opset < 7 form takes `broadcast` and `axis` (Add, Sub, Mul, Div, Pow, And, Or, Xor,
/// Equal, Greater, Less).
bool legacy_broadcast_op(const std::string& op);

/// Softmax, LogSoftmax or Hardmax below opset 13 over more than the last dim: Flatten at the
/// axis, the op over the last axis (opset 13), Reshape back (onnx_legacy_softmax.cc); nullopt
/// for the last axis or an axis out of range.
std::optional<Expansion> legacy_softmax(const Graph& g, const onnx::NodeProto& np, const std::string& name);

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
