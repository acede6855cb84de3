// An ONNX model file and its graph inputs (internal to graph/onnx; onnx_model_file.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "graph/base/status.h"
#include "graph/base/tensor.h"

namespace fusert::onnx_import {

/// The ModelProto at `path`. Errors: kNotFound, kParseError (not a protobuf ModelProto, no graph).
Result<onnx::ModelProto> parse_model(const std::string& path);

/// The default domain's opset (1..21). Errors: kUnsupported (none for the default domain, or out
/// of range).
Result<int64_t> default_opset(const onnx::ModelProto& m, const std::string& path);

/// A graph input's shape: its dims, symbolic ones bound from `bindings` (--shape) or, leading,
/// 1. Errors: kInvalidArgument (a binding of the wrong rank or against a fixed dim, a symbolic
/// dim without a binding, no shape).
Result<Shape> input_shape(const onnx::ValueInfoProto& in, const std::map<std::string, Shape>& bindings,
                          const std::string& path);

}  // namespace fusert::onnx_import
