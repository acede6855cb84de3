// The launch shape of the nvcc element-wise kernels (layout.cu, logic.cu, nary.cu, reduce.cu): 256
// threads a block and at most 8192 blocks, a grid-stride loop covering the rest.
#pragma once

#include <cstdint>

namespace fusert::cuda::grid {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

/// Blocks for `count` elements of one thread each.
inline int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<int>(b < kMaxBlocks ? b : kMaxBlocks);
}

}  // namespace fusert::cuda::grid
