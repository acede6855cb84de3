// 2-D convolution as im2col + Eigen GEMM per group: Y_g[M/g, OH*OW] = W_g[M/g, C/g*KH*KW] * col.
// A 1x1 stride-1 unpadded conv uses the input itself as col; depthwise goes to depthwise.cc.
#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/eigen_maps.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::ConstMatrixMap;
using detail::MatrixMap;

// col row (ky, kx) of one channel: for output pixel (oy, ox) the input value at
// (oy*sh - pad_top + ky*dh, ox*sw - pad_left + kx*dw), or 0 where that is padding.
void im2col_row(const ConvParams& p, const float* x, int64_t ky, int64_t kx, float* col) {
  const int64_t x_off = kx * p.dil_w - p.pad_left;
  int64_t lo = 0, hi = 0;
  detail::valid_outputs(x_off, p.stride_w, p.w, p.ow, &lo, &hi);
  for (int64_t oy = 0; oy < p.oh; ++oy) {
    float* dst = col + oy * p.ow;
    const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
    if (iy < 0 || iy >= p.h) {
      std::fill(dst, dst + p.ow, 0.f);
      continue;
    }
    const float* x_row = x + iy * p.w;
    std::fill(dst, dst + lo, 0.f);
    if (p.stride_w == 1) {
      if (lo < hi) std::copy(x_row + lo + x_off, x_row + hi + x_off, dst + lo);
    } else {
      for (int64_t ox = lo; ox < hi; ++ox) dst[ox] = x_row[ox * p.stride_w + x_off];
    }
    std::fill(dst + hi, dst + p.ow, 0.f);
  }
}

// col is [channels*KH*KW, OH*OW]; rows are independent, so they split across the team.
void im2col(const ConvParams& p, int64_t channels, const float* x, float* col, int team) {
  const int64_t taps = p.kh * p.kw, plane = p.oh * p.ow;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < channels * taps; ++r) {
    const int64_t ci = r / taps, ky = (r % taps) / p.kw, kx = r % p.kw;
    im2col_row(p, x + ci * p.h * p.w, ky, kx, col + r * plane);
  }
}

bool needs_no_im2col(const ConvParams& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 && p.pad_left == 0 &&
         p.pad_bottom == 0 && p.pad_right == 0 && p.oh == p.h && p.ow == p.w;
}

// y_g = w_g * col (+ bias per output row). Bias goes in first so the GEMM accumulates onto it
// instead of taking a second pass over the output.
void group_gemm(const ConvParams& p, const float* w_g, const float* col, const float* bias_g, float* y_g) {
  const int64_t mg = p.m / p.group, kdim = p.c / p.group * p.kh * p.kw, plane = p.oh * p.ow;
  MatrixMap y_map(y_g, mg, plane);
  const ConstMatrixMap w_map(w_g, mg, kdim), col_map(col, kdim, plane);
  if (bias_g != nullptr) {
    for (int64_t i = 0; i < mg; ++i) y_map.row(i).setConstant(bias_g[i]);
    if (kdim > 0) y_map.noalias() += w_map * col_map;
  } else if (kdim > 0) {
    y_map.noalias() = w_map * col_map;
  } else {
    y_map.setZero();
  }
}

// Per-thread im2col buffer that only grows. A fresh multi-MB vector per call costs a serial
// zero-fill plus page faults on first touch, comparable to the im2col itself (ResNet stem).
float* col_scratch(int64_t size) {
  thread_local std::vector<float> buf;
  if (buf.size() < static_cast<size_t>(size)) buf.resize(static_cast<size_t>(size));
  return buf.data();
}

// One (image, group) unit of work, run by a single thread (im2col may fork its own team).
void conv_unit(const ConvParams& p, int64_t img, int64_t g, const float* x, const float* w, const float* bias, float* y,
               int im2col_team) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, plane = p.oh * p.ow;
  const float* x_g = x + (img * p.c + g * cg) * p.h * p.w;
  const float* col = x_g;
  if (!needs_no_im2col(p)) {
    float* buf = col_scratch(cg * p.kh * p.kw * plane);
    im2col(p, cg, x_g, buf, im2col_team);
    col = buf;
  }
  group_gemm(p, w + g * mg * cg * p.kh * p.kw, col, bias ? bias + g * mg : nullptr, y + (img * p.m + g * mg) * plane);
}

}  // namespace

void conv2d(const ConvParams& p, const float* x, const float* w, const float* bias, float* y) {
  assert(p.group >= 1 && p.c % p.group == 0 && p.m % p.group == 0);
  if (p.n <= 0 || p.m <= 0 || p.oh <= 0 || p.ow <= 0) return;
  if (detail::is_depthwise(p) && p.group > 1) {
    detail::depthwise_conv2d(p, x, w, bias, y);
    return;
  }
  const int64_t units = p.n * p.group;
  if (p.group == 1) {
    // Few large GEMMs: Eigen threads each one, and im2col splits its rows over the team.
    const int64_t col_size = p.c / p.group * p.kh * p.kw * p.oh * p.ow;
    const int im2col_team = detail::team_size(col_size);
    for (int64_t u = 0; u < units; ++u) {
      conv_unit(p, u / p.group, u % p.group, x, w, bias, y, im2col_team);
    }
    return;
  }
  // Many small per-group GEMMs thread poorly inside Eigen, so whole groups go to threads.
  const int64_t macs = p.n * p.m * p.oh * p.ow * (p.c / p.group) * p.kh * p.kw;
  const int team = static_cast<int>(std::min<int64_t>(units, detail::team_size(macs)));
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t u = 0; u < units; ++u) {
    conv_unit(p, u / p.group, u % p.group, x, w, bias, y, 1);
  }
}

}  // namespace fusert::cpu
