// ONNX ops that the import folds into constants (internal to graph/onnx): Constant, Shape, Size,
// ConstantOfShape, Range, EyeLike and the window functions, and the attribute helpers the op mapping shares with them.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

#include "graph/ir.h"

namespace fusert::onnx_import {

/// The attribute `name` of `np`, or nullptr.
inline const onnx::AttributeProto* find_attr(const onnx::NodeProto& np, const std::string& name) {
  for (const auto& a : np.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

/// A 1-D i64 tensor of `v`.
inline Tensor i64_tensor(const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.i64());
  return t;
}

/// Constant's value (value, value_float(s), value_int(s); tensors decoded against `base_dir`).
Result<Tensor> constant_value(const onnx::NodeProto& np, const std::string& base_dir, const SourceLoc& loc);

/// Shape (start/end) and Size of an input of shape `x`.
Result<std::optional<Tensor>> shape_value(const Graph& g, const onnx::NodeProto& np, const Shape& x);

/// ConstantOfShape and Range on constant inputs `ins` (an error names the node when one is not).
Result<Tensor> generated_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                               const std::string& base_dir, const SourceLoc& loc);

/// EyeLike of a 2-D input (any values: only its shape and dtype count): ones on diagonal `k`,
/// in attribute `dtype`'s type or the input's (f32, i64, i32, bool).
Result<Tensor> eye_like_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                              const SourceLoc& loc);

/// HannWindow, HammingWindow, BlackmanWindow (opset 17) of a constant size: f32
/// a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
Result<Tensor> window_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                            const SourceLoc& loc);

}  // namespace fusert::onnx_import
