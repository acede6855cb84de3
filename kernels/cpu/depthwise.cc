// Direct depthwise convolution (one KHxKW filter per channel). im2col would copy every input
// KH*KW times to feed a single-row GEMM, so a per-plane accumulation loop is much cheaper.
#include "kernels/cpu/depthwise.h"

#include <algorithm>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu::detail {

// One output plane: each (ky, kx) tap adds weight * shifted input row to the output row, over
// the output columns whose tap lands inside the input (the rest read padding, i.e. zero).
void depthwise_plane(const ConvParams& p, const float* x, const float* w, float bias, float* y) {
  std::fill(y, y + p.oh * p.ow, bias);
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    float* y_row = y + oy * p.ow;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      const float* x_row = x + iy * p.w;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        const float wv = w[ky * p.kw + kx];
        const int64_t x_off = kx * p.dil_w - p.pad_left;
        int64_t lo = 0, hi = 0;
        valid_outputs(x_off, p.stride_w, p.w, p.ow, &lo, &hi);
        if (p.stride_w == 1) {
          for (int64_t ox = lo; ox < hi; ++ox) y_row[ox] += wv * x_row[ox + x_off];
        } else {
          for (int64_t ox = lo; ox < hi; ++ox) y_row[ox] += wv * x_row[ox * p.stride_w + x_off];
        }
      }
    }
  }
}

void depthwise_conv2d(const ConvParams& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t planes = p.n * p.c;
  const int team = team_size(planes * p.oh * p.ow * p.kh * p.kw);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    const int64_t ch = i % p.c;
    depthwise_plane(p, x + i * p.h * p.w, w + ch * p.kh * p.kw, bias ? bias[ch] : 0.f, y + i * p.oh * p.ow);
  }
}

}  // namespace fusert::cpu::detail
