// MaxPool with indices (kernels/cpu/max_pool_indices.h).
#include "kernels/cpu/max_pool_indices.h"

#include <cmath>

namespace fusert::cpu {

void max_pool2d_indices(const PoolParams& p, bool column_major, const float* x, float* y, int64_t* idx) {
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const float* plane = x + nc * p.h * p.w;
    for (int64_t oh = 0; oh < p.oh; ++oh) {
      for (int64_t ow = 0; ow < p.ow; ++ow) {
        float best = 0;
        int64_t at = -1;
        for (int64_t kh = 0; kh < p.kh; ++kh) {
          const int64_t h = oh * p.stride_h - p.pad_top + kh * p.dil_h;
          if (h < 0 || h >= p.h) continue;
          for (int64_t kw = 0; kw < p.kw; ++kw) {
            const int64_t w = ow * p.stride_w - p.pad_left + kw * p.dil_w;
            if (w < 0 || w >= p.w) continue;
            const float v = plane[h * p.w + w];
            const bool take = at < 0 || v > best || (std::isnan(v) && !std::isnan(best));
            if (!take) continue;
            best = v;
            at = column_major ? w * p.h + h : h * p.w + w;
          }
        }
        const int64_t o = (nc * p.oh + oh) * p.ow + ow;
        y[o] = best;
        idx[o] = nc * p.h * p.w + (at < 0 ? 0 : at);
      }
    }
  }
}

}  // namespace fusert::cpu
