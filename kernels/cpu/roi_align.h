// CPU kernel of ONNX RoiAlign (Mask R-CNN style detectors): an opaque op, one pass over the
// output bins, threaded over the regions.
#pragma once

#include <cstdint>

namespace fusert::cpu {

/// x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in input coordinates before spatial_scale),
/// batch [R] (i64, in [0, N)), y [R, C, OH, OW]. Each bin averages (or, max: takes the largest
/// weighted corner of) sampling_ratio^2 bilinear samples (adaptive: ceil(roi size / bins) per
/// axis when 0); half_pixel shifts coordinates by -0.5 (opset 16), output_half_pixel does not and
/// makes every region at least 1x1 (opset 10). As ONNX Runtime computes it: a sample more than
/// one pixel outside the image is 0.
struct RoiAlignParams {
  int64_t n = 1, c = 1, h = 1, w = 1, rois = 1, oh = 1, ow = 1, sampling = 0;
  float scale = 1.f;
  bool max = false, half_pixel = true;
};
void roi_align(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch, float* y);

}  // namespace fusert::cpu
