// The index helpers of kernels/common/params.h.
#include "kernels/common/params.h"

namespace fusert::kern {

BatchPattern batch_pattern(const std::vector<int64_t>& index) {
  bool seq = true, zero = true;
  for (size_t i = 0; i < index.size(); ++i) {
    seq &= index[i] == static_cast<int64_t>(i);
    zero &= index[i] == 0;
  }
  if (index.empty()) return BatchPattern::kPerBatch;
  return zero ? BatchPattern::kShared : seq ? BatchPattern::kPerBatch : BatchPattern::kIrregular;
}

bool resize_axis_is_identity(const ResizeAxis& a, int64_t len) {
  for (int64_t o = 0; o < len; ++o) {
    float w = 0.0f;
    for (int t = 0; t < a.taps; ++t) {
      const size_t e = static_cast<size_t>(o * a.taps + t);
      if (a.weight[e] != 0.0f && a.index[e] != o) return false;
      if (a.index[e] == o) w += a.weight[e];
    }
    if (w != 1.0f) return false;
  }
  return true;
}

}  // namespace fusert::kern
