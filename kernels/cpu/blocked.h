// Kernels for 4-D activations [N, C, H, W] stored channel-blocked: [N][C/b][H][W][b], where b = 1 is
// NCHW, b = C is NHWC and b = 8 or 16 is oneDNN's nChw8c / nChw16c without padding (C % b == 0).
// Elementwise steps, BatchNormalization, GlobalAveragePool and Resize run on such buffers as they
// are, so an activation between two oneDNN convolutions keeps the layout the convolutions use
// (runtime/cpu/layout_follow.cc offers them to the layout pass).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/import_kernels.h"

namespace fusert::cpu {

/// The channel block b of `strides` (the layout pass's form, runtime/execution_plan.h
/// NativeLayout: empty = NCHW; 4 dense strides over N, C, H, W; or 5, the strides over
/// N, C/b, H, W and b) for a tensor of c channels and h x w pixels; 0 when the layout is none of
/// [N][C/b][H][W][b]. Strides of dims of size 1 are not compared.
int64_t block_of(const std::vector<int64_t>& strides, int64_t c, int64_t h, int64_t w);

/// The layout pass's strides for block b (1 <= b, c % b == 0): 4 dense strides for NCHW (b = 1)
/// and NHWC (b = c), else 5 (outer strides and b).
std::vector<int64_t> blocked_strides(int64_t b, int64_t c, int64_t h, int64_t w);

/// A 4-D shape [n, c, h, w] (each dim the output's or 1: a broadcast operand, channels 1 or
/// `channels`) as the 5-D shape of its elements in block-b order: [n, c/b, h, w, b], with c/b and
/// b both 1 where c is 1. The memory of a broadcast operand with c == 1 or h * w == 1 is the same
/// in every block order, so such operands are read as they are.
std::vector<int64_t> blocked_shape(const std::vector<int64_t>& shape4, int64_t channels, int64_t b);

/// BatchNormalization (cpu::batch_norm's formula) of x [n, c, h * w] in block b.
void batch_norm_blocked(int64_t n, int64_t c, int64_t hw, int64_t b, const float* x, const float* scale,
                        const float* bias, const float* mean, const float* var, float epsilon, float* y);

/// GlobalAveragePool of x [n, c, h * w] in block b into y [n, c] (plain): float sums over runs
/// of 64 pixels, added in double.
void global_avg_pool_blocked(int64_t n, int64_t c, int64_t hw, int64_t b, const float* x, float* y);

/// cpu::resize_2d of x [n, c, ih, iw] into y [n, c, oh, ow], both in block b.
void resize_2d_blocked(int64_t n, int64_t c, int64_t b, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                       const ResizeAxis& rows, const ResizeAxis& cols, const float* x, float* y);

}  // namespace fusert::cpu
