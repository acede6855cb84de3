// Thread-count control for every CPU kernel, per calling thread: one count drives both the
// OpenMP loops in this folder and Eigen's internal GEMM threading (through the calling thread's
// OpenMP nthreads ICV), so the two never oversubscribe each other, and sessions on different
// threads never see each other's count. No process-wide setting is ever changed.
#include <Eigen/Core>
#include <algorithm>

#ifdef _OPENMP
#include <omp.h>
#endif

#include <cstdlib>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

// 0 means "no scope on this thread": follow OpenMP's default (OMP_NUM_THREADS or all cores).
thread_local int t_num_threads = 0;

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

ThreadScope::ThreadScope(int n) : prev_(t_num_threads) {
  if (n <= 0) n = all_cores();
  t_num_threads = n;
#ifdef _OPENMP
  prev_omp_ = omp_get_max_threads();  // the calling thread's ICV only (OpenMP 5.0, 2.4.1)
  omp_set_num_threads(n);
#endif
}

ThreadScope::~ThreadScope() {
  t_num_threads = prev_;
#ifdef _OPENMP
  omp_set_num_threads(prev_omp_);
#endif
}

int num_threads() {
  if (t_num_threads > 0) return t_num_threads;
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
