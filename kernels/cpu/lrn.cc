// LRN (kernels/cpu/lrn.h).
#include "kernels/cpu/lrn.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

void lrn(const LrnParams& p, const float* x, float* y) {
  const int64_t lo = (p.size - 1) / 2, hi = p.size - 1 - lo;
  const int team = detail::team_size(p.n * p.c * p.s * p.size);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const int64_t n = nc / p.c, c = nc % p.c;
    std::vector<double> sq(static_cast<size_t>(p.s), 0.0);
    for (int64_t k = std::max<int64_t>(0, c - lo); k <= std::min(p.c - 1, c + hi); ++k) {
      const float* row = x + (n * p.c + k) * p.s;
      for (int64_t i = 0; i < p.s; ++i) sq[static_cast<size_t>(i)] += static_cast<double>(row[i]) * row[i];
    }
    const float* src = x + nc * p.s;
    float* dst = y + nc * p.s;
    const double scale = static_cast<double>(p.alpha) / static_cast<double>(p.size);
    for (int64_t i = 0; i < p.s; ++i)
      dst[i] = static_cast<float>(src[i] / std::pow(p.bias + scale * sq[static_cast<size_t>(i)], p.beta));
  }
}

}  // namespace fusert::cpu
