// CPU kernel of ONNX MaxPool with its Indices output (SegNet-style encoders that feed MaxUnpool):
// a reference loop over the windows, opaque, used only when a model asks for the indices.
#pragma once

#include <cstdint>

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {

/// max_pool2d (NCHW, the same windows, a NaN in a window wins), and idx[n, c, oh, ow] = the
/// flattened index of the maximum in x (padding never chosen; the first maximum in row-major
/// window order): ((n * C + c) * H + h) * W + w, or with column_major (storage_order 1)
/// (n * C + c) * H * W + w * H + h.
void max_pool2d_indices(const PoolParams& p, bool column_major, const float* x, float* y, int64_t* idx);

}  // namespace fusert::cpu
