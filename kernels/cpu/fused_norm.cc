// Row-wise normalisations for fused groups: LayerNorm and softmax of one row, the gemm-style
// row epilogue (steps, LayerNorm tail, post) and norm_rows_fused (prologue + norm + post).
// Each row is finished in one visit: it is read once into cache and written once.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu::detail {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Max that lets a NaN win, so a NaN row stays NaN instead of hiding behind the -inf rule.
inline float nan_max(float m, float v) { return (v > m || std::isnan(v)) ? v : m; }

}  // namespace

// Statistics accumulate in double as cpu::layer_norm does: a float sum over thousands of
// values with a large common offset would lose the variance. `omp simd reduction` lets the
// sums run in vector lanes; a plain serial reduction is bound by add latency (4 cycles per
// element, measured ~10% of a 768-wide GEMM + LayerNorm).
void layer_norm_row(int64_t n, const float* scale, const float* shift, float eps, float* v) {
  if (n <= 0) return;
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += v[i];
  const double mean = sum / static_cast<double>(n);
  double sq = 0.0;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < n; ++i) {
    const double d = v[i] - mean;
    sq += d * d;
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(n) + eps));
  const float m = static_cast<float>(mean);
  if (shift != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) v[i] = (v[i] - m) * inv * scale[i] + shift[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) v[i] = (v[i] - m) * inv * scale[i];
  }
}

// The row's max, NaN if it holds one (as nan_max over the row), eight lanes at a time.
static float row_max(int64_t n, const float* v) {
  float mx = kNegInf;
  int64_t i = 0;
#ifdef __AVX__
  __m256 m = _mm256_set1_ps(kNegInf), unordered = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    m = _mm256_max_ps(m, x);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
  if (_mm256_movemask_ps(unordered) != 0) return std::numeric_limits<float>::quiet_NaN();
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  for (float l : lanes) mx = std::max(mx, l);
#endif
  for (; i < n; ++i) mx = nan_max(mx, v[i]);
  return mx;
}

void softmax_row(int64_t n, float* v) {
  const float mx = row_max(n, v);
  if (mx == kNegInf) {  // every entry is -inf (e.g. a fully masked row): zeros, as ONNX RT gives
    std::fill(v, v + n, 0.f);
    return;
  }
  if (!std::isfinite(mx)) {  // NaN or +inf in the row: libm's exp gives ONNX's NaN pattern
    float sum = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      v[i] = std::exp(v[i] - mx);
      sum += v[i];
    }
    const float inv = 1.f / sum;
    for (int64_t i = 0; i < n; ++i) v[i] *= inv;
    return;
  }
  // Finite max: Eigen's vectorised exp (within a few ulps of libm; attention spent most of its
  // time in scalar expf). Its input clamp would turn exp(-inf) into a tiny number instead of 0,
  // so masked (-inf) entries are selected to exactly 0: 0 * an infinite V stays NaN, as unfused.
  // Eigen's select() is not vectorised: the exp goes to a per-thread buffer first. That buffer
  // is Eigen-aligned, so no leading elements are peeled off to the scalar exp whatever v's
  // alignment: the row's result is the same bits in every run and on every thread.
  // Inputs more than 87 below the max (down to -inf: a masked entry) give probabilities under
  // FLT_MIN; they are set to exactly 0 below, and clamped before the exp so that it never makes
  // a denormal either: denormal arithmetic took BERT's attention 3.8 ms of which the GEMMs needed
  // a fraction (an additive mask of -10000 sends every masked score there).
  constexpr float kFloor = -87.0f;  // exp(-87) = 1.6e-38 is still normal
  thread_local Eigen::ArrayXf buf;
  if (buf.size() < n) buf.resize(n);
  Eigen::Map<Eigen::ArrayXf> a(v, n);
  buf.head(n) = (a - mx).max(kFloor).exp();
  // The masked sum in eight lanes from element 0 (a serial float sum is bound by the add's
  // latency: a quarter of ViT's softmax time); the lanes do not depend on v's alignment.
  float* e = buf.data();
  float sum = 0.f;
  int64_t i = 0;
#ifdef __AVX__
  const __m256 floor = _mm256_set1_ps(mx + kFloor);
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 masked = _mm256_cmp_ps(_mm256_loadu_ps(v + i), floor, _CMP_LT_OQ);
    const __m256 x = _mm256_andnot_ps(masked, _mm256_loadu_ps(e + i));
    _mm256_storeu_ps(e + i, x);
    acc = _mm256_add_ps(acc, x);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; i < n; ++i) {
    e[i] = v[i] < mx + kFloor ? 0.f : e[i];
    sum += e[i];
  }
  // Probabilities under FLT_MIN become 0: Eigen's exp clamps its input at about -88.4, so an
  // additive mask of f32_min (BERT's) gives FLT_MIN instead of libm's 0, and once normalised
  // that is a denormal that slows the following GEMM several-fold (BERT layer 23 -> 65 ms).
  // The change is below 1.2e-38 absolute.
  const float inv = 1.f / sum;  // sum >= 1: the max entry contributes exp(0)
  constexpr float kMin = std::numeric_limits<float>::min();
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float p = e[j] * inv;
    v[j] = p < kMin ? 0.f : p;
  }
}

RowEpilogue::RowEpilogue(const Epilogue& ep, int64_t n)
    : steps_(ep.steps, ep.out_shape, n, 1),
      post_(ep.post, ep.out_shape, n, 1),
      layer_norm_(ep.tail == EpTail::kLayerNorm),
      scale_(ep.ln_scale),
      shift_(ep.ln_shift),
      eps_(ep.ln_epsilon),
      n_(n) {
  assert(ep.tail != EpTail::kGlobalAvgPool && "GlobalAvgPool tail is conv-only");
  assert(!layer_norm_ || scale_ != nullptr);
}

// Row by row, so each row goes through steps, LayerNorm and post while it sits in L1.
void RowEpilogue::apply_rows(int64_t row0, int64_t rows, float* y, int64_t ld) const {
  for (int64_t r = 0; r < rows; ++r) {
    float* v = y + r * ld;
    const int64_t flat = (row0 + r) * n_;
    steps_.apply(flat, n_, v);
    if (layer_norm_) layer_norm_row(n_, scale_, shift_, eps_, v);
    post_.apply(flat, n_, v);
  }
}

}  // namespace fusert::cpu::detail

namespace fusert::cpu {

void norm_rows_fused(int64_t outer, int64_t inner, const float* x, const std::vector<EpilogueStep>& prologue,
                     RowNorm kind, const float* scale, const float* shift, float eps,
                     const std::vector<EpilogueStep>& post, float* y) {
  if (outer <= 0 || inner <= 0) return;
  assert(kind != RowNorm::kLayerNorm || scale != nullptr);
  const std::vector<int64_t> shape = {outer, inner};
  const detail::PreparedSteps pre(prologue, shape, inner, 1), after(post, shape, inner, 1);
  const int team = detail::team_size(outer * inner * 8);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < outer; ++r) {
    const float* src = x + r * inner;
    float* v = y + r * inner;
    if (src != v) std::copy(src, src + inner, v);
    pre.apply(r * inner, inner, v);
    if (kind == RowNorm::kLayerNorm) {
      detail::layer_norm_row(inner, scale, shift, eps, v);
    } else {
      detail::softmax_row(inner, v);
    }
    after.apply(r * inner, inner, v);
  }
}

}  // namespace fusert::cpu
