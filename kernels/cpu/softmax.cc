// Softmax over the middle axis of an [outer, axis_len, inner] view, max-subtracted so that
// large logits (1e30) cannot overflow exp. A row of all -inf gives zeros, never NaN.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Max that lets a NaN win (so a NaN row stays NaN instead of hiding behind the -inf rule).
inline float nan_max(float m, float v) { return (v > m || std::isnan(v)) ? v : m; }

// One contiguous row (inner == 1): the vectorised row softmax of the fused kernels
// (detail::softmax_row: Eigen's exp, a few ulps from libm's; an all -inf row gives zeros, NaN
// stays NaN, probabilities under FLT_MIN become 0). The scalar loop with libm's exp took
// ViT-tiny's 3 x 197 x 197 attention softmax 1 ms per layer, a fifth of the model.
void softmax_row(const float* x, int64_t len, float* y) {
  if (x != y) std::copy(x, x + len, y);
  detail::softmax_row(len, y);
}

// Columns [begin, begin + count) of one [len, inner] slab, count <= kColumns. The reductions
// run across rows so that every pass over the slab reads contiguous memory.
constexpr int64_t kColumns = 256;

void softmax_columns(const float* x, int64_t len, int64_t inner, int64_t count, float* y) {
  float mx[kColumns], inv[kColumns];
  double sum[kColumns];  // double: a float sum over a long axis drifts (rows of 30,000: 2.7e-5)
  std::fill(mx, mx + count, kNegInf);
  std::fill(sum, sum + count, 0.0);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) mx[i] = nan_max(mx[i], x[r * inner + i]);
  }
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) {
      const float e = mx[i] == kNegInf ? 0.f : std::exp(x[r * inner + i] - mx[i]);
      y[r * inner + i] = e;
      sum[i] += e;
    }
  }
  for (int64_t i = 0; i < count; ++i) inv[i] = sum[i] == 0.0 ? 0.f : 1.f / static_cast<float>(sum[i]);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) y[r * inner + i] *= inv[i];
  }
}

}  // namespace

void softmax(int64_t outer, int64_t axis_len, int64_t inner, const float* x, float* y) {
  if (outer <= 0 || axis_len <= 0 || inner <= 0) return;
  const int team = detail::team_size(outer * axis_len * inner * 4);
  if (inner == 1) {
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t o = 0; o < outer; ++o) softmax_row(x + o * axis_len, axis_len, y + o * axis_len);
    return;
  }
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t item = 0; item < outer * blocks; ++item) {
    const int64_t o = item / blocks, begin = (item % blocks) * kColumns;
    const int64_t offset = o * axis_len * inner + begin;
    softmax_columns(x + offset, axis_len, inner, std::min(kColumns, inner - begin), y + offset);
  }
}

}  // namespace fusert::cpu
