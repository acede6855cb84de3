// Internal: the direct depthwise convolution that conv2d dispatches to (group == C == M).
#pragma once

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu::detail {

/// True when each output channel reads exactly its own input channel.
inline bool is_depthwise(const ConvParams& p) { return p.group == p.c && p.m == p.c; }

/// Same contract as conv2d, restricted to is_depthwise(p).
void depthwise_conv2d(const ConvParams& p, const float* x, const float* w, const float* bias, float* y);

}  // namespace fusert::cpu::detail
