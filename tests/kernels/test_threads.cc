// Thread-count control: the setting round-trips, 0 means all cores, and kernels that take a
// different path per team size (grouped conv, batched matmul, im2col) agree across settings.
#include <doctest/doctest.h>
#include <omp.h>

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

TEST_CASE("threads: set_num_threads round-trips and 0 means all cores") {
  cpu::set_num_threads(1);
  CHECK(cpu::num_threads() == 1);
  cpu::set_num_threads(3);
  CHECK(cpu::num_threads() == 3);
  cpu::set_num_threads(0);
  CHECK(cpu::num_threads() == omp_get_num_procs());
}

TEST_CASE("threads: results agree between one thread and a team") {
  cpu::set_num_threads(1);
  const auto conv_1 = conv_outputs();
  const auto mm_1 = matmul_output();
  cpu::set_num_threads(2);
  const auto conv_2 = conv_outputs();
  const auto mm_2 = matmul_output();
  cpu::set_num_threads(0);
  CHECK(max_rel_err(conv_2, conv_1) <= 1e-6);
  CHECK(max_rel_err(mm_2, mm_1) <= 1e-6);
}
