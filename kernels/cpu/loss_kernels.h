// CPU kernel of ONNX's NegativeLogLikelihoodLoss (SoftmaxCrossEntropyLoss imports as LogSoftmax
// followed by it). An opaque op: one pass over the targets, never inside a fusion group. The
// kernel sees buffers and parameters only; targets were range-checked by the step before it runs.
#pragma once

#include <cstdint>

namespace fusert::cpu {

/// Reduction of a loss: none (one loss per sample), sum, or mean (weighted).
enum class LossReduce { kNone, kSum, kMean };

/// The [N, C, D] view of a loss input [N, C, d1, .., dk] (D = d1 * .. * dk, 1 for k = 0); the
/// targets are [N, D].
struct NllView {
  int64_t n = 1, c = 1, d = 1;
};

/// ONNX NegativeLogLikelihoodLoss: loss[n, d] = -x[n, t, d] * w[t] with t = target[n, d] (i64,
/// or i32 when `target_i32`), w = `weight` ([C]) or 1 when null; 0 where t == ignore_index (when
/// `has_ignore`). kNone writes the N * D losses to `y`; kSum their sum to y[0]; kMean
/// sum / sum of w[t] over the samples not ignored (NaN when every sample is ignored), as ONNX's
/// reference computes it. Sums accumulate in double. Every target not ignored is in [0, C).
void nll_loss(const NllView& v, const float* x, const void* target, bool target_i32, const float* weight,
              bool has_ignore, int64_t ignore_index, LossReduce r, float* y);

}  // namespace fusert::cpu
