// Internal OpenMP sizing shared by the CPU kernel files (not part of the public interface).
// A team is only forked when each thread gets enough work to pay for the fork/join.
#pragma once

#include <omp.h>
#include <Eigen/Core>
#include <cstdint>

namespace fusert::cpu::detail {

/// Elements (or multiply-adds) a thread should own before a loop is worth splitting.
constexpr int64_t kMinWorkPerThread = 1 << 14;

/// Threads to use for a loop doing `work` units: 1 for small loops, at most num_threads().
/// Use as `#pragma omp parallel for num_threads(team) if (team > 1)`.
int team_size(int64_t work);

/// While alive (and `active`), Eigen's GEMM runs on the calling thread. Kernels that thread
/// over their own tiles use it when their team is 1: an Eigen team forked inside an inactive
/// `omp parallel if (false)` region is a nested team whose threads are created on every call.
/// It sets only the calling thread's OpenMP nthreads ICV (which Eigen reads) and restores it,
/// so concurrent inferences on other threads are unaffected.
class SerialEigen {
 public:
  explicit SerialEigen(bool active) : prev_(active && !omp_in_parallel() ? omp_get_max_threads() : 0) {
    if (prev_ > 1) omp_set_num_threads(1);
  }
  ~SerialEigen() {
    if (prev_ > 1) omp_set_num_threads(prev_);
  }
  SerialEigen(const SerialEigen&) = delete;
  SerialEigen& operator=(const SerialEigen&) = delete;

 private:
  int prev_;
};

/// Ceiling division for a possibly negative numerator and a positive denominator.
inline int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

/// Output positions o in [0, out_len) whose tap o * stride + offset lands in [0, in_len):
/// the half-open range [*lo, *hi). Lets window loops run without per-element bounds checks.
inline void valid_outputs(int64_t offset, int64_t stride, int64_t in_len, int64_t out_len, int64_t* lo, int64_t* hi) {
  int64_t l = ceil_div(-offset, stride);
  int64_t h = ceil_div(in_len - offset, stride);
  l = l < 0 ? 0 : (l > out_len ? out_len : l);
  h = h < l ? l : (h > out_len ? out_len : h);
  *lo = l;
  *hi = h;
}

}  // namespace fusert::cpu::detail
