// Tiled convolution engine: im2col restricted to a pixel range, a single-threaded Eigen GEMM
// per (pixel tile, channel block), and the sink that finishes rows (epilogue, store or pool).
// Tiles are sized so the columns and the output block stay in L2 between GEMM and epilogue.
#include "kernels/cpu/fused_conv_tiles.h"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cassert>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu::detail {

namespace {

// Eigen packs both GEMM operands per call, so a unit's packing overhead relative to its
// multiply-adds is about 1/pixels + 1/rows: tiles should be tall and wide. The bounds are the
// cache: the im2col columns may take half of L2 (a small image's whole column matrix then fits
// in one tile, as in cpu::conv2d) and the output block a quarter, so both are still there when
// the epilogue runs. Measured: 98-pixel tiles on a 14x14 output cost 15% more than one tile.
constexpr int64_t kMinTilePixels = 64;
constexpr int64_t kAlign = 16;

int64_t l2_floats() { return std::max<int64_t>(64 * 1024, Eigen::l2CacheSize() / static_cast<int64_t>(sizeof(float))); }

bool reads_input_directly(const ConvParams& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 && p.pad_left == 0 &&
         p.pad_bottom == 0 && p.pad_right == 0 && p.oh == p.h && p.ow == p.w;
}

// Columns of one (channel, ky, kx) row for output pixels [p0, p1): the input value under the
// tap for each pixel, or 0 where the tap reads padding. Walks the output rows the range spans.
void im2col_row_range(const ConvParams& p, const float* xc, int64_t ky, int64_t kx, int64_t p0, int64_t p1,
                      float* dst) {
  const int64_t x_off = kx * p.dil_w - p.pad_left;
  int64_t lo = 0, hi = 0;
  valid_outputs(x_off, p.stride_w, p.w, p.ow, &lo, &hi);
  for (int64_t oy = p0 / p.ow; oy * p.ow < p1; ++oy) {
    const int64_t a = std::max(p0, oy * p.ow) - oy * p.ow, b = std::min(p1, (oy + 1) * p.ow) - oy * p.ow;
    float* d = dst + oy * p.ow - p0;  // indexed by ox
    const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
    if (iy < 0 || iy >= p.h) {
      std::fill(d + a, d + b, 0.f);
      continue;
    }
    const float* x_row = xc + iy * p.w;
    const int64_t l = std::clamp(lo, a, b), h = std::clamp(hi, l, b);
    std::fill(d + a, d + l, 0.f);
    if (p.stride_w == 1) {
      std::copy(x_row + l + x_off, x_row + h + x_off, d + l);
    } else {
      for (int64_t ox = l; ox < h; ++ox) d[ox] = x_row[ox * p.stride_w + x_off];
    }
    std::fill(d + h, d + b, 0.f);
  }
}

// After pooling, post sees the [N, channels] result. kStrided strides written against the
// 4-D conv shape (pooled [N, M, 1, 1] as ONNX keeps it) keep their N and M entries: every
// spatial index of the pooled value is 0, so the spatial strides never contribute.
std::vector<EpilogueStep> pooled_post(std::vector<EpilogueStep> post) {
  for (EpilogueStep& s : post) {
    if (s.mode == OperandMode::kStrided && s.strides.size() > 2) s.strides.resize(2);
  }
  return post;
}

}  // namespace

ConstStridedMap ColumnCache::columns(const ConvSource& s, int64_t img, int64_t g, int64_t p0, int64_t p1) {
  const ConvParams& p = *s.p;
  const int64_t cg = p.c / p.group, taps = p.kh * p.kw, len = p1 - p0;
  const float* x_g = s.x + (img * p.c + g * cg) * p.h * p.w;
  if (reads_input_directly(p)) return ConstStridedMap(x_g + p0, cg, len, Eigen::OuterStride<>(p.h * p.w));
  if (x_ != s.x || img_ != img || g_ != g || p0_ != p0 || p1_ != p1) {
    buf_.resize(static_cast<size_t>(cg * taps * len));
    for (int64_t r = 0; r < cg * taps; ++r) {
      const int64_t ci = r / taps, ky = (r % taps) / p.kw, kx = r % p.kw;
      im2col_row_range(p, x_g + ci * p.h * p.w, ky, kx, p0, p1, buf_.data() + r * len);
    }
    x_ = s.x, img_ = img, g_ = g, p0_ = p0, p1_ = p1;
  }
  return ConstStridedMap(buf_.data(), cg * taps, len, Eigen::OuterStride<>(len));
}

void conv_tile_gemm(const ConvSource& s, ColumnCache& cache, int64_t img, int64_t ch0, int64_t rows, int64_t p0,
                    int64_t p1, float* tile, int64_t ld, bool accumulate) {
  // Tiles are the unit of parallelism (an OpenMP loop over tiles, or one thread for small
  // convs): Eigen must not fork its own team per tile, which oversubscribes the cores and, on a
  // loaded machine, turns thousands of tiny fork/joins into minutes.
  const SerialEigen serial(true);
  const ConvParams& p = *s.p;
  const int64_t mg = p.m / p.group, g = ch0 / mg, kdim = p.c / p.group * p.kh * p.kw;
  assert((ch0 + rows - 1) / mg == g && "a channel block crosses a group boundary");
  StridedMap out(tile, rows, p1 - p0, Eigen::OuterStride<>(ld));
  if (kdim == 0) {
    if (!accumulate) out.setZero();
    return;
  }
  const ConstMatrixMap weights(s.w + ch0 * kdim, rows, kdim);
  const ConstStridedMap col = cache.columns(s, img, g, p0, p1);
  if (accumulate) {
    out.noalias() += weights * col;
  } else {
    out.noalias() = weights * col;
  }
}

void fill_bias_rows(const float* bias, int64_t ch0, int64_t rows, int64_t cols, float* tile, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::fill(tile + r * ld, tile + r * ld + cols, bias ? bias[ch0 + r] : 0.f);
}

// Channel blocks of at most `rows`, made equal (multiples of 16) so no block is a thin
// remainder, and never crossing a cut (a group boundary of a source).
std::vector<int64_t> block_starts(int64_t channels, int64_t rows,
                                  const std::vector<std::pair<int64_t, int64_t>>& cuts) {
  const int64_t blocks = (channels + rows - 1) / rows;
  rows = ((channels + blocks - 1) / blocks + kAlign - 1) / kAlign * kAlign;
  std::vector<int64_t> starts;
  for (int64_t c = 0; c < channels;) {
    starts.push_back(c);
    int64_t next = std::min(c + rows, channels);
    for (const auto& [period, offset] : cuts) {
      const int64_t boundary = ((c + offset) / period + 1) * period - offset;
      next = std::min(next, boundary);
    }
    c = next;
  }
  starts.push_back(channels);
  return starts;
}

// Each extra pixel tile repacks a weight block (rows x kdim), each extra channel block repacks
// the columns (kdim x pixels): Eigen packs both operands per GEMM. Measured: splitting a 64-row
// 1x1 conv into two 32-row blocks costs 20%. So blocks take every channel the output budget
// allows, tiles take the rest, and when the team needs more units the cheaper side is split.
ConvTiling make_conv_tiling(int64_t n, int64_t plane, int64_t kdim, int64_t channels,
                            const std::vector<std::pair<int64_t, int64_t>>& cuts) {
  ConvTiling t;
  t.n = n, t.plane = plane;
  const int64_t out_budget = l2_floats() / 4;
  const int64_t col_px = std::max(kMinTilePixels, l2_floats() / 2 / std::max<int64_t>(kdim, 1) / kAlign * kAlign);
  int64_t px = std::min(plane, col_px);
  int64_t rows = std::min(channels, std::max(kAlign, out_budget / px / kAlign * kAlign));
  px = std::min(px, std::max(kMinTilePixels, out_budget / rows));
  t.tiles = (plane + px - 1) / px;
  const int64_t threads = num_threads(), want = threads > 1 ? 2 * threads : 1;
  for (;;) {
    t.tile_px = (plane + t.tiles - 1) / t.tiles;  // equal tiles: no ragged last one
    if (n * t.tiles * ((channels + rows - 1) / rows) >= want) break;
    if (t.tile_px >= 2 * kAlign && (t.tile_px >= rows || rows < 2 * kAlign)) {
      t.tiles = std::min(plane, t.tiles * 2);
    } else if (rows >= 2 * kAlign) {
      rows = rows / 2 / kAlign * kAlign;
    } else {
      break;
    }
  }
  t.block_starts = block_starts(channels, rows, cuts);
  return t;
}

ConvSink::ConvSink(const Epilogue& ep, int64_t n, int64_t channels, int64_t plane, int64_t tiles, float* y)
    : steps_(ep.steps, ep.out_shape, channels, plane),
      pooled_(ep.tail == EpTail::kGlobalAvgPool),
      n_(n),
      channels_(channels),
      plane_(plane),
      tiles_(tiles),
      y_(y) {
  assert(ep.tail != EpTail::kLayerNorm && "LayerNorm tail is gemm-only");
  post_ = pooled_ ? PreparedSteps(pooled_post(ep.post), {n, channels}, channels, 1)
                  : PreparedSteps(ep.post, ep.out_shape, channels, plane);
  scratch_only_ = pooled_ || epilogue_reads(ep, y, n * channels * plane);
  if (pooled_) partial_.assign(static_cast<size_t>(n * channels * tiles), 0.0);
}

float* ConvSink::destination(int64_t img, int64_t ch, int64_t p0) const {
  return scratch_only_ ? nullptr : y_ + (img * channels_ + ch) * plane_ + p0;
}

void ConvSink::finish_row(int64_t img, int64_t ch, int64_t tile, int64_t p0, int64_t count, float* v) {
  const int64_t flat = (img * channels_ + ch) * plane_ + p0;
  steps_.apply(flat, count, v);
  if (pooled_) {
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < count; ++i) sum += v[i];
    partial_[static_cast<size_t>((img * channels_ + ch) * tiles_ + tile)] = sum;
    return;
  }
  post_.apply(flat, count, v);
  float* dst = y_ + flat;
  if (dst != v) std::copy(v, v + count, dst);
}

void ConvSink::finish() {
  if (!pooled_) return;
  for (int64_t i = 0; i < n_ * channels_; ++i) {
    double sum = 0.0;
    for (int64_t t = 0; t < tiles_; ++t) sum += partial_[static_cast<size_t>(i * tiles_ + t)];
    y_[i] = static_cast<float>(sum / static_cast<double>(plane_));
  }
  post_.apply(0, n_ * channels_, y_);
}

int conv_team(int64_t macs, int64_t units) { return static_cast<int>(std::min<int64_t>(units, team_size(macs))); }

}  // namespace fusert::cpu::detail
