// ReverseSequence and Det (kernels/cpu/sequence_ops.h).
#include "kernels/cpu/sequence_ops.h"

#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

namespace fusert::cpu {

void reverse_sequence(int64_t steps, int64_t batch, int64_t time_stride, int64_t batch_stride, int64_t inner,
                      size_t esize, const int64_t* lens, const void* x, void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  const size_t run = static_cast<size_t>(inner) * esize;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = t < lens[b] ? lens[b] - 1 - t : t;
      std::memcpy(dst + static_cast<size_t>(t * time_stride + b * batch_stride) * esize,
                  src + static_cast<size_t>(from * time_stride + b * batch_stride) * esize, run);
    }
  }
}

void det(int64_t count, int64_t n, const float* x, float* y) {
  std::vector<double> a(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < count; ++m) {
    for (int64_t k = 0; k < n * n; ++k) a[static_cast<size_t>(k)] = x[m * n * n + k];
    double d = 1;
    for (int64_t c = 0; c < n && d != 0; ++c) {
      int64_t p = c;  // the largest pivot of column c
      for (int64_t r = c + 1; r < n; ++r)
        if (std::fabs(a[static_cast<size_t>(r * n + c)]) > std::fabs(a[static_cast<size_t>(p * n + c)])) p = r;
      if (p != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(a[static_cast<size_t>(p * n + k)], a[static_cast<size_t>(c * n + k)]);
        d = -d;
      }
      const double piv = a[static_cast<size_t>(c * n + c)];
      d *= piv;
      if (piv == 0) break;
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = a[static_cast<size_t>(r * n + c)] / piv;
        for (int64_t k = c; k < n; ++k) a[static_cast<size_t>(r * n + k)] -= f * a[static_cast<size_t>(c * n + k)];
      }
    }
    y[m] = static_cast<float>(d);
  }
}

}  // namespace fusert::cpu
