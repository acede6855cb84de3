// Gemm and MatMul: hand-computed cases, then every transpose / C-broadcast combination and
// batch-broadcast layout against a naive double-precision loop.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

// A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]: A*B = [[58,64],[139,154]].
const std::vector<float> kA = {1, 2, 3, 4, 5, 6};
const std::vector<float> kB = {7, 8, 9, 10, 11, 12};
const std::vector<float> kAt = {1, 4, 2, 5, 3, 6};     // A^T, [3,2]
const std::vector<float> kBt = {7, 9, 11, 8, 10, 12};  // B^T, [2,3]

std::vector<float> run_gemm(const cpu::GemmParams& p, const std::vector<float>& a, const std::vector<float>& b,
                            const float* c) {
  std::vector<float> y(static_cast<size_t>(p.m * p.n), -777.f);
  cpu::gemm(p, a.data(), b.data(), c, y.data());
  return y;
}

cpu::GemmParams params_2x2x3() {
  cpu::GemmParams p;
  p.m = 2, p.n = 2, p.k = 3;
  return p;
}

// Reference: alpha * op(A) op(B) + beta * C, accumulated in double.
std::vector<float> naive_gemm(const cpu::GemmParams& p, const std::vector<float>& a, const std::vector<float>& b,
                              const float* c) {
  std::vector<float> y(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < p.k; ++l) {
        const double av = p.trans_a ? a[l * p.m + i] : a[i * p.k + l];
        const double bv = p.trans_b ? b[j * p.k + l] : b[l * p.n + j];
        acc += av * bv;
      }
      double cv = 0;
      if (c != nullptr) cv = c[(p.c_rows == 1 ? 0 : i) * p.c_cols + (p.c_cols == 1 ? 0 : j)];
      y[i * p.n + j] = static_cast<float>(p.alpha * acc + p.beta * cv);
    }
  }
  return y;
}

}  // namespace

TEST_CASE("gemm: hand-computed product without C") {
  expect_values(run_gemm(params_2x2x3(), kA, kB, nullptr), {58, 64, 139, 154});
}

TEST_CASE("gemm: trans_a and trans_b read the transposed layouts") {
  cpu::GemmParams p = params_2x2x3();
  p.trans_a = true;
  expect_values(run_gemm(p, kAt, kB, nullptr), {58, 64, 139, 154});
  p.trans_b = true;
  expect_values(run_gemm(p, kAt, kBt, nullptr), {58, 64, 139, 154});
  p.trans_a = false;
  expect_values(run_gemm(p, kA, kBt, nullptr), {58, 64, 139, 154});
}

TEST_CASE("gemm: alpha, beta and every C broadcast shape") {
  cpu::GemmParams p = params_2x2x3();
  SUBCASE("C [N] -> [1,N], alpha 2, beta 0.5") {
    p.alpha = 2.f, p.beta = 0.5f, p.c_rows = 1, p.c_cols = 2;
    const float c[] = {10, 20};  // 2*58 + 5, 2*64 + 10, 2*139 + 5, 2*154 + 10
    expect_values(run_gemm(p, kA, kB, c), {121, 138, 283, 318});
  }
  SUBCASE("C [M,1]") {
    p.c_rows = 2, p.c_cols = 1;
    const float c[] = {100, 200};
    expect_values(run_gemm(p, kA, kB, c), {158, 164, 339, 354});
  }
  SUBCASE("C scalar [1,1], beta 2") {
    p.beta = 2.f, p.c_rows = 1, p.c_cols = 1;
    const float c[] = {3};
    expect_values(run_gemm(p, kA, kB, c), {64, 70, 145, 160});
  }
  SUBCASE("C [M,N], beta -1") {
    p.beta = -1.f, p.c_rows = 2, p.c_cols = 2;
    const float c[] = {1, 2, 3, 4};
    expect_values(run_gemm(p, kA, kB, c), {57, 62, 136, 150});
  }
  SUBCASE("beta 0 ignores C, even a NaN C") {
    p.beta = 0.f, p.c_rows = 1, p.c_cols = 1;
    const float c[] = {std::numeric_limits<float>::quiet_NaN()};
    expect_values(run_gemm(p, kA, kB, c), {58, 64, 139, 154});
  }
}

TEST_CASE("gemm: K == 0 leaves beta * C (or zeros)") {
  cpu::GemmParams p;
  p.m = 2, p.n = 3, p.k = 0, p.beta = 2.f, p.c_rows = 1, p.c_cols = 3;
  const float c[] = {1, 2, 3};
  expect_values(run_gemm(p, {}, {}, c), {2, 4, 6, 2, 4, 6});
  expect_values(run_gemm(p, {}, {}, nullptr), {0, 0, 0, 0, 0, 0});
}

TEST_CASE("gemm: matches naive loop over odd sizes, transposes and C shapes") {
  const int64_t sizes[][3] = {{1, 1, 1},    {3, 1, 13},      {1, 127, 3}, {13, 3, 127},
                              {127, 13, 1}, {127, 127, 127}, {3, 13, 13}, {13, 127, 3}};
  uint32_t seed = 1;
  for (const auto& s : sizes) {
    for (int trans = 0; trans < 4; ++trans) {
      for (int c_kind = 0; c_kind < 5; ++c_kind) {  // none, [1,1], [1,N], [M,1], [M,N]
        cpu::GemmParams p;
        p.m = s[0], p.n = s[1], p.k = s[2];
        p.trans_a = trans & 1, p.trans_b = trans & 2;
        p.alpha = 0.7f, p.beta = -1.3f;
        p.c_rows = (c_kind >= 3) ? p.m : 1;
        p.c_cols = (c_kind == 2 || c_kind == 4) ? p.n : 1;
        const auto a = random_floats(p.m * p.k, seed++);
        const auto b = random_floats(p.k * p.n, seed++);
        const auto c = random_floats(p.c_rows * p.c_cols, seed++);
        const float* c_ptr = c_kind == 0 ? nullptr : c.data();
        INFO("m=" << p.m << " n=" << p.n << " k=" << p.k << " trans=" << trans << " c_kind=" << c_kind);
        CHECK(max_rel_err(run_gemm(p, a, b, c_ptr), naive_gemm(p, a, b, c_ptr)) <= kTol);
      }
    }
  }
}

TEST_CASE("matmul: hand-computed batch broadcast of B and of A") {
  // B broadcast over 2 batches of A: [[1,2],[3,4]]*[[5,6],[7,8]] and [[0,1],[1,0]]*[[5,6],[7,8]].
  cpu::MatMulParams p;
  p.batch = 2, p.m = 2, p.n = 2, p.k = 2;
  p.b_batch_index = {0, 0};
  std::vector<float> y(8);
  const std::vector<float> a = {1, 2, 3, 4, 0, 1, 1, 0}, b = {5, 6, 7, 8};
  cpu::matmul(p, a.data(), b.data(), y.data());
  expect_values(y, {19, 22, 43, 50, 7, 8, 5, 6});

  // A broadcast: [[1,2],[3,4]] times B0 = [[5,6],[7,8]] and B1 = identity.
  p.b_batch_index = {0, 1};
  p.a_batch_index = {0, 0};
  const std::vector<float> b2 = {5, 6, 7, 8, 1, 0, 0, 1};
  cpu::matmul(p, a.data(), b2.data(), y.data());
  expect_values(y, {19, 22, 43, 50, 1, 2, 3, 4});
}

TEST_CASE("matmul: [2,1,M,K] x [1,3,K,N] broadcast matches naive loop") {
  const int64_t sizes[][3] = {{1, 1, 1}, {3, 13, 1}, {13, 3, 127}, {127, 13, 3}, {127, 127, 13}};
  uint32_t seed = 100;
  for (const auto& s : sizes) {
    cpu::MatMulParams p;
    p.batch = 6, p.m = s[0], p.n = s[1], p.k = s[2];
    for (int64_t i = 0; i < p.batch; ++i) {
      p.a_batch_index.push_back(i / 3);  // A has batch dims [2,1]
      p.b_batch_index.push_back(i % 3);  // B has batch dims [1,3]
    }
    const auto a = random_floats(2 * p.m * p.k, seed++);
    const auto b = random_floats(3 * p.k * p.n, seed++);
    std::vector<float> y(static_cast<size_t>(p.batch * p.m * p.n)), ref;
    cpu::matmul(p, a.data(), b.data(), y.data());
    for (int64_t i = 0; i < p.batch; ++i) {
      cpu::GemmParams g;
      g.m = p.m, g.n = p.n, g.k = p.k;
      const std::vector<float> ai(a.begin() + p.a_batch_index[i] * p.m * p.k,
                                  a.begin() + (p.a_batch_index[i] + 1) * p.m * p.k);
      const std::vector<float> bi(b.begin() + p.b_batch_index[i] * p.k * p.n,
                                  b.begin() + (p.b_batch_index[i] + 1) * p.k * p.n);
      const auto r = naive_gemm(g, ai, bi, nullptr);
      ref.insert(ref.end(), r.begin(), r.end());
    }
    INFO("m=" << p.m << " n=" << p.n << " k=" << p.k);
    CHECK(max_rel_err(y, ref) <= kTol);
  }
}

TEST_CASE("matmul: identity batches and a shared B (folded into one GEMM) match naive") {
  for (bool shared_b : {false, true}) {
    cpu::MatMulParams p;
    p.batch = 5, p.m = 13, p.n = 3, p.k = 127;
    if (shared_b) p.b_batch_index.assign(5, 0);
    const int64_t b_batches = shared_b ? 1 : 5;
    const auto a = random_floats(p.batch * p.m * p.k, 7);
    const auto b = random_floats(b_batches * p.k * p.n, 8);
    std::vector<float> y(static_cast<size_t>(p.batch * p.m * p.n)), ref;
    cpu::matmul(p, a.data(), b.data(), y.data());
    for (int64_t i = 0; i < p.batch; ++i) {
      cpu::GemmParams g;
      g.m = p.m, g.n = p.n, g.k = p.k;
      const int64_t bi = shared_b ? 0 : i;
      const std::vector<float> ai(a.begin() + i * p.m * p.k, a.begin() + (i + 1) * p.m * p.k);
      const std::vector<float> bv(b.begin() + bi * p.k * p.n, b.begin() + (bi + 1) * p.k * p.n);
      const auto r = naive_gemm(g, ai, bv, nullptr);
      ref.insert(ref.end(), r.begin(), r.end());
    }
    INFO("shared_b=" << shared_b);
    CHECK(max_rel_err(y, ref) <= kTol);
  }
}
