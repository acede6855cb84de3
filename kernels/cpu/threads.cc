// Thread-count control for every CPU kernel: one setting drives both the OpenMP loops in this
// folder and Eigen's internal GEMM threading, so the two never oversubscribe each other.
#include <Eigen/Core>
#include <algorithm>
#include <atomic>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <cstdlib>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

// 0 means "never set": follow OpenMP's default (OMP_NUM_THREADS or all cores).
std::atomic<int> g_num_threads{0};

// The default team: OMP_NUM_THREADS when set, else every core.
int all_cores() {
#ifdef _OPENMP
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env && std::atoi(env) > 0) return std::atoi(env);
  return omp_get_num_procs();
#else
  return 1;
#endif
}

}  // namespace

void set_num_threads(int n) {
  if (n <= 0) n = all_cores();
  g_num_threads.store(n, std::memory_order_relaxed);
#ifdef _OPENMP
  omp_set_num_threads(n);
#endif
  Eigen::setNbThreads(n);
}

int num_threads() {
  const int n = g_num_threads.load(std::memory_order_relaxed);
  if (n > 0) return n;
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace detail {

int team_size(int64_t work) {
  const int64_t by_work = work / kMinWorkPerThread;
  if (by_work <= 1) return 1;
  return static_cast<int>(std::min<int64_t>(by_work, num_threads()));
}

}  // namespace detail
}  // namespace fusert::cpu
