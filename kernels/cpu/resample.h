// Fast ONNX Resize for the shape exporters produce: only the last two dims resized (NCHW
// upsampling of FPN/U-Net heads, nearest or linear), threaded over output rows and vectorisable
// along them. The sampling tables (kern::ResizeAxis, kernels/common/params.h) are the lowering's,
// built once; the general any-rank reference, cpu::resize, stays the oracle for the tests.
#pragma once

#include <cstdint>

#include "kernels/cpu/import_kernels.h"

namespace fusert::cpu {

using kern::resize_axis_is_identity;

/// y [outer, oh, ow] = x [outer, ih, iw] sampled by `rows` (oh coordinates, 1 or 2 taps) and
/// `cols` (ow coordinates, 1 or 2 taps): per output element the sum over the taps of
/// row weight * column weight * x, in float (the reference accumulates in double: the two agree
/// to a few ulps). Indices must lie in [0, ih) and [0, iw) (the lowering clamps them).
void resize_2d(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const ResizeAxis& rows,
               const ResizeAxis& cols, const float* x, float* y);

}  // namespace fusert::cpu
