// CPU kernel of ONNX GridSample on 2-D images (opset 16's bilinear / nearest / bicubic, opset 20's
// linear / nearest / cubic): an opaque op, one pass over the output pixels, threaded over rows.
#pragma once

#include <cstdint>

namespace fusert::cpu {

enum class GridMode { kNearest, kLinear, kCubic };
enum class GridPadding { kZeros, kBorder, kReflection };

/// x [N, C, H, W], grid [N, OH, OW, 2] (the (x, y) of each output pixel, normalised to [-1, 1]:
/// -1 the left / top edge, 1 the right / bottom, at pixel centres when align_corners), y [N, C,
/// OH, OW]. A coordinate outside the image is clamped (border) or reflected (reflection) first;
/// each tap then reads 0 outside the image (zeros), the nearest edge pixel (border) or its
/// reflection. Nearest rounds half to even; cubic is Keys' with a = -0.75, as ONNX's reference
/// and PyTorch's grid_sample. A NaN or infinite grid coordinate gives NaN.
struct GridSampleParams {
  int64_t n = 1, c = 1, h = 1, w = 1, oh = 1, ow = 1;
  GridMode mode = GridMode::kLinear;
  GridPadding padding = GridPadding::kZeros;
  bool align_corners = false;
};
void grid_sample(const GridSampleParams& p, const float* x, const float* grid, float* y);

}  // namespace fusert::cpu
