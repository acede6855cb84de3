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

#if defined(__AVX2__) && defined(__FMA__)
// exp(x) for x in [-87, 0] (softmax's shifted, clamped scores), within 1 ulp of exp in double
// (checked densely over the range): x = n ln 2 + r with |r| <= ln 2 / 2 (ln 2 in two parts),
// e^r by Cephes' expf polynomial, 2^n built in the exponent bits (n >= -126: never denormal).
// Half the time of Eigen's generic packet exp, whose ldexp also covers exponents we never see.
static inline __m256 exp_nonpositive(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.f));
  const __m256i two_n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(two_n));
}
#endif

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
  // Every entry -inf (a fully masked row): zeros, never NaN. A deliberate divergence: ONNX's
  // formula gives NaN there, as ONNX Runtime 1.32 does; a padded query row then reads 0.
  if (mx == kNegInf) {
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
  // Finite max: a vectorised exp (within a few ulps of libm; attention spent most of its time in
  // scalar expf). Its input clamp would turn exp(-inf) into a tiny number instead of 0, so
  // masked (-inf) entries are selected to exactly 0: 0 * an infinite V stays NaN, as unfused.
  // Without AVX2: Eigen's exp into an Eigen-aligned per-thread buffer (its select() is not
  // vectorised; no leading elements peeled off to the scalar exp whatever v's alignment). Either
  // way the row's result is the same bits in every run and on every thread.
  // Inputs more than 87 below the max (down to -inf: a masked entry) give probabilities under
  // FLT_MIN; they are set to exactly 0 below, and clamped before the exp so that it never makes
  // a denormal either: denormal arithmetic took BERT's attention 3.8 ms of which the GEMMs needed
  // a fraction (an additive mask of -10000 sends every masked score there).
  constexpr float kFloor = -87.0f;  // exp(-87) = 1.6e-38 is still normal
#if defined(__AVX2__) && defined(__FMA__)
  // One pass, eight lanes from element 0 (a short last run padded with -inf): the shifted,
  // clamped exp (exp_nonpositive, within 1 ulp), masked entries selected to 0, stored in place
  // and summed in eight float lanes (a serial float sum is bound by the add's latency), the lanes
  // added into a double every 512 elements (a float lane over a 30,000-long row drifted by
  // 2.7e-5). Same bits in every run and on every thread, whatever v's alignment.
  float* e = v;
  const __m256 vmx = _mm256_set1_ps(mx), vfloor = _mm256_set1_ps(kFloor);
  __m256 acc = _mm256_setzero_ps();
  double total = 0;
  auto flush = [&] {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc);
    for (float l : lanes) total += l;
    acc = _mm256_setzero_ps();
  };
  auto lanes_exp = [&](const float* in, float* out) {
    const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(in), vmx);
    const __m256 masked = _mm256_cmp_ps(x, vfloor, _CMP_LT_OQ);
    const __m256 ex = _mm256_andnot_ps(masked, exp_nonpositive(_mm256_max_ps(x, vfloor)));
    _mm256_storeu_ps(out, ex);
    acc = _mm256_add_ps(acc, ex);
  };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    lanes_exp(v + i, v + i);
    if ((i + 8) % 512 == 0) flush();
  }
  if (i < n) {
    alignas(32) float tail[8];
    std::fill(tail, tail + 8, kNegInf);
    std::copy(v + i, v + n, tail);
    lanes_exp(tail, tail);
    std::copy(tail, tail + (n - i), v + i);
  }
  flush();
  const float sum = static_cast<float>(total);
#else
  thread_local Eigen::ArrayXf buf;
  if (buf.size() < n) buf.resize(n);
  Eigen::Map<Eigen::ArrayXf> a(v, n);
  buf.head(n) = (a - mx).max(kFloor).exp();
  float* e = buf.data();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    e[i] = v[i] < mx + kFloor ? 0.f : e[i];
    total += e[i];
  }
  const float sum = static_cast<float>(total);
#endif
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
