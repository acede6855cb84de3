// Core pinning for a run that spans every allowed core (cpu::CorePinScope): on a thread limited
// to two cores, a two-thread scope pins the calling thread to the first core and team thread 1 to
// the second, and gives the calling thread its two-core mask back on exit; other team sizes and a
// user's OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY leave every mask alone, and so does a
// run while another is pinned; the pool follows a change of the caller's cores.
#include <doctest/doctest.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace cpu = fusert::cpu;

namespace {

std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  pthread_getaffinity_np(pthread_self(), sizeof set, &set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void limit_to(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0);
}

// Each team thread's cores inside a parallel region of `n` threads.
std::vector<std::vector<int>> team_cpus(int n) {
  std::vector<std::vector<int>> out(static_cast<size_t>(n));
#pragma omp parallel num_threads(n)
  out[static_cast<size_t>(omp_get_thread_num())] = my_cpus();
  return out;
}

}  // namespace

TEST_CASE("core pinning: a run over every allowed core pins each thread to one core and restores the caller") {
  const std::vector<int> all = my_cpus();
  if (all.size() < 2) {
    MESSAGE("skipped: this process may run on " << all.size() << " core(s); pinning needs two");
    return;
  }
  const std::vector<int> two = {all[0], all[1]};
  std::thread([&] {  // a fresh thread: its own OpenMP pool, nothing pinned yet
    limit_to(two);
    {
      cpu::CorePinScope one(1), three(3);  // not the number of allowed cores: nothing changes
      CHECK(my_cpus() == two);
      for (const auto& t : team_cpus(2)) CHECK(t == two);
    }
    for (const char* user : {"OMP_PROC_BIND", "OMP_PLACES", "GOMP_CPU_AFFINITY"}) {
      CAPTURE(user);
      setenv(user, "0", 1);  // the user binds (or not) threads: left alone
      {
        cpu::CorePinScope s(2);
        CHECK(my_cpus() == two);
      }
      unsetenv(user);
    }
    {
      cpu::CorePinScope s(2);
      CHECK(my_cpus() == std::vector<int>{two[0]});
      const auto team = team_cpus(2);
      CHECK(team[0] == std::vector<int>{two[0]});
      CHECK(team[1] == std::vector<int>{two[1]});
    }
    CHECK(my_cpus() == two);
    cpu::CorePinScope again(2);  // the pool is pinned already; the caller is pinned again
    CHECK(my_cpus() == std::vector<int>{two[0]});
  })
      .join();
  CHECK(my_cpus() == all);  // the test's own thread never changed
}

TEST_CASE("core pinning: a run that overlaps a pinned run is not pinned") {
  const std::vector<int> all = my_cpus();
  if (all.size() < 2) {
    MESSAGE("skipped: this process may run on " << all.size() << " core(s); pinning needs two");
    return;
  }
  const std::vector<int> two = {all[0], all[1]};
  std::thread([&] {
    limit_to(two);
    cpu::CorePinScope first(2);
    CHECK(my_cpus() == std::vector<int>{two[0]});
    std::thread([&] {
      limit_to(two);
      cpu::CorePinScope second(2);
      CHECK(my_cpus() == two);
    }).join();
  }).join();
  std::thread([&] {  // the first run is over: pinning is free again
    limit_to(two);
    cpu::CorePinScope next(2);
    CHECK(my_cpus() == std::vector<int>{two[0]});
  })
      .join();
}

TEST_CASE("core pinning: the pool is pinned again when the caller's cores change, not only their count") {
  const std::vector<int> all = my_cpus();
  if (all.size() < 3) {
    MESSAGE("skipped: this process may run on " << all.size() << " core(s); the case needs three");
    return;
  }
  std::thread([&] {
    limit_to({all[0], all[1]});
    { cpu::CorePinScope first(2); }
    limit_to({all[0], all[2]});
    cpu::CorePinScope second(2);
    const auto team = team_cpus(2);
    CHECK(team[0] == std::vector<int>{all[0]});
    CHECK(team[1] == std::vector<int>{all[2]});
  }).join();
}
