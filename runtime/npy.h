// NumPy .npy tensors: inputs and outputs of infer, goldens of the tests.
#pragma once

#include <string>

#include "graph/base/tensor.h"

namespace fusert {

/// Reads a NumPy .npy file (v1/v2/v3, little-endian '<f4', '<f8' converted to f32, '<i8', '<i4',
/// C order). Errors name the file and the problem (truncated, fortran order, dtype).
Result<Tensor> read_npy(const std::string& path);
/// Writes a .npy (v1.0, C order).
Status write_npy(const std::string& path, const Tensor& t);

}  // namespace fusert
