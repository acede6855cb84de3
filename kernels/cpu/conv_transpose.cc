// kernels/cpu/conv_transpose.h: GEMM per band of input rows, then col2im into the output.
#include "kernels/cpu/conv_transpose.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/eigen_maps.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

using detail::ConstMatrixMap;
using detail::MatrixMap;

// Adds cols [Mg, KH, KW, rows, W] (input rows [r0, r0 + rows)) into the group's output planes
// y [Mg, OH, OW]. Each output channel is one thread's: channels never share a pixel.
void col2im(const ConvTransposeParams& p, int64_t mg, int64_t r0, int64_t rows, const float* cols, float* y) {
  const int64_t band = rows * p.w, k = p.kh * p.kw;
  const int team = detail::team_size(mg * k * band);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t m = 0; m < mg; ++m) {
    float* yp = y + m * p.oh * p.ow;
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      for (int64_t kw = 0; kw < p.kw; ++kw) {
        const float* cp = cols + ((m * p.kh + kh) * p.kw + kw) * band;
        // input columns iw whose output column iw * sw - pl + kw * dw lies in [0, OW)
        int64_t lo = 0, hi = 0;
        detail::valid_outputs(kw * p.dw - p.pl, p.sw, p.ow, p.w, &lo, &hi);
        for (int64_t i = 0; i < rows; ++i) {
          const int64_t oh = (r0 + i) * p.sh - p.pt + kh * p.dh;
          if (oh < 0 || oh >= p.oh) continue;
          const int64_t base = oh * p.ow + kw * p.dw - p.pl;  // output index of input column 0 (may be < 0)
          const float* cr = cp + i * p.w;
          for (int64_t iw = lo; iw < hi; ++iw) yp[base + iw * p.sw] += cr[iw];
        }
      }
    }
  }
}

// Whether every output pixel receives exactly one tap: kernel == stride, no dilation, no pads
// and no output padding (U-Net and DBNet heads' 2x2 stride-2 upsampling). The output is then
// written once, bias included, instead of filled and accumulated into.
bool tiles_exactly(const ConvTransposeParams& p) {
  return p.kh == p.sh && p.kw == p.sw && p.dh == 1 && p.dw == 1 && p.pt == 0 && p.pl == 0 && p.oh == p.h * p.sh &&
         p.ow == p.w * p.sw;
}

// tiles_exactly's case of col2im: y[m, (r0 + i) * SH + kh, iw * SW + kw] = cols[m, kh, kw, i, iw]
// + bias[m], each output row written left to right.
void col2im_tiles(const ConvTransposeParams& p, int64_t mg, int64_t r0, int64_t rows, const float* cols,
                  const float* bias, float* y) {
  const int64_t band = rows * p.w;
  const int team = detail::team_size(mg * p.kh * p.kw * band);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t m = 0; m < mg; ++m) {
    const float b = bias ? bias[m] : 0.0f;
    for (int64_t kh = 0; kh < p.kh; ++kh) {
      for (int64_t i = 0; i < rows; ++i) {
        float* out = y + (m * p.oh + (r0 + i) * p.sh + kh) * p.ow;
        const float* c0 = cols + (m * p.kh + kh) * p.kw * band + i * p.w;  // kw = 0; kw adds kw * band
        if (p.sw == 2) {
          const float* c1 = c0 + band;
          for (int64_t iw = 0; iw < p.w; ++iw) {
            out[2 * iw] = c0[iw] + b;
            out[2 * iw + 1] = c1[iw] + b;
          }
          continue;
        }
        for (int64_t iw = 0; iw < p.w; ++iw)
          for (int64_t kw = 0; kw < p.kw; ++kw) out[iw * p.sw + kw] = c0[kw * band + iw] + b;
      }
    }
  }
}

// The 2x2 stride-2 case of tiles_exactly with one group (the upsampling of U-Net and DBNet
// heads), direct: output rows 2i and 2i + 1 of every channel from input row i, whose C rows stay
// in L1 while every output channel reads them. y[m, 2i + kh, 2j + kw] = bias[m] + sum_c
// w[c, m, kh, kw] x[c, i, j], summed over c in order; kV vectors of 8 columns at a time.
#if defined(__AVX2__) && defined(__FMA__)
template <int kV>
void tiles_2x2_block(const ConvTransposeParams& p, int64_t out_plane, const float* x, const float* w, const float* bias,
                     float* y0, float* y1, int64_t j) {
  const int64_t in_plane = p.h * p.w;
  for (int64_t m = 0; m < p.m; ++m) {
    __m256 acc[4][kV];
    const __m256 b = _mm256_set1_ps(bias ? bias[m] : 0.0f);
    for (auto& q : acc)
      for (__m256& a : q) a = b;
    for (int64_t c = 0; c < p.c; ++c) {
      const float* xc = x + c * in_plane + j;
      __m256 xv[kV];
      for (int v = 0; v < kV; ++v) xv[v] = _mm256_loadu_ps(xc + 8 * v);
      const float* wc = w + (c * p.m + m) * 4;  // w[c, m, kh, kw]: (kh, kw) = q
      for (int q = 0; q < 4; ++q) {
        const __m256 wq = _mm256_broadcast_ss(wc + q);
        for (int v = 0; v < kV; ++v) acc[q][v] = _mm256_fmadd_ps(wq, xv[v], acc[q][v]);
      }
    }
    for (int kh = 0; kh < 2; ++kh) {
      float* row = (kh ? y1 : y0) + m * out_plane + 2 * j;
      for (int v = 0; v < kV; ++v) {  // interleave kw = 0 and 1: a0 b0 a1 b1 ...
        const __m256 lo = _mm256_unpacklo_ps(acc[2 * kh][v], acc[2 * kh + 1][v]);
        const __m256 hi = _mm256_unpackhi_ps(acc[2 * kh][v], acc[2 * kh + 1][v]);
        _mm256_storeu_ps(row + 16 * v, _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps(row + 16 * v + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
      }
    }
  }
}
#endif

// Input row i of one image (x: its channel 0 row i, channel c at c * H * W; y0, y1: output rows
// 2i, 2i + 1 of channel 0, channel m at m * out_plane).
void tiles_2x2_row(const ConvTransposeParams& p, int64_t out_plane, const float* x, const float* w, const float* bias,
                   float* y0, float* y1) {
  int64_t j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; j + 24 <= p.w; j += 24) tiles_2x2_block<3>(p, out_plane, x, w, bias, y0, y1, j);
  for (; j + 8 <= p.w; j += 8) tiles_2x2_block<1>(p, out_plane, x, w, bias, y0, y1, j);
#endif
  const int64_t in_plane = p.h * p.w;
  for (; j < p.w; ++j) {
    for (int64_t m = 0; m < p.m; ++m) {
      float acc[4];
      std::fill(acc, acc + 4, bias ? bias[m] : 0.0f);
      for (int64_t c = 0; c < p.c; ++c)
        for (int q = 0; q < 4; ++q) acc[q] += w[(c * p.m + m) * 4 + q] * x[c * in_plane + j];
      for (int kw = 0; kw < 2; ++kw) {
        y0[m * out_plane + 2 * j + kw] = acc[kw];
        y1[m * out_plane + 2 * j + kw] = acc[2 + kw];
      }
    }
  }
}

void tiles_2x2(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t rows = p.n * p.h;
  const int team = detail::team_size(rows * p.w * p.m * p.c * 4);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t n = r / p.h, i = r % p.h;
    float* yn = y + n * p.m * p.oh * p.ow;
    tiles_2x2_row(p, p.oh * p.ow, x + n * p.c * p.h * p.w + i * p.w, w, bias, yn + 2 * i * p.ow,
                  yn + (2 * i + 1) * p.ow);
  }
}

}  // namespace

bool conv_transpose_direct(const ConvTransposeParams& p) {
  return tiles_exactly(p) && p.kh == 2 && p.kw == 2 && p.group == 1;
}

void conv_transpose_gemm(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y) {
  if (conv_transpose_direct(p)) return tiles_2x2(p, x, w, bias, y);
  const int64_t cg = p.c / p.group, mg = p.m / p.group, k = p.kh * p.kw, plane = p.oh * p.ow;
  const int64_t in_plane = p.h * p.w;
  // Rows per band: cols [mg * k, rows * W] of about 1 MiB, at least one row.
  const int64_t band_rows =
      std::max<int64_t>(1, std::min(p.h, (int64_t{1} << 18) / std::max<int64_t>(1, mg * k * p.w)));
  // Per calling thread, grown once: no allocation per inference (concurrent runs never share it).
  thread_local std::vector<float> cols;
  if (cols.size() < static_cast<size_t>(mg * k * band_rows * p.w))
    cols.resize(static_cast<size_t>(mg * k * band_rows * p.w));
  for (int64_t n = 0; n < p.n; ++n) {
    float* yn = y + n * p.m * plane;
    const bool tiles = tiles_exactly(p) && p.c > 0;
    for (int64_t m = 0; m < p.m && !tiles; ++m) std::fill(yn + m * plane, yn + (m + 1) * plane, bias ? bias[m] : 0.0f);
    for (int64_t g = 0; g < p.group; ++g) {
      const ConstMatrixMap wg(w + g * cg * mg * k, cg, mg * k);  // [Cg, Mg*KH*KW]
      const float* xg = x + (n * p.c + g * cg) * in_plane;
      for (int64_t r0 = 0; r0 < p.h; r0 += band_rows) {
        const int64_t rows = std::min(band_rows, p.h - r0), band = rows * p.w;
        MatrixMap c(cols.data(), mg * k, band);
        if (cg == 0) {
          c.setZero();
        } else {
          // x_g's band: [Cg, band] with row stride H*W (an outer-stride map, no copy)
          const Eigen::Map<const detail::RowMatrix, 0, Eigen::OuterStride<>> xb(xg + r0 * p.w, cg, band,
                                                                                Eigen::OuterStride<>(in_plane));
          c.noalias() = wg.transpose() * xb;
        }
        if (tiles) {
          col2im_tiles(p, mg, r0, rows, cols.data(), bias ? bias + g * mg : nullptr, yn + g * mg * plane);
        } else {
          col2im(p, mg, r0, rows, cols.data(), yn + g * mg * plane);
        }
      }
    }
  }
}

}  // namespace fusert::cpu
