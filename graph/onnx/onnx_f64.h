// Float64 models run in float32 (internal to graph/onnx; load_onnx's f64_as_f32): the node
// attributes that name float64 as a target type (Cast's and EyeLike's), rewritten to float32.
// Float64 tensors (initializers, Constant values) decode to float32 anyway.
#pragma once

#include <onnx/onnx_pb.h>

namespace fusert::onnx_import {

/// Whether `np` names float64 as a target type (Cast to, EyeLike dtype), itself or in a subgraph.
bool names_f64(const onnx::NodeProto& np);

/// `np` with those targets float32 (in its subgraphs too).
onnx::NodeProto f64_as_f32(onnx::NodeProto np);

}  // namespace fusert::onnx_import
