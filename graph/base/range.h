// ONNX Range (opset 11) on host tensors: ceil((limit - start) / delta) elements start + i * delta,
// shared by the import (folded where its inputs are constants) and the host op run between
// execution stages where they are known at run time only (runtime/staged.h).
#pragma once

#include <string>

#include "graph/base/status.h"
#include "graph/base/tensor.h"

namespace fusert {

/// The elements of Range(start, limit, delta): one-element tensors of one dtype (f32, i32, i64);
/// f32 values accumulate in f32 as ONNX's reference does. Errors name `where`: kParseError
/// (not scalars of one dtype), kUnsupported (another dtype; more than 16 Mi elements),
/// kInvalidArgument (delta 0, a non-finite bound).
Result<Tensor> range_tensor(const Tensor& start, const Tensor& limit, const Tensor& delta, const std::string& where);

}  // namespace fusert
