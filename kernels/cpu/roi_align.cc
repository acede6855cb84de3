// RoiAlign (kernels/cpu/roi_align.h).
#include "kernels/cpu/roi_align.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

// One bilinear sample: four positions in a plane and their weights (all 0 outside).
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  float w[4] = {0, 0, 0, 0};
};

Sample sample_at(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1, x1;
  if (y0 >= h - 1) {
    y1 = y0 = h - 1;
    y = static_cast<double>(y0);
  } else {
    y1 = y0 + 1;
  }
  if (x0 >= w - 1) {
    x1 = x0 = w - 1;
    x = static_cast<double>(x0);
  } else {
    x1 = x0 + 1;
  }
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0;
  s.pos[1] = y0 * w + x1;
  s.pos[2] = y1 * w + x0;
  s.pos[3] = y1 * w + x1;
  s.w[0] = static_cast<float>(hy * hx);
  s.w[1] = static_cast<float>(hy * lx);
  s.w[2] = static_cast<float>(ly * hx);
  s.w[3] = static_cast<float>(ly * lx);
  return s;
}

}  // namespace

void roi_align(const RoiAlignParams& p, const float* x, const float* rois, const int64_t* batch, float* y) {
  const int team = detail::team_size(p.rois * p.c * p.oh * p.ow * 16);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < p.rois; ++r) {
    const float* roi = rois + r * 4;
    const double off = p.half_pixel ? 0.5 : 0.0;
    const double x1 = roi[0] * p.scale - off, y1 = roi[1] * p.scale - off;
    double rw = roi[2] * p.scale - off - x1, rh = roi[3] * p.scale - off - y1;
    if (!p.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(p.oh), bw = rw / static_cast<double>(p.ow);
    const int64_t gh = p.sampling > 0 ? p.sampling : static_cast<int64_t>(std::ceil(rh / static_cast<double>(p.oh)));
    const int64_t gw = p.sampling > 0 ? p.sampling : static_cast<int64_t>(std::ceil(rw / static_cast<double>(p.ow)));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    std::vector<Sample> samples;
    for (int64_t ph = 0; ph < p.oh; ++ph)
      for (int64_t pw = 0; pw < p.ow; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix)
            samples.push_back(sample_at(
                y1 + static_cast<double>(ph) * bh + (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh),
                x1 + static_cast<double>(pw) * bw + (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw), p.h,
                p.w));
    const int64_t per_bin = gh * gw;
    for (int64_t c = 0; c < p.c; ++c) {
      const float* plane = x + (batch[r] * p.c + c) * p.h * p.w;
      for (int64_t b = 0; b < p.oh * p.ow; ++b) {
        double acc = 0;
        float best = 0;
        for (int64_t k = 0; k < per_bin; ++k) {
          const Sample& s = samples[static_cast<size_t>(b * per_bin + k)];
          if (p.max) {
            float v = s.w[0] * plane[s.pos[0]];
            for (int t = 1; t < 4; ++t) v = std::max(v, s.w[t] * plane[s.pos[t]]);
            best = k == 0 ? v : std::max(best, v);
          } else {
            for (int t = 0; t < 4; ++t) acc += static_cast<double>(s.w[t]) * plane[s.pos[t]];
          }
        }
        y[((r * p.c + c) * p.oh * p.ow) + b] = p.max ? best : static_cast<float>(acc / count);
      }
    }
  }
}

}  // namespace fusert::cpu
