// Channel Concat of 4-D tensors whose inputs and output may each be in a layout of their own
// (NCHW, a dense channels-last layout such as NHWC, or oneDNN's unpadded channel-blocked one),
// so a Concat between oneDNN convolutions needs no reorder before or after it.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

// A layout resolved for one tensor of `c` channels: element strides over (N, C-or-C/b, H, W)
// and the channel block b (1 for a dense layout).
struct Lay {
  int64_t s[4];
  int64_t b = 1;
  int64_t at(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return n * s[0] + (c / b) * s[1] + h * s[2] + w * s[3] + c % b;
  }
};

Lay resolve(const std::vector<int64_t>& strides, int64_t c, int64_t h, int64_t w) {
  Lay l;
  if (strides.empty()) {
    l.s[0] = c * h * w;
    l.s[1] = h * w;
    l.s[2] = w;
    l.s[3] = 1;
    return l;
  }
  for (int i = 0; i < 4; ++i) l.s[i] = strides[static_cast<size_t>(i)];
  if (strides.size() == 5) l.b = strides[4];
  return l;
}

// How many channels follow one another in memory at one pixel: the block, all c where the
// channel stride is 1 (channels-last), else 1.
int64_t channel_run(const Lay& l, int64_t c) { return l.b > 1 ? l.b : (l.s[1] == 1 ? c : 1); }

bool channels_last(const Lay& l, int64_t c, int64_t w) {
  return l.b == 1 && l.s[1] == 1 && l.s[3] == c && l.s[2] == w * c;
}

// Copies input `x` (channels [0, c) in layout xl) into channels [off, off + c) of y (layout yl).
void copy_into(const int64_t nhw[3], int64_t c, int64_t c_total, int64_t off, const Lay& xl, const Lay& yl,
               const float* x, float* y) {
  const int64_t n = nhw[0], h = nhw[1], w = nhw[2];
  const int team = detail::team_size(n * c * h * w);
  if (channels_last(xl, c, w) && channels_last(yl, c_total, w) && c == c_total) {  // one run per image
    for (int64_t i = 0; i < n; ++i) {
      const float* src = x + i * xl.s[0];
      float* dst = y + i * yl.s[0];
      const int64_t len = c * h * w, parts = std::max<int64_t>(1, std::min<int64_t>(team, len >> 14));
#pragma omp parallel for num_threads(static_cast <int>(parts)) if (parts > 1) schedule(static)
      for (int64_t k = 0; k < parts; ++k) {
        const int64_t b = len * k / parts, e = len * (k + 1) / parts;
        std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
      }
    }
    return;
  }
  if (channels_last(xl, c, w) && channels_last(yl, c_total, w)) {  // one run of c floats per pixel
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t p = 0; p < n * h * w; ++p) {
      const int64_t i = p / (h * w), hw = p % (h * w);
      std::memcpy(y + i * yl.s[0] + hw * c_total + off, x + i * xl.s[0] + hw * c,
                  static_cast<size_t>(c) * sizeof(float));
    }
    return;
  }
  const bool same_blocks = xl.b == yl.b && off % yl.b == 0 && c % xl.b == 0 && xl.s[2] == yl.s[2] &&
                           xl.s[3] == yl.s[3] && xl.s[3] == xl.b && xl.s[2] == w * xl.b;
  if (same_blocks) {  // NCHW (b = 1) or blocked on both sides: one run of H * W * b per block
    const int64_t blocks = c / xl.b, run = h * w * xl.b;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t q = 0; q < n * blocks; ++q) {
      const int64_t i = q / blocks, cb = q % blocks;
      std::memcpy(y + i * yl.s[0] + (off / yl.b + cb) * yl.s[1], x + i * xl.s[0] + cb * xl.s[1],
                  static_cast<size_t>(run) * sizeof(float));
    }
    return;
  }
  // Channels that sit next to each other at one pixel on both sides (a channel block, or every
  // channel of a channels-last layout): copied run by run (nChw16c <-> NHWC: 64 bytes a run).
  const int64_t run = std::gcd(channel_run(xl, c), channel_run(yl, c_total));
  if (run >= 4 && c % run == 0 && off % run == 0) {
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t q = 0; q < n * h; ++q) {
      const int64_t i = q / h, r = q % h;
      for (int64_t j = 0; j < w; ++j)
        for (int64_t k = 0; k < c; k += run)
          std::memcpy(y + yl.at(i, off + k, r, j), x + xl.at(i, k, r, j), static_cast<size_t>(run) * sizeof(float));
    }
    return;
  }
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t q = 0; q < n * h; ++q) {  // any other pair (NCHW <-> blocked): a row of W at a time
    const int64_t i = q / h, r = q % h;
    for (int64_t k = 0; k < c; ++k) {
      const float* xs = x + xl.at(i, k, r, 0);
      float* ys = y + yl.at(i, off + k, r, 0);
      for (int64_t j = 0; j < w; ++j) ys[j * yl.s[3]] = xs[j * xl.s[3]];
    }
  }
}

// Every input and the output channels-last (NHWC), channels split across inputs: one pass over
// the pixels, each output pixel written whole from its inputs' runs in order (a pass per input
// wrote each pixel's cache lines once per input, and a call and a division per run dominated:
// DBNet's head concat at batch 8, 4 x 24 channels at 160x160, 20.8 ms).
bool concat_channels_last(const int64_t nhw[3], const std::vector<int64_t>& cs, const std::vector<const float*>& xs,
                          const std::vector<Lay>& xls, const Lay& yl, int64_t c_total, float* y) {
  const int64_t n = nhw[0], h = nhw[1], w = nhw[2];
  if (!channels_last(yl, c_total, w)) return false;
  for (size_t i = 0; i < xs.size(); ++i)
    if (!channels_last(xls[i], cs[i], w)) return false;
  const int team = detail::team_size(n * c_total * h * w);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t q = 0; q < n * h; ++q) {
    const int64_t img = q / h, r = q % h;
    float* dst = y + img * yl.s[0] + r * yl.s[2];
    for (int64_t j = 0; j < w; ++j) {
      for (size_t i = 0; i < xs.size(); ++i) {
        const float* src = xs[i] + img * xls[i].s[0] + r * xls[i].s[2] + j * cs[i];
        std::copy(src, src + cs[i], dst);
        dst += cs[i];
      }
    }
  }
  return true;
}

}  // namespace

void concat_channels(const int64_t nhw[3], const std::vector<int64_t>& cs, const std::vector<const float*>& xs,
                     const std::vector<std::vector<int64_t>>& x_layouts, const std::vector<int64_t>& y_layout,
                     float* y) {
  int64_t c_total = 0;
  for (int64_t c : cs) c_total += c;
  const Lay yl = resolve(y_layout, c_total, nhw[1], nhw[2]);
  std::vector<Lay> xls;
  for (size_t i = 0; i < xs.size(); ++i) xls.push_back(resolve(x_layouts[i], cs[i], nhw[1], nhw[2]));
  if (xs.size() > 1 && concat_channels_last(nhw, cs, xs, xls, yl, c_total, y)) return;
  int64_t off = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (cs[i] > 0 && nhw[0] * nhw[1] * nhw[2] > 0) copy_into(nhw, cs[i], c_total, off, xls[i], yl, xs[i], y);
    off += cs[i];
  }
}

}  // namespace fusert::cpu
