// CPU kernel of ONNX LRN (local response normalisation across channels, AlexNet / GoogLeNet-v1
// exports): an opaque op, one pass per channel over contiguous spatial rows.
#pragma once

#include <cstdint>

namespace fusert::cpu {

/// x, y [N, C, S] (S = the spatial dims' product): y = x / (bias + alpha / size * sum of x^2
/// over channels c - floor((size - 1) / 2) .. c + ceil((size - 1) / 2) inside [0, C))^beta.
struct LrnParams {
  int64_t n = 1, c = 1, s = 1, size = 1;
  float alpha = 1e-4f, beta = 0.75f, bias = 1.f;
};
void lrn(const LrnParams& p, const float* x, float* y);

}  // namespace fusert::cpu
