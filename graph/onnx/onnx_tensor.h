// ONNX TensorProto <-> fusert Tensor (internal to graph/onnx).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/base/tensor.h"

namespace fusert::onnx_import {

/// Decodes `t` (raw_data or the typed fields, or external data relative to `base_dir`).
/// `what` names it in errors ("initializer 'conv1.weight'").
Result<Tensor> decode_tensor(const onnx::TensorProto& t, const std::string& base_dir, const std::string& what);
/// "float", "int64", ... for errors.
const char* elem_type_name(int elem_type);
/// fusert's dtype for an ONNX elem_type; false when fusert has none.
bool dtype_of(int elem_type, DType* out);

}  // namespace fusert::onnx_import
