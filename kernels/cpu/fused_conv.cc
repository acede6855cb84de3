// conv2d_fused: convolution + bias + epilogue (+ GlobalAveragePool tail) in one pass. Each
// (pixel tile, channel block) is computed by a GEMM straight into y and finished by the
// epilogue before the thread moves on, so the conv output never makes a second trip to memory.
#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/cpu/depthwise.h"
#include "kernels/cpu/fused_conv_tiles.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::ConvSink;
using detail::ConvSource;
using detail::ConvTiling;

// Depthwise: one unit per (image, channel) plane; the epilogue runs on the plane right after it
// is accumulated (a 112x112 plane is 49 KiB, so it is still in L2).
void depthwise_fused(const ConvParams& p, const float* x, const float* w, const float* bias, const Epilogue& ep,
                     float* y) {
  const int64_t planes = p.n * p.c, plane = p.oh * p.ow;
  ConvSink sink(ep, p.n, p.c, plane, 1, y);
  const int team = detail::team_size(planes * plane * p.kh * p.kw);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<float> scratch(static_cast<size_t>(plane));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < planes; ++i) {
      const int64_t img = i / p.c, ch = i % p.c;
      float* v = sink.destination(img, ch, 0);
      if (v == nullptr) v = scratch.data();
      detail::depthwise_plane(p, x + i * p.h * p.w, w + ch * p.kh * p.kw, bias ? bias[ch] : 0.f, v);
      sink.finish_row(img, ch, 0, 0, plane, v);
    }
  }
  sink.finish();
}

// One unit: bias, GEMM into the tile (in y, or scratch when pooling), then the epilogue per row.
void conv_unit(const ConvSource& src, const ConvTiling& t, int64_t u, const float* bias, ConvSink& sink,
               detail::ColumnCache& cache, std::vector<float>& scratch) {
  int64_t img = 0, tile = 0, block = 0;
  t.unit(u, &img, &tile, &block);
  const int64_t ch0 = t.block_starts[block], rows = t.block_starts[block + 1] - ch0;
  const int64_t p0 = tile * t.tile_px, p1 = std::min(t.plane, p0 + t.tile_px), len = p1 - p0;
  float* out = sink.destination(img, ch0, p0);
  int64_t ld = t.plane;
  if (out == nullptr) {
    scratch.resize(static_cast<size_t>(rows * len));
    out = scratch.data(), ld = len;
  }
  if (bias != nullptr) detail::fill_bias_rows(bias, ch0, rows, len, out, ld);
  detail::conv_tile_gemm(src, cache, img, ch0, rows, p0, p1, out, ld, bias != nullptr);
  for (int64_t r = 0; r < rows; ++r) sink.finish_row(img, ch0 + r, tile, p0, len, out + r * ld);
}

}  // namespace

void conv2d_fused(const ConvParams& p, const float* x, const float* w, const float* bias, const Epilogue& ep,
                  float* y) {
  assert(p.group >= 1 && p.c % p.group == 0 && p.m % p.group == 0);
  if (p.n <= 0 || p.m <= 0 || p.oh <= 0 || p.ow <= 0) return;
  if (detail::is_depthwise(p) && p.group > 1) return depthwise_fused(p, x, w, bias, ep, y);
  const int64_t mg = p.m / p.group, kdim = p.c / p.group * p.kh * p.kw, plane = p.oh * p.ow;
  const ConvTiling t = detail::make_conv_tiling(p.n, plane, kdim, p.m, {{mg, 0}});
  ConvSink sink(ep, p.n, p.m, plane, t.tiles, y);
  const ConvSource src{&p, x, w};
  const int team = detail::conv_team(p.n * p.m * plane * kdim, t.units());
#pragma omp parallel num_threads(team) if (team > 1)
  {
    detail::ColumnCache cache;
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t u = 0; u < t.units(); ++u) conv_unit(src, t, u, bias, sink, cache, scratch);
  }
  sink.finish();
}

}  // namespace fusert::cpu
