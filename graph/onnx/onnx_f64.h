// Float64 models run in float32 (internal to graph/onnx; load_onnx's f64_as_f32): the node
// attributes that name float64 as a target type (Cast's and EyeLike's), rewritten to float32.
// Float64 tensors (initializers, Constant values) decode to float32 anyway.
#pragma once

#include <onnx/onnx_pb.h>

namespace fusert::onnx_import {

/// Rewrites the float64 targets of `np` (Cast to, EyeLike dtype; in its subgraphs too, with their
/// float64 inputs) to float32; whether there was one.
bool f64_as_f32(onnx::NodeProto* np);

}  // namespace fusert::onnx_import
