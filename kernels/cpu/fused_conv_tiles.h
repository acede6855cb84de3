// Internal: the tiled convolution engine behind conv2d_fused and the cross-group conv kernels.
// A unit of work is (image, pixel tile, channel block); its GEMM result is finished (epilogue,
// merge, pooling) by the caller while it is still in cache, before the thread moves on.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/fused_internal.h"

namespace fusert::cpu::detail {

/// One convolution contributing to a tile.
struct ConvSource {
  const ConvParams* p = nullptr;
  const float* x = nullptr;
  const float* w = nullptr;
};

/// Per-thread im2col scratch holding the [C/g * KH * KW, p1 - p0] columns of one (image, group,
/// pixel range). It is rebuilt only when the thread moves to another range, so consecutive
/// channel blocks of one pixel tile share it. 1x1 stride-1 unpadded convs read x directly.
class ColumnCache {
 public:
  ConstStridedMap columns(const ConvSource& s, int64_t img, int64_t g, int64_t p0, int64_t p1);

 private:
  std::vector<float> buf_;
  const float* x_ = nullptr;
  int64_t img_ = -1, g_ = -1, p0_ = -1, p1_ = -1;
};

/// tile[rows, p1 - p0] = (or +=) W[ch0, ch0 + rows) * columns. The rows must lie in one group.
/// Eigen runs single-threaded here when called inside an OpenMP team.
void conv_tile_gemm(const ConvSource& s, ColumnCache& cache, int64_t img, int64_t ch0, int64_t rows, int64_t p0,
                    int64_t p1, float* tile, int64_t ld, bool accumulate);

/// Sets rows [0, rows) of a tile to bias[ch0 + r] (or 0 when bias is null).
void fill_bias_rows(const float* bias, int64_t ch0, int64_t rows, int64_t cols, float* tile, int64_t ld);

/// How one launch is cut into units: pixel tiles per image times channel blocks.
struct ConvTiling {
  int64_t n = 1, plane = 0, tile_px = 0, tiles = 0;
  std::vector<int64_t> block_starts;  ///< block b covers channels [starts[b], starts[b + 1])
  int64_t blocks() const { return static_cast<int64_t>(block_starts.size()) - 1; }
  int64_t units() const { return n * tiles * blocks(); }
  /// Unit u -> (image, pixel tile, block); the block varies fastest so that a thread's
  /// consecutive units reuse its cached columns.
  void unit(int64_t u, int64_t* img, int64_t* tile, int64_t* block) const {
    *block = u % blocks();
    *tile = (u / blocks()) % tiles;
    *img = u / (blocks() * tiles);
  }
};

/// Tiling for `channels` output channels over `plane` pixels with a GEMM depth of `kdim`.
/// `cuts` are (period, offset) pairs: a block never crosses a channel c with
/// (c + offset) % period == 0 (group boundaries of every source feeding the tile).
ConvTiling make_conv_tiling(int64_t n, int64_t plane, int64_t kdim, int64_t channels,
                            const std::vector<std::pair<int64_t, int64_t>>& cuts);

/// Where the finished rows of a conv output go: y [N, channels, plane] after steps and post,
/// or, for the GlobalAveragePool tail, per-tile partial sums reduced into y [N, channels] by
/// finish(), which then applies `post` over [N, channels].
class ConvSink {
 public:
  ConvSink(const Epilogue& ep, int64_t n, int64_t channels, int64_t plane, int64_t tiles, float* y);
  bool pooled() const { return pooled_; }
  /// The place in y of (img, ch, pixel p0), or null when tiles must be built in scratch
  /// (pooling, or y aliasing an epilogue operand).
  float* destination(int64_t img, int64_t ch, int64_t p0) const;
  /// Finishes one row segment v[0, count) of (img, ch) starting at pixel p0 of pixel tile `tile`.
  void finish_row(int64_t img, int64_t ch, int64_t tile, int64_t p0, int64_t count, float* v);
  /// Pooled only: reduces the partial sums into y and applies post. Call after the parallel loop.
  void finish();

 private:
  PreparedSteps steps_, post_;
  bool pooled_, scratch_only_;
  int64_t n_, channels_, plane_, tiles_;
  float* y_;
  std::vector<double> partial_;  // pooled: [n, channels, tiles]
};

/// Threads for a conv launch of `macs` multiply-adds split into `units`.
int conv_team(int64_t macs, int64_t units);

}  // namespace fusert::cpu::detail
