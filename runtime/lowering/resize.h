// ONNX Resize's sampling tables (coordinate_transformation_mode, nearest_mode, linear and cubic
// taps), computed once per planned shape from the node: backend-neutral, read by the CPU lowering
// (cpu::resize_2d, cpu::resize) and the CUDA one (cuda::resize_2d on the device).
#pragma once

#include <vector>

#include "graph/ir.h"
#include "kernels/common/params.h"

namespace fusert::lowering {

/// One table per dim of x (`ResizeAxis`: taps, source index and weight per output coordinate),
/// from the node's attributes and its scales (input 2) or, without them, out / in per dim.
std::vector<kern::ResizeAxis> resize_axes(const Graph& g, const Node& n);

}  // namespace fusert::lowering
