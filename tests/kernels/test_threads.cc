// Thread-count control: the setting round-trips, 0 means all cores, and kernels that take a
// different path per team size (grouped conv, batched matmul, im2col) agree across settings.
#include <doctest/doctest.h>

#include <omp.h>
#include <cstdlib>

#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

// A grouped and an ungrouped conv big enough to fork a team, run under the current setting.
std::vector<float> conv_outputs() {
  std::vector<float> out;
  for (int64_t group : {1, 4}) {
    cpu::ConvParams p;
    p.n = 2, p.c = 8, p.h = p.w = 31, p.m = 8, p.kh = p.kw = 3, p.group = group;
    p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
    p.oh = p.h, p.ow = p.w;
    const auto x = random_floats(p.n * p.c * p.h * p.w, 1);
    const auto w = random_floats(p.m * (p.c / group) * 9, 2);
    std::vector<float> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
    cpu::conv2d(p, x.data(), w.data(), nullptr, y.data());
    out.insert(out.end(), y.begin(), y.end());
  }
  return out;
}

std::vector<float> matmul_output() {
  cpu::MatMulParams p;
  p.batch = 64, p.m = 13, p.n = 13, p.k = 13;
  const auto a = random_floats(p.batch * p.m * p.k, 3), b = random_floats(p.batch * p.k * p.n, 4);
  std::vector<float> y(static_cast<size_t>(p.batch * p.m * p.n));
  cpu::matmul(p, a.data(), b.data(), y.data());
  return y;
}

}  // namespace

TEST_CASE("threads: ThreadScope nests, restores the previous count, and 0 means all cores") {
  omp_set_num_threads(5);  // the caller's own setting: a sentinel that must survive
  {
    cpu::ThreadScope one(1);
    CHECK(cpu::num_threads() == 1);
    {
      cpu::ThreadScope three(3);
      CHECK(cpu::num_threads() == 3);
      CHECK(omp_get_max_threads() == 3);
    }
    CHECK(cpu::num_threads() == 1);
    cpu::ThreadScope all(0);
    CHECK(cpu::num_threads() ==
          (std::getenv("OMP_NUM_THREADS") ? std::atoi(std::getenv("OMP_NUM_THREADS")) : omp_get_num_procs()));
  }
  CHECK(omp_get_max_threads() == 5);
  CHECK(cpu::num_threads() == 5);
}

TEST_CASE("threads: results agree between one thread and a team") {
  std::vector<float> conv_1, mm_1, conv_2, mm_2;
  {
    cpu::ThreadScope one(1);
    conv_1 = conv_outputs();
    mm_1 = matmul_output();
  }
  {
    cpu::ThreadScope two(2);
    conv_2 = conv_outputs();
    mm_2 = matmul_output();
  }
  CHECK(max_rel_err(conv_2, conv_1) <= 1e-6);
  CHECK(max_rel_err(mm_2, mm_1) <= 1e-6);
}
