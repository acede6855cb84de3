// Internal: the direct depthwise convolution that conv2d dispatches to (group == C == M).
#pragma once

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu::detail {

/// True when each output channel reads exactly its own input channel.
inline bool is_depthwise(const ConvParams& p) { return p.group == p.c && p.m == p.c; }

/// One output plane of channel c: x is that channel's [H, W] input, w its [KH, KW] filter,
/// y the [OH, OW] output, initialised to `bias`. Single-threaded (callers thread over planes).
void depthwise_plane(const ConvParams& p, const float* x, const float* w, float bias, float* y);

/// Same contract as conv2d, restricted to is_depthwise(p).
void depthwise_conv2d(const ConvParams& p, const float* x, const float* w, const float* bias, float* y);

}  // namespace fusert::cpu::detail
