// Max / average / global-average pooling over NCHW planes with ONNX semantics: padded positions
// never enter a max, and the average divisor follows count_include_pad. Max pooling also of 8-bit
// (quantised) values, NCHW or NHWC.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

// Along one axis, the window of output o has taps t in [0, k) at input o*stride - pad_lo + t*dil.
// [lo, hi) are the taps inside the real input; padded counts taps inside the padded extent
// [-pad_lo, len + pad_hi), which is the window ONNX (and PyTorch) clip to under ceil_mode.
struct AxisTaps {
  int64_t start = 0, lo = 0, hi = 0, padded = 0;
};

std::vector<AxisTaps> axis_taps(int64_t out, int64_t len, int64_t k, int64_t stride, int64_t dil, int64_t pad_lo,
                                int64_t pad_hi) {
  std::vector<AxisTaps> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    AxisTaps& t = taps[o];
    t.start = o * stride - pad_lo;
    // Tap offsets are t.start + tap*dil, so "valid taps" is valid_outputs with stride dil.
    detail::valid_outputs(t.start, dil, len, k, &t.lo, &t.hi);
    int64_t p_lo = 0, p_hi = 0;
    detail::valid_outputs(t.start + pad_lo, dil, len + pad_lo + pad_hi, k, &p_lo, &p_hi);
    t.padded = p_hi - p_lo;
  }
  return taps;
}

struct PoolTaps {
  std::vector<AxisTaps> y, x;
};

PoolTaps pool_taps(const PoolParams& p) {
  return {axis_taps(p.oh, p.h, p.kh, p.stride_h, p.dil_h, p.pad_top, p.pad_bottom),
          axis_taps(p.ow, p.w, p.kw, p.stride_w, p.dil_w, p.pad_left, p.pad_right)};
}

// The larger of m and v; for floats a NaN in the window wins, because `v > m` alone would
// silently skip it.
template <typename T>
inline T max_of(T m, T v) {
  if constexpr (std::is_floating_point_v<T>) return v > m || v != v ? v : m;
  return v > m ? v : m;
}

// A window with no real input yields lowest() (as ONNX Runtime does; for 8-bit values the type's
// minimum, which is what QuantizeLinear makes of it).
template <typename T>
void max_plane(const PoolParams& p, const PoolTaps& taps, const T* x, T* y) {
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const AxisTaps& ty = taps.y[oy];
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const AxisTaps& tx = taps.x[ox];
      T m = std::numeric_limits<T>::lowest();
      for (int64_t i = ty.lo; i < ty.hi; ++i) {
        const T* row = x + (ty.start + i * p.dil_h) * p.w;
        for (int64_t j = tx.lo; j < tx.hi; ++j) m = max_of(m, row[tx.start + j * p.dil_w]);
      }
      y[oy * p.ow + ox] = m;
    }
  }
}

// An empty divisor (window wholly in padding with count_include_pad off) gives 0, not NaN.
void avg_plane(const PoolParams& p, const PoolTaps& taps, const float* x, float* y) {
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    const AxisTaps& ty = taps.y[oy];
    for (int64_t ox = 0; ox < p.ow; ++ox) {
      const AxisTaps& tx = taps.x[ox];
      float sum = 0.f;
      for (int64_t i = ty.lo; i < ty.hi; ++i) {
        const float* row = x + (ty.start + i * p.dil_h) * p.w;
        for (int64_t j = tx.lo; j < tx.hi; ++j) sum += row[tx.start + j * p.dil_w];
      }
      const int64_t count = p.count_include_pad ? ty.padded * tx.padded : (ty.hi - ty.lo) * (tx.hi - tx.lo);
      y[oy * p.ow + ox] = count > 0 ? sum / static_cast<float>(count) : 0.f;
    }
  }
}

template <typename T, class PlaneFn>
void for_each_plane(const PoolParams& p, const T* x, T* y, PlaneFn plane_fn) {
  if (p.n <= 0 || p.c <= 0 || p.oh <= 0 || p.ow <= 0) return;
  const PoolTaps taps = pool_taps(p);
  const int64_t planes = p.n * p.c;
  const int team = detail::team_size(planes * p.oh * p.ow * p.kh * p.kw);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    plane_fn(p, taps, x + i * p.h * p.w, y + i * p.oh * p.ow);
  }
}

}  // namespace

void max_pool2d(const PoolParams& p, const float* x, float* y) { for_each_plane(p, x, y, max_plane<float>); }

namespace {

// One output row oy of image xn (NHWC) into out [OW, C]: channels innermost, so the max over a
// window runs along contiguous channel vectors.
// out and the input are restrict: an 8-bit store may alias anything, which keeps the channel loop
// scalar otherwise.
template <typename T>
void max_row_nhwc(const PoolParams& p, const PoolTaps& taps, const T* xn, int64_t oy, T* __restrict out) {
  const AxisTaps& ty = taps.y[oy];
  const int64_t channels = p.c;
  for (int64_t ox = 0; ox < p.ow; ++ox, out += channels) {
    const AxisTaps& tx = taps.x[ox];
    std::fill(out, out + channels, std::numeric_limits<T>::lowest());
    for (int64_t i = ty.lo; i < ty.hi; ++i) {
      const T* row = xn + (ty.start + i * p.dil_h) * p.w * channels;
      for (int64_t j = tx.lo; j < tx.hi; ++j) {
        const T* __restrict v = row + (tx.start + j * p.dil_w) * channels;
        for (int64_t c = 0; c < channels; ++c) out[c] = max_of(out[c], v[c]);
      }
    }
  }
}

template <typename T>
void max_pool_nhwc(const PoolParams& p, const T* x, T* y) {
  if (p.n <= 0 || p.c <= 0 || p.oh <= 0 || p.ow <= 0) return;
  const PoolTaps taps = pool_taps(p);
  const int64_t rows = p.n * p.oh;
  const int team = detail::team_size(rows * p.ow * p.c * p.kh * p.kw);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    max_row_nhwc(p, taps, x + (r / p.oh) * p.h * p.w * p.c, r % p.oh, y + r * p.ow * p.c);
}

template <typename T>
void max_pool_8bit(const PoolParams& p, bool nhwc, const void* x, void* y) {
  const T* xt = static_cast<const T*>(x);
  T* yt = static_cast<T*>(y);
  if (nhwc)
    max_pool_nhwc(p, xt, yt);
  else
    for_each_plane(p, xt, yt, max_plane<T>);
}

}  // namespace

void max_pool2d_nhwc(const PoolParams& p, const float* x, float* y) { max_pool_nhwc(p, x, y); }

void max_pool2d_8bit(const PoolParams& p, bool is_signed, bool nhwc, const void* x, void* y) {
  if (is_signed)
    max_pool_8bit<int8_t>(p, nhwc, x, y);
  else
    max_pool_8bit<uint8_t>(p, nhwc, x, y);
}

void avg_pool2d(const PoolParams& p, const float* x, float* y) { for_each_plane(p, x, y, avg_plane); }

void global_avg_pool(int64_t n, int64_t c, int64_t spatial, const float* x, float* y) {
  const int64_t planes = n * c;
  if (planes <= 0) return;
  const int team = detail::team_size(planes * spatial);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    // Eigen's packet reduction keeps several partial sums, more accurate than one serial sum.
    y[i] = spatial > 0 ? Eigen::Map<const Eigen::VectorXf>(x + i * spatial, spatial).mean() : 0.f;
  }
}

}  // namespace fusert::cpu
