// kernels/cpu/resample.h: one output row at a time. A row reads one source row (nearest) or two
// (linear; four for cubic), and within the row each output column gathers its source columns with
// their weights, straight from the lowering's tables.
#include "kernels/cpu/resample.h"

#include <vector>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

// One source row resampled along the columns, scaled by `a`, added into (or stored to) y.
template <int Taps, bool Accumulate>
void sample_row(const ResizeAxis& c, int64_t ow, const float* src, float a, float* y) {
  const int64_t* ix = c.index.data();
  const float* wt = c.weight.data();
  for (int64_t o = 0; o < ow; ++o) {
    float v;
    if constexpr (Taps == 1) {
      v = src[ix[o]];
    } else if constexpr (Taps == 2) {
      v = wt[2 * o] * src[ix[2 * o]] + wt[2 * o + 1] * src[ix[2 * o + 1]];
    } else {  // any count (cubic: 4), in tap order
      const int64_t t = c.taps;
      v = wt[t * o] * src[ix[t * o]];
      for (int64_t k = 1; k < t; ++k) v += wt[t * o + k] * src[ix[t * o + k]];
    }
    if constexpr (Accumulate) {
      y[o] += a * v;
    } else {
      y[o] = a == 1.0f ? v : a * v;
    }
  }
}

template <int Taps>
void output_row(const ResizeAxis& c, int64_t ow, const ResizeAxis& rows, int64_t r, const float* plane, int64_t iw,
                float* y) {
  if (rows.taps == 1) {
    sample_row<Taps, false>(c, ow, plane + rows.index[static_cast<size_t>(r)] * iw, 1.0f, y);
    return;
  }
  const size_t e = static_cast<size_t>(rows.taps * r);
  sample_row<Taps, false>(c, ow, plane + rows.index[e] * iw, rows.weight[e], y);
  // Also at weight 0: a NaN there propagates as in the reference (0 * NaN).
  for (size_t t = 1; t < static_cast<size_t>(rows.taps); ++t)
    sample_row<Taps, true>(c, ow, plane + rows.index[e + t] * iw, rows.weight[e + t], y);
}

}  // namespace

void resize_2d(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const ResizeAxis& rows,
               const ResizeAxis& cols, const float* x, float* y) {
  const ResizeAxis& c = cols;  // the lowering's tables, read as they are: no per-call copy
  const int64_t total_rows = outer * oh;
  const int team = detail::team_size(total_rows * ow * (rows.taps + cols.taps));
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t k = 0; k < total_rows; ++k) {
    const int64_t p = k / oh, r = k % oh;
    const float* plane = x + p * ih * iw;
    float* out = y + k * ow;
    if (c.taps == 1) {
      output_row<1>(c, ow, rows, r, plane, iw, out);
    } else if (c.taps == 2) {
      output_row<2>(c, ow, rows, r, plane, iw, out);
    } else {
      output_row<0>(c, ow, rows, r, plane, iw, out);
    }
  }
}

}  // namespace fusert::cpu
