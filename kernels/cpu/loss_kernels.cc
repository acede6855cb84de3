// NegativeLogLikelihoodLoss (kernels/cpu/loss_kernels.h).
#include "kernels/cpu/loss_kernels.h"

namespace fusert::cpu {

void nll_loss(const NllView& v, const float* x, const void* target, bool target_i32, const float* weight,
              bool has_ignore, int64_t ignore_index, LossReduce r, float* y) {
  double sum = 0, weights = 0;
  for (int64_t n = 0; n < v.n; ++n) {
    for (int64_t d = 0; d < v.d; ++d) {
      const int64_t k = n * v.d + d;
      const int64_t t = target_i32 ? static_cast<const int32_t*>(target)[k] : static_cast<const int64_t*>(target)[k];
      float loss = 0.f, w = 0.f;
      if (!has_ignore || t != ignore_index) {
        w = weight ? weight[t] : 1.f;
        loss = -x[(n * v.c + t) * v.d + d] * w;
      }
      if (r == LossReduce::kNone) y[k] = loss;
      sum += loss;
      weights += w;
    }
  }
  if (r == LossReduce::kSum) y[0] = static_cast<float>(sum);
  if (r == LossReduce::kMean) y[0] = static_cast<float>(sum / weights);
}

}  // namespace fusert::cpu
