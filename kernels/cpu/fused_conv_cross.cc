// Cross-group convolutions: two convs summed into one tile (residual join with a conv on the
// shortcut) and two branches stacked into one conv whose halves get their own epilogues and
// are merged (add or concat) per tile. Neither branch result is ever stored on its own.
#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/cpu/fused_conv_tiles.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::ConvSink;
using detail::ConvSource;
using detail::ConvTiling;
using detail::PreparedSteps;

struct TileRange {
  int64_t img, tile, ch0, rows, p0, p1;
};

TileRange tile_range(const ConvTiling& t, int64_t u) {
  TileRange r{};
  int64_t block = 0;
  t.unit(u, &r.img, &r.tile, &block);
  r.ch0 = t.block_starts[block], r.rows = t.block_starts[block + 1] - r.ch0;
  r.p0 = r.tile * t.tile_px, r.p1 = std::min(t.plane, r.p0 + t.tile_px);
  return r;
}

int64_t gemm_depth(const ConvParams& p) { return p.c / p.group * p.kh * p.kw; }

// Both GEMMs accumulate into one tile (in y unless pooling), then the epilogue runs per row.
void sum_unit(const ConvSource& s1, const ConvSource& s2, const ConvTiling& t, int64_t u, const float* bias,
              ConvSink& sink, detail::ColumnCache caches[2], std::vector<float>& scratch) {
  const TileRange r = tile_range(t, u);
  const int64_t len = r.p1 - r.p0;
  float* out = sink.destination(r.img, r.ch0, r.p0);
  int64_t ld = t.plane;
  if (out == nullptr) {
    scratch.resize(static_cast<size_t>(r.rows * len));
    out = scratch.data(), ld = len;
  }
  if (bias != nullptr) detail::fill_bias_rows(bias, r.ch0, r.rows, len, out, ld);
  detail::conv_tile_gemm(s1, caches[0], r.img, r.ch0, r.rows, r.p0, r.p1, out, ld, bias != nullptr);
  detail::conv_tile_gemm(s2, caches[1], r.img, r.ch0, r.rows, r.p0, r.p1, out, ld, true);
  for (int64_t i = 0; i < r.rows; ++i) sink.finish_row(r.img, r.ch0 + i, r.tile, r.p0, len, out + i * ld);
}

// The epilogue of one branch (steps then post; branch epilogues carry no tail).
struct BranchSteps {
  PreparedSteps steps, post;
  BranchSteps(const Epilogue& ep, int64_t channels, int64_t plane)
      : steps(ep.steps, ep.out_shape, channels, plane), post(ep.post, ep.out_shape, channels, plane) {
    assert(ep.tail == EpTail::kNone && "branch epilogues cannot reduce");
  }
  void apply(int64_t flat, int64_t count, float* v) const {
    steps.apply(flat, count, v);
    post.apply(flat, count, v);
  }
};

struct MergeSpec {
  const ConvSource* src;
  const float* bias;
  const BranchSteps* a;
  const BranchSteps* b;
  bool add;
  int64_t half;  // M: branch B's channel c is stacked channel half + c
};

// Branch tiles go straight into y where they are final rows (concat), else into scratch; then
// ep_a / ep_b per row, the merge, and the merge epilogue through the sink.
void merge_unit(const MergeSpec& ms, const ConvTiling& t, int64_t u, ConvSink& sink, detail::ColumnCache caches[2],
                std::vector<float>& scratch) {
  const TileRange r = tile_range(t, u);
  const int64_t len = r.p1 - r.p0;
  scratch.resize(static_cast<size_t>(2 * r.rows * len));
  float* tile_a = sink.destination(r.img, r.ch0, r.p0);
  float* tile_b = ms.add ? nullptr : sink.destination(r.img, ms.half + r.ch0, r.p0);
  int64_t ld_a = t.plane, ld_b = t.plane;
  if (tile_a == nullptr) tile_a = scratch.data(), ld_a = len;
  if (tile_b == nullptr) tile_b = scratch.data() + r.rows * len, ld_b = len;
  const int64_t b0 = ms.half + r.ch0;
  detail::fill_bias_rows(ms.bias, r.ch0, r.rows, len, tile_a, ld_a);
  detail::fill_bias_rows(ms.bias, b0, r.rows, len, tile_b, ld_b);
  detail::conv_tile_gemm(*ms.src, caches[0], r.img, r.ch0, r.rows, r.p0, r.p1, tile_a, ld_a, true);
  // With one group both halves read the same columns: share the cache rather than rebuild.
  const int64_t mg = ms.src->p->m / ms.src->p->group;
  detail::ColumnCache& cache_b = b0 / mg == r.ch0 / mg ? caches[0] : caches[1];
  detail::conv_tile_gemm(*ms.src, cache_b, r.img, b0, r.rows, r.p0, r.p1, tile_b, ld_b, true);
  for (int64_t i = 0; i < r.rows; ++i) {
    const int64_t c = r.ch0 + i, flat = (r.img * ms.half + c) * t.plane + r.p0;
    float* va = tile_a + i * ld_a;
    float* vb = tile_b + i * ld_b;
    ms.a->apply(flat, len, va);
    ms.b->apply(flat, len, vb);
    if (ms.add) {
      for (int64_t j = 0; j < len; ++j) va[j] += vb[j];
      sink.finish_row(r.img, c, r.tile, r.p0, len, va);
    } else {
      sink.finish_row(r.img, c, r.tile, r.p0, len, va);
      sink.finish_row(r.img, ms.half + c, r.tile, r.p0, len, vb);
    }
  }
}

}  // namespace

void conv2d_sum_fused(const ConvParams& p1, const float* x1, const float* w1, const ConvParams& p2, const float* x2,
                      const float* w2, const float* bias, const Epilogue& ep, float* y) {
  assert(p1.n == p2.n && p1.m == p2.m && p1.oh == p2.oh && p1.ow == p2.ow);
  assert(p1.c % p1.group == 0 && p1.m % p1.group == 0 && p2.c % p2.group == 0 && p2.m % p2.group == 0);
  if (p1.n <= 0 || p1.m <= 0 || p1.oh <= 0 || p1.ow <= 0) return;
  const int64_t plane = p1.oh * p1.ow, kdim = std::max(gemm_depth(p1), gemm_depth(p2));
  const ConvTiling t = detail::make_conv_tiling(p1.n, plane, kdim, p1.m, {{p1.m / p1.group, 0}, {p2.m / p2.group, 0}});
  ConvSink sink(ep, p1.n, p1.m, plane, t.tiles, y);
  const ConvSource s1{&p1, x1, w1}, s2{&p2, x2, w2};
  const int64_t macs = p1.n * p1.m * plane * (gemm_depth(p1) + gemm_depth(p2));
  const int team = detail::conv_team(macs, t.units());
#pragma omp parallel num_threads(team) if (team > 1)
  {
    detail::ColumnCache caches[2];
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t u = 0; u < t.units(); ++u) sum_unit(s1, s2, t, u, bias, sink, caches, scratch);
  }
  sink.finish();
}

void conv2d_branch_merge(const ConvParams& p, const float* x, const float* w, const float* bias, const Epilogue& ep_a,
                         const Epilogue& ep_b, bool merge_add, const Epilogue& ep_merge, float* y) {
  assert(p.m % 2 == 0 && p.c % p.group == 0 && p.m % p.group == 0);
  if (p.n <= 0 || p.m <= 0 || p.oh <= 0 || p.ow <= 0) return;
  const int64_t half = p.m / 2, mg = p.m / p.group, plane = p.oh * p.ow;
  // Blocks index branch A's channels; branch B's rows (half + c) must not cross a group either.
  const ConvTiling t = detail::make_conv_tiling(p.n, plane, gemm_depth(p), half, {{mg, 0}, {mg, half}});
  ConvSink sink(ep_merge, p.n, merge_add ? half : p.m, plane, t.tiles, y);
  const ConvSource src{&p, x, w};
  const BranchSteps a(ep_a, half, plane), b(ep_b, half, plane);
  const MergeSpec ms{&src, bias, &a, &b, merge_add, half};
  const int team = detail::conv_team(p.n * p.m * plane * gemm_depth(p), t.units());
#pragma omp parallel num_threads(team) if (team > 1)
  {
    detail::ColumnCache caches[2];  // A and B rows may sit in different groups
    std::vector<float> scratch;
#pragma omp for schedule(static)
    for (int64_t u = 0; u < t.units(); ++u) merge_unit(ms, t, u, sink, caches, scratch);
  }
  sink.finish();
}

}  // namespace fusert::cpu
