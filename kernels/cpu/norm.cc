// Inference BatchNormalization over [N, C, spatial] planes with per-channel statistics, and
// InstanceNormalization with each plane's own.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

// y = (x - mean) * (scale / sqrt(var + eps)) + bias. Subtracting the mean before scaling keeps
// precision when |mean| is large next to the spread of x; folding mean into the bias does not.
void batch_norm(int64_t n, int64_t c, int64_t spatial, const float* x, const float* scale, const float* bias,
                const float* mean, const float* var, float epsilon, float* y) {
  if (n <= 0 || c <= 0 || spatial <= 0) return;
  std::vector<float> mul(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) mul[ch] = scale[ch] / std::sqrt(var[ch] + epsilon);
  const int64_t planes = n * c;
  const int team = detail::team_size(planes * spatial);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    const int64_t ch = i % c;
    const float m = mean[ch], s = mul[ch], b = bias[ch];
    const float* src = x + i * spatial;
    float* dst = y + i * spatial;
    for (int64_t j = 0; j < spatial; ++j) dst[j] = (src[j] - m) * s + b;
  }
}

// Two passes per plane in double (mean, then the squared deviations): a one-pass E[x^2] - E[x]^2
// cancels when |mean| is large next to the spread.
void instance_norm(int64_t n, int64_t c, int64_t spatial, const float* x, const float* scale, const float* bias,
                   float epsilon, float* y) {
  if (n <= 0 || c <= 0 || spatial <= 0) return;
  const int64_t planes = n * c;
  const int team = detail::team_size(planes * spatial * 3);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < planes; ++i) {
    const int64_t ch = i % c;
    const float* src = x + i * spatial;
    float* dst = y + i * spatial;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < spatial; ++j) sum += src[j];
    const double mean = sum / static_cast<double>(spatial);
    for (int64_t j = 0; j < spatial; ++j) sq += (src[j] - mean) * (src[j] - mean);
    const double var = sq / static_cast<double>(spatial);
    const float s = static_cast<float>(scale[ch] / std::sqrt(var + static_cast<double>(epsilon)));
    const float m = static_cast<float>(mean), b = bias[ch];
    for (int64_t j = 0; j < spatial; ++j) dst[j] = (src[j] - m) * s + b;
  }
}

}  // namespace fusert::cpu
