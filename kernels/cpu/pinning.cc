// Core pinning for one inference whose team spans every core the calling thread may use. libgomp
// keeps a finished team's threads spinning for a while (about 300,000 pause iterations by
// default); when the next inference wakes its calling thread on a core where a team thread still
// spins, the two share one core until the scheduler moves one, and a 3 ms run takes 10-25 ms
// (measured on a 2-core VM with idle gaps between runs). Pinning team thread t to the t-th allowed
// core, the calling thread to the first for the duration of the run, rules that out, as
// OpenVINO's latency mode does for its own threads. Runs that overlap in one process (sessions
// on several threads) are not pinned: pinned, their calling threads would share one core.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdlib>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {
namespace {

// The cores this calling thread's OpenMP pool was last pinned to, thread t to core t (each host
// thread that opens parallel regions has a pool of its own). The pool's threads stay pinned
// after the run: re-pinning every run would cost a parallel region.
thread_local std::vector<int> t_pool_pinned;

// Pinned runs in flight in this process (0 or 1).
std::atomic<int> g_pinned_runs{0};

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

bool pin_self(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

// OMP_PLACES alone turns libgomp's binding on too.
bool user_binds_threads() {
  return std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES") || std::getenv("GOMP_CPU_AFFINITY");
}

}  // namespace

CorePinScope::CorePinScope(int n) {
#ifdef _OPENMP
  if (n < 2 || omp_in_parallel() || user_binds_threads()) return;
  std::vector<int> cpus = allowed_cpus();
  if (static_cast<int>(cpus.size()) != n) return;  // a smaller team shares the machine: left alone
  int none = 0;
  if (!g_pinned_runs.compare_exchange_strong(none, 1)) return;  // another run is pinned now
  if (t_pool_pinned != cpus) {                                  // first run, or the caller's cores changed since
#pragma omp parallel num_threads(n)
    {
      const int t = omp_get_thread_num();
      if (t > 0) pin_self(cpus[static_cast<size_t>(t)]);
    }
    t_pool_pinned = cpus;
  }
  if (pin_self(cpus[0])) {
    prev_ = std::move(cpus);
  } else {
    g_pinned_runs.store(0);
  }
#else
  (void)n;
#endif
}

CorePinScope::~CorePinScope() {
  if (prev_.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : prev_) CPU_SET(c, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  g_pinned_runs.store(0);
}

}  // namespace fusert::cpu
