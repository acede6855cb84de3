// kernels/cpu/blocked.h: the block order [N][C/b][H][W][b] read directly. Each kernel keeps the
// formula and the operation order of its NCHW counterpart (norm.cc, pool.cc, resample.cc), so
// the same inputs give the same values in every layout; GlobalAveragePool alone sums in its own
// order (runs of 64 pixels in float, those in double), within float rounding of Eigen's mean.
#include "kernels/cpu/blocked.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/resample.h"

namespace fusert::cpu {
namespace {

// Whether `strides` equals `want` on every dim whose size is above 1 (dims: N, C or C/b, H, W).
bool same_strides(const std::vector<int64_t>& strides, const int64_t want[4], const int64_t sizes[4]) {
  for (int i = 0; i < 4; ++i)
    if (sizes[i] > 1 && strides[static_cast<size_t>(i)] != want[i]) return false;
  return true;
}

// One output row of a Resize in block b: each output pixel's b channels from one source pixel
// (nearest) or the weighted taps, in resize_2d's order (columns first, then rows).
void resize_row_blocked(int64_t b, int64_t iw, int64_t ow, const ResizeAxis& rows, const ResizeAxis& cols, int64_t r,
                        const float* plane, float* out) {
  for (int64_t o = 0; o < ow; ++o) {
    float* d = out + o * b;
    for (int tr = 0; tr < rows.taps; ++tr) {
      const size_t er = static_cast<size_t>(r * rows.taps + tr);
      const float a = rows.taps == 1 ? 1.0f : rows.weight[er];
      const float* src = plane + rows.index[er] * iw * b;
      if (cols.taps == 1) {
        const float* s = src + cols.index[static_cast<size_t>(o)] * b;
        if (tr == 0 && a == 1.0f) {
          std::memcpy(d, s, static_cast<size_t>(b) * sizeof(float));
        } else if (tr == 0) {
          for (int64_t j = 0; j < b; ++j) d[j] = a * s[j];
        } else {
          for (int64_t j = 0; j < b; ++j) d[j] += a * s[j];
        }
        continue;
      }
      if (cols.taps != 2) {  // cubic: 4 taps, in order
        const size_t t = static_cast<size_t>(cols.taps), ec = t * static_cast<size_t>(o);
        for (int64_t j = 0; j < b; ++j) {
          float v = cols.weight[ec] * src[cols.index[ec] * b + j];
          for (size_t k = 1; k < t; ++k) v += cols.weight[ec + k] * src[cols.index[ec + k] * b + j];
          d[j] = tr == 0 ? (a == 1.0f ? v : a * v) : d[j] + a * v;
        }
        continue;
      }
      const size_t ec = static_cast<size_t>(2 * o);
      const float w0 = cols.weight[ec], w1 = cols.weight[ec + 1];
      const float* s0 = src + cols.index[ec] * b;
      const float* s1 = src + cols.index[ec + 1] * b;
      for (int64_t j = 0; j < b; ++j) {
        const float v = w0 * s0[j] + w1 * s1[j];
        d[j] = tr == 0 ? (a == 1.0f ? v : a * v) : d[j] + a * v;
      }
    }
  }
}

}  // namespace

int64_t block_of(const std::vector<int64_t>& strides, int64_t c, int64_t h, int64_t w) {
  if (strides.empty()) return 1;
  const int64_t chw = c * h * w, hw = h * w;
  if (strides.size() == 4) {
    const int64_t sizes[4] = {2, c, h, w};  // N: its stride is always C * H * W here
    const int64_t nchw[4] = {chw, hw, w, 1}, nhwc[4] = {chw, 1, w * c, c};
    if (same_strides(strides, nchw, sizes)) return 1;
    if (same_strides(strides, nhwc, sizes)) return c;
    return 0;
  }
  if (strides.size() != 5) return 0;
  const int64_t b = strides[4];
  if (b < 1 || c % b != 0) return 0;
  const int64_t sizes[4] = {2, c / b, h, w};
  const int64_t want[4] = {chw, hw * b, w * b, b};
  return same_strides(strides, want, sizes) ? b : 0;
}

std::vector<int64_t> blocked_strides(int64_t b, int64_t c, int64_t h, int64_t w) {
  const int64_t chw = c * h * w;
  if (b == 1) return {chw, h * w, w, 1};
  if (b == c) return {chw, 1, w * c, c};
  return {chw, h * w * b, w * b, b, b};
}

std::vector<int64_t> blocked_shape(const std::vector<int64_t>& shape4, int64_t channels, int64_t b) {
  const int64_t c = shape4[1];
  if (c == 1 || b == 1) return {shape4[0], c, shape4[2], shape4[3], 1};
  return {shape4[0], channels / b, shape4[2], shape4[3], b};
}

void batch_norm_blocked(int64_t n, int64_t c, int64_t hw, int64_t b, const float* x, const float* scale,
                        const float* bias, const float* mean, const float* var, float epsilon, float* y) {
  if (b == 1) return batch_norm(n, c, hw, x, scale, bias, mean, var, epsilon, y);
  if (n <= 0 || c <= 0 || hw <= 0) return;
  std::vector<float> mul(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) mul[static_cast<size_t>(ch)] = scale[ch] / std::sqrt(var[ch] + epsilon);
  const int64_t cb = c / b, pixels = n * cb * hw;
  const int team = detail::team_size(pixels * b);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t p = 0; p < pixels; ++p) {
    const int64_t ch0 = ((p / hw) % cb) * b;
    const float* src = x + p * b;
    float* dst = y + p * b;
    const float *m = mean + ch0, *s = mul.data() + ch0, *t = bias + ch0;
    for (int64_t j = 0; j < b; ++j) dst[j] = (src[j] - m[j]) * s[j] + t[j];
  }
}

void global_avg_pool_blocked(int64_t n, int64_t c, int64_t hw, int64_t b, const float* x, float* y) {
  if (b == 1) return global_avg_pool(n, c, hw, x, y);
  if (n <= 0 || c <= 0) return;
  constexpr int64_t kChunk = 64;  // channels summed together, a slice of one block
  constexpr int64_t kRun = 64;    // pixels summed in float before the double total
  const int64_t cb = c / b, chunks = (b + kChunk - 1) / kChunk, items = n * cb * chunks;
  const int team = detail::team_size(n * c * hw);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t item = 0; item < items; ++item) {
    const int64_t block = item / chunks, c0 = (item % chunks) * kChunk, len = std::min(kChunk, b - c0);
    const float* base = x + block * hw * b + c0;
    double acc[kChunk] = {};
    for (int64_t p0 = 0; p0 < hw; p0 += kRun) {  // float sums over runs of pixels, then double
      float run[kChunk] = {};
      for (int64_t p = p0; p < std::min(hw, p0 + kRun); ++p)
        for (int64_t j = 0; j < len; ++j) run[j] += base[p * b + j];
      for (int64_t j = 0; j < len; ++j) acc[j] += run[j];
    }
    const int64_t i = block / cb, ch0 = (block % cb) * b + c0;
    for (int64_t j = 0; j < len; ++j)
      y[i * c + ch0 + j] = hw > 0 ? static_cast<float>(acc[j] / static_cast<double>(hw)) : 0.0f;
  }
}

void resize_2d_blocked(int64_t n, int64_t c, int64_t b, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                       const ResizeAxis& rows, const ResizeAxis& cols, const float* x, float* y) {
  if (b == 1) return resize_2d(n * c, ih, iw, oh, ow, rows, cols, x, y);
  const int64_t planes = n * (c / b), total_rows = planes * oh;
  const int team = detail::team_size(total_rows * ow * b * (rows.taps + cols.taps));
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t k = 0; k < total_rows; ++k) {
    const int64_t p = k / oh, r = k % oh;
    resize_row_blocked(b, iw, ow, rows, cols, r, x + p * ih * iw * b, y + k * ow * b);
  }
}

}  // namespace fusert::cpu
