// Open dims of an ONNX model (internal to graph/onnx): the input dims no --shape binds and no
// --dim declares (dim_param, -1, 0 or unnamed) stay symbolic, bound from the inputs at run();
// the model is planned once at a default optimisation point found by trying common sizes.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/loader/model_loader.h"

namespace fusert::onnx_import {

/// True when dim `d` has a fixed size in the file (dim_value > 0).
bool dim_fixed(const onnx::TensorShapeProto::Dimension& d);

/// The symbol of dim `d` of graph input `in`: its dim_param, or "<input>.<d>" for an unnamed
/// one (-1, 0 or no value), so that --dim can name it too.
std::string dim_symbol(const onnx::ValueInfoProto& in, int d);

/// An open dim and the kind of sizes it is tried at.
struct OpenDim {
  SymbolicDim dim;       ///< min 1, max kMaxTensorElements, open = true
  bool leading = false;  ///< dim 0 of every input that has it (a batch): planned at 1
  bool spatial = false;  ///< dim 2 or 3 of a rank-4 input (an image's height or width)
};

/// The open dims of `gp`'s inputs (initializers excluded), once per symbol, in input order.
std::vector<OpenDim> open_dims(const onnx::GraphProto& gp, const std::map<std::string, Shape>& bindings,
                               const std::vector<SymbolicDim>& declared);

/// Attempts at an optimisation point: open_opt(o, k) for k < kOpenAttempts.
constexpr int kOpenAttempts = 11;
/// The size `o` is planned at on attempt `k`: 1 for a batch; 224, 256, ... for an image side;
/// 128, 64, ... for another dim (a sequence, a feature count).
int64_t open_opt(const OpenDim& o, int k);
/// The second size `o` is imported at (attempt `k` < 3), to find the constants that follow it.
int64_t open_probe(const OpenDim& o, int k);

}  // namespace fusert::onnx_import
