// 1-D convolutions and pooling (internal to graph/onnx): a Conv, ConvTranspose, MaxPool or
// AveragePool whose input is [N, C, L] imports as the 2-D op on [N, C, 1, L], between two
// Reshapes, so it runs on the 2-D kernels (oneDNN, the fused conv kernels) and fuses as they do.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"
#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// Whether `np` is one of those ops on a rank-3 input (input 0 already in `g`).
bool is_1d_spatial(const Graph& g, const onnx::NodeProto& np);

/// The nodes that replace it, in order, and the constants they read:
///   Reshape(x, [0, 0, 1, -1]) -> [N, C, 1, L]; the weight (input 1 of Conv and ConvTranspose)
///   reshaped the same way (folded at import when it is a constant); the 2-D op with kernel_shape,
///   strides, dilations, pads, output_padding and output_shape given a leading H entry (1, 1, 1,
///   0, 0 and 1); Reshape(y, [0, 0, -1]) into the node's output. `name` prefixes the new names.
/// Errors (at `loc`): a weight that is not rank 3 or has an empty dim, a spatial attribute with
/// another number of values than a 1-D op takes (pads 2, the others 1).
Result<Expansion> lift_1d(const Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name,
                          const SourceLoc& loc);

}  // namespace fusert::onnx_import
