// GridSample (kernels/cpu/grid_sample.h).
#include "kernels/cpu/grid_sample.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

// One axis of length `len`: the pixel coordinate of a normalised one, the borders reflection
// uses, and the index each tap reads (-1: zero).
struct Axis {
  int64_t len;
  bool align;
  GridPadding pad;
  double lo() const { return align ? 0.0 : -0.5; }
  double hi() const { return align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5; }

  double pixel(double v) const {
    return align ? (v + 1) / 2.0 * static_cast<double>(len - 1) : ((v + 1) * static_cast<double>(len) - 1) / 2.0;
  }
  double reflect(double v) const {
    const double a = lo(), b = hi(), range = b - a;
    if (range <= 0) return a;  // one pixel, corners aligned
    if (v < a) {
      const double d = a - v, k = std::floor(d / range), r = d - k * range;
      return std::fmod(k, 2.0) == 0 ? a + r : b - r;
    }
    if (v > b) {
      const double d = v - b, k = std::floor(d / range), r = d - k * range;
      return std::fmod(k, 2.0) == 0 ? b - r : a + r;
    }
    return v;
  }
  // A coordinate outside the borders, clamped or reflected (zeros keeps it, moved no further
  // than 4 pixels out, where every tap reads 0 still, so that it converts to an index).
  double padded(double v) const {
    if (v >= lo() && v <= hi()) return v;
    if (pad == GridPadding::kBorder) return std::clamp(v, 0.0, static_cast<double>(len - 1));
    if (pad == GridPadding::kReflection) return reflect(v);
    return std::clamp(v, -4.0, static_cast<double>(len) + 4.0);
  }
  int64_t tap(int64_t i) const {
    if (i >= 0 && i < len) return i;
    if (pad == GridPadding::kZeros) return -1;
    if (pad == GridPadding::kBorder) return std::clamp<int64_t>(i, 0, len - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i))), 0, len - 1);
  }
};

// Taps of coordinate v: count, indices (-1 zero) and weights.
int taps_of(const Axis& a, GridMode mode, double v, int64_t* idx, double* wt) {
  if (mode == GridMode::kNearest) {
    idx[0] = a.tap(static_cast<int64_t>(v));  // v is whole already
    wt[0] = 1;
    return 1;
  }
  const double f = std::floor(v), r = v - f;
  const int64_t i0 = static_cast<int64_t>(f);
  if (mode == GridMode::kLinear) {
    idx[0] = a.tap(i0);
    idx[1] = a.tap(i0 + 1);
    wt[0] = 1 - r;
    wt[1] = r;
    return 2;
  }
  const double k = -0.75;
  const auto near = [k](double t) { return ((k + 2) * t - (k + 3)) * t * t + 1; };
  const auto far = [k](double t) { return ((k * t - 5 * k) * t + 8 * k) * t - 4 * k; };
  const double w[4] = {far(r + 1), near(r), near(1 - r), far(2 - r)};
  for (int t = 0; t < 4; ++t) {
    idx[t] = a.tap(i0 - 1 + t);
    wt[t] = w[t];
  }
  return 4;
}

}  // namespace

void grid_sample(const GridSampleParams& p, const float* x, const float* grid, float* y) {
  const Axis ax{p.w, p.align_corners, p.padding}, ay{p.h, p.align_corners, p.padding};
  const int64_t rows = p.n * p.oh, plane = p.h * p.w, oplane = p.oh * p.ow;
  const int team = detail::team_size(rows * p.ow * p.c * 16);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t n = row / p.oh, oy = row % p.oh;
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const float* g = grid + ((n * p.oh + oy) * p.ow + ox) * 2;
      double vx = ax.pixel(g[0]), vy = ay.pixel(g[1]);
      if (p.mode == GridMode::kNearest) {
        vx = std::nearbyint(vx);
        vy = std::nearbyint(vy);
      }
      if (!std::isfinite(vx) || !std::isfinite(vy)) {  // no pixel: NaN, as the arithmetic would give
        for (int64_t c = 0; c < p.c; ++c) y[(n * p.c + c) * oplane + oy * p.ow + ox] = std::nanf("");
        continue;
      }
      vx = ax.padded(vx);
      vy = ay.padded(vy);
      int64_t ix[4], iy[4];
      double wx[4], wy[4];
      const int tx = taps_of(ax, p.mode, vx, ix, wx), ty = taps_of(ay, p.mode, vy, iy, wy);
      for (int64_t c = 0; c < p.c; ++c) {
        const float* src = x + (n * p.c + c) * plane;
        double acc = 0;
        for (int j = 0; j < ty; ++j) {
          if (iy[j] < 0) continue;
          double r = 0;
          for (int i = 0; i < tx; ++i)
            if (ix[i] >= 0) r += wx[i] * static_cast<double>(src[iy[j] * p.w + ix[i]]);
          acc += wy[j] * r;
        }
        y[(n * p.c + c) * oplane + oy * p.ow + ox] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace fusert::cpu
