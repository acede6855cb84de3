// kernels/cpu/conv_transpose.h: GEMM per band of input rows, then col2im into the output.
#include "kernels/cpu/conv_transpose.h"

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

}  // namespace

void conv_transpose_gemm(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y) {
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
    for (int64_t m = 0; m < p.m; ++m) std::fill(yn + m * plane, yn + (m + 1) * plane, bias ? bias[m] : 0.0f);
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
        col2im(p, mg, r0, rows, cols.data(), yn + g * mg * plane);
      }
    }
  }
}

}  // namespace fusert::cpu
