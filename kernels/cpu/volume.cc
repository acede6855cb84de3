// Reference loops of the volumetric ops (kernels/cpu/volume.h), parallel over (n, channel).
#include "kernels/cpu/volume.h"

#include <cmath>
#include <limits>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

// The first tap of window `o` along axis `a` and the number of taps inside [0, in).
struct Taps {
  int64_t start, lo, hi;  // position of tap 0; the taps lo..hi-1 are inside the input
};

Taps taps(const VolumeParams& p, int a, int64_t o) {
  const int64_t start = o * p.stride[a] - p.pad_begin[a];
  int64_t lo = 0, hi = p.k[a];
  while (lo < hi && start + lo * p.dil[a] < 0) ++lo;
  while (hi > lo && start + (hi - 1) * p.dil[a] >= p.in[a]) --hi;
  return {start, lo, hi};
}

int64_t plane_out(const VolumeParams& p) { return p.out[0] * p.out[1] * p.out[2]; }
int64_t plane_in(const VolumeParams& p) { return p.in[0] * p.in[1] * p.in[2]; }

}  // namespace

void conv3d_reference(const VolumeParams& p, const float* x, const float* w, const float* b, float* y) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, kvol = p.k[0] * p.k[1] * p.k[2];
  const int64_t pin = plane_in(p), pout = plane_out(p);
  const int team = detail::team_size(p.n * p.m * pout * cg * kvol);
#pragma omp parallel for num_threads(team) if (team > 1) collapse(2)
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t m = 0; m < p.m; ++m) {
      const int64_t g = m / mg;
      float* yo = y + (n * p.m + m) * pout;
      for (int64_t od = 0; od < p.out[0]; ++od) {
        const Taps td = taps(p, 0, od);
        for (int64_t oh = 0; oh < p.out[1]; ++oh) {
          const Taps th = taps(p, 1, oh);
          for (int64_t ow = 0; ow < p.out[2]; ++ow) {
            const Taps tw = taps(p, 2, ow);
            double acc = b ? b[m] : 0.0;
            for (int64_t c = 0; c < cg; ++c) {
              const float* xc = x + (n * p.c + g * cg + c) * pin;
              const float* wc = w + (m * cg + c) * kvol;
              for (int64_t kd = td.lo; kd < td.hi; ++kd) {
                const int64_t id = td.start + kd * p.dil[0];
                for (int64_t kh = th.lo; kh < th.hi; ++kh) {
                  const int64_t ih = th.start + kh * p.dil[1];
                  const float* xr = xc + (id * p.in[1] + ih) * p.in[2];
                  const float* wr = wc + (kd * p.k[1] + kh) * p.k[2];
                  for (int64_t kw = tw.lo; kw < tw.hi; ++kw) acc += double(xr[tw.start + kw * p.dil[2]]) * wr[kw];
                }
              }
            }
            yo[(od * p.out[1] + oh) * p.out[2] + ow] = static_cast<float>(acc);
          }
        }
      }
    }
  }
}

void conv_transpose3d_reference(const VolumeParams& p, const float* x, const float* w, const float* b, float* y) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, kvol = p.k[0] * p.k[1] * p.k[2];
  const int64_t pin = plane_in(p), pout = plane_out(p);
  const int team = detail::team_size(p.n * p.m * pin * cg * kvol);
#pragma omp parallel for num_threads(team) if (team > 1) collapse(2)
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t m = 0; m < p.m; ++m) {  // each output channel gathers what its taps scatter
      const int64_t g = m / mg, mi = m % mg;
      float* yo = y + (n * p.m + m) * pout;
      for (int64_t i = 0; i < pout; ++i) yo[i] = b ? b[m] : 0.0f;
      for (int64_t c = 0; c < cg; ++c) {
        const float* xc = x + (n * p.c + g * cg + c) * pin;
        const float* wc = w + ((g * cg + c) * mg + mi) * kvol;
        for (int64_t id = 0; id < p.in[0]; ++id)
          for (int64_t ih = 0; ih < p.in[1]; ++ih)
            for (int64_t iw = 0; iw < p.in[2]; ++iw) {
              const float v = xc[(id * p.in[1] + ih) * p.in[2] + iw];
              for (int64_t kd = 0; kd < p.k[0]; ++kd) {
                const int64_t od = id * p.stride[0] - p.pad_begin[0] + kd * p.dil[0];
                if (od < 0 || od >= p.out[0]) continue;
                for (int64_t kh = 0; kh < p.k[1]; ++kh) {
                  const int64_t oh = ih * p.stride[1] - p.pad_begin[1] + kh * p.dil[1];
                  if (oh < 0 || oh >= p.out[1]) continue;
                  for (int64_t kw = 0; kw < p.k[2]; ++kw) {
                    const int64_t ow = iw * p.stride[2] - p.pad_begin[2] + kw * p.dil[2];
                    if (ow < 0 || ow >= p.out[2]) continue;
                    yo[(od * p.out[1] + oh) * p.out[2] + ow] += v * wc[(kd * p.k[1] + kh) * p.k[2] + kw];
                  }
                }
              }
            }
      }
    }
  }
}

namespace {

// Pooling: `reduce(taps over x's plane, window taps td, th, tw)` into every output of every
// (n, c) plane, in parallel over the planes.
template <typename Reduce>
void pool3d(const VolumeParams& p, const float* x, float* y, Reduce reduce) {
  const int64_t pin = plane_in(p), pout = plane_out(p);
  const int team = detail::team_size(p.n * p.c * pout * p.k[0] * p.k[1] * p.k[2]);
#pragma omp parallel for num_threads(team) if (team > 1)
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const float* xc = x + nc * pin;
    float* yo = y + nc * pout;
    for (int64_t od = 0; od < p.out[0]; ++od) {
      const Taps td = taps(p, 0, od);
      for (int64_t oh = 0; oh < p.out[1]; ++oh) {
        const Taps th = taps(p, 1, oh);
        for (int64_t ow = 0; ow < p.out[2]; ++ow)
          yo[(od * p.out[1] + oh) * p.out[2] + ow] = reduce(xc, td, th, taps(p, 2, ow));
      }
    }
  }
}

// The element of plane `xc` at taps kd, kh, kw of windows td, th, tw.
inline float at(const VolumeParams& p, const float* xc, const Taps& td, const Taps& th, const Taps& tw, int64_t kd,
                int64_t kh, int64_t kw) {
  return xc[((td.start + kd * p.dil[0]) * p.in[1] + th.start + kh * p.dil[1]) * p.in[2] + tw.start + kw * p.dil[2]];
}

}  // namespace

void max_pool3d_reference(const VolumeParams& p, const float* x, float* y) {
  pool3d(p, x, y, [&p](const float* xc, const Taps& td, const Taps& th, const Taps& tw) {
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t kd = td.lo; kd < td.hi; ++kd)
      for (int64_t kh = th.lo; kh < th.hi; ++kh)
        for (int64_t kw = tw.lo; kw < tw.hi; ++kw) {
          const float v = at(p, xc, td, th, tw, kd, kh, kw);
          if (v > best || std::isnan(v)) best = v;
          if (std::isnan(best)) return best;  // NaN wins
        }
    return best;
  });
}

void avg_pool3d_reference(const VolumeParams& p, const float* x, float* y) {
  // With count_include_pad the divisor is the window clipped to the padded input.
  auto padded = [&p](int a, const Taps& t) {
    const int64_t lo = std::max<int64_t>(t.start, -p.pad_begin[a]);
    const int64_t hi = std::min<int64_t>(t.start + (p.k[a] - 1) * p.dil[a] + 1, p.in[a] + p.pad_end[a]);
    return std::max<int64_t>(0, (hi - lo + p.dil[a] - 1) / p.dil[a]);
  };
  pool3d(p, x, y, [&](const float* xc, const Taps& td, const Taps& th, const Taps& tw) {
    double sum = 0;
    for (int64_t kd = td.lo; kd < td.hi; ++kd)
      for (int64_t kh = th.lo; kh < th.hi; ++kh)
        for (int64_t kw = tw.lo; kw < tw.hi; ++kw) sum += at(p, xc, td, th, tw, kd, kh, kw);
    const int64_t count = p.count_include_pad ? padded(0, td) * padded(1, th) * padded(2, tw)
                                              : (td.hi - td.lo) * (th.hi - th.lo) * (tw.hi - tw.lo);
    return static_cast<float>(sum / static_cast<double>(std::max<int64_t>(count, 1)));
  });
}

}  // namespace fusert::cpu
