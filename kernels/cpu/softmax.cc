// Softmax and LogSoftmax over the middle axis of an [outer, axis_len, inner] view, max-subtracted
// so that large logits (1e30) cannot overflow exp. Softmax: a row of all -inf gives zeros, never
// NaN. LogSoftmax: (x - max) - log(sum(exp(x - max))) as ONNX's reference computes it, so a NaN,
// a +inf or an all -inf row gives NaN.
#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

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

// LogSoftmax of one contiguous row. The exps are Eigen's (vectorised) while the max is finite;
// a NaN or +inf max makes x - max NaN somewhere, and the scalar path keeps that NaN in the sum.
// Nothing is written before the last pass, so x may alias y.
void log_softmax_row(const float* x, int64_t len, float* y) {
  float mx = kNegInf;
  for (int64_t i = 0; i < len; ++i) mx = nan_max(mx, x[i]);
  Eigen::Map<const Eigen::ArrayXf> xa(x, len);
  Eigen::Map<Eigen::ArrayXf> ya(y, len);
  double sum = 0.0;
  if (std::isfinite(mx)) {
    sum = static_cast<double>((xa - mx).exp().sum());  // Eigen's packet sum: no long serial drift
  } else {
    for (int64_t i = 0; i < len; ++i) sum += std::exp(static_cast<double>(x[i] - mx));
  }
  const float lg = static_cast<float>(std::log(sum));
  ya = (xa - mx) - lg;
}

// LogSoftmax of columns [begin, begin + count) of one [len, inner] slab, count <= kColumns.
void log_softmax_columns(const float* x, int64_t len, int64_t inner, int64_t count, float* y) {
  float mx[kColumns], lg[kColumns];
  double sum[kColumns];
  std::fill(mx, mx + count, kNegInf);
  std::fill(sum, sum + count, 0.0);
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) mx[i] = nan_max(mx[i], x[r * inner + i]);
  }
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) sum[i] += std::exp(static_cast<double>(x[r * inner + i] - mx[i]));
  }
  for (int64_t i = 0; i < count; ++i) lg[i] = static_cast<float>(std::log(sum[i]));
  for (int64_t r = 0; r < len; ++r) {
    for (int64_t i = 0; i < count; ++i) y[r * inner + i] = (x[r * inner + i] - mx[i]) - lg[i];
  }
}

// Runs row(x, len, y) over every row (inner == 1) or columns(x, len, inner, count, y) over every
// block of kColumns columns, threaded over rows / blocks.
template <typename Row, typename Columns>
void over_axis(int64_t outer, int64_t len, int64_t inner, const float* x, float* y, Row row, Columns columns) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  const int team = detail::team_size(outer * len * inner * 4);
  if (inner == 1) {
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t o = 0; o < outer; ++o) row(x + o * len, len, y + o * len);
    return;
  }
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t item = 0; item < outer * blocks; ++item) {
    const int64_t o = item / blocks, begin = (item % blocks) * kColumns;
    const int64_t offset = o * len * inner + begin;
    columns(x + offset, len, inner, std::min(kColumns, inner - begin), y + offset);
  }
}

}  // namespace

void softmax(int64_t outer, int64_t axis_len, int64_t inner, const float* x, float* y) {
  over_axis(outer, axis_len, inner, x, y, softmax_row, softmax_columns);
}

void log_softmax(int64_t outer, int64_t axis_len, int64_t inner, const float* x, float* y) {
  over_axis(outer, axis_len, inner, x, y, log_softmax_row, log_softmax_columns);
}

}  // namespace fusert::cpu
