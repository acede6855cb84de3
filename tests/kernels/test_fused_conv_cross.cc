// Cross-group conv kernels against naive compositions: conv2d_sum_fused = conv + conv + bias +
// epilogue, and conv2d_branch_merge = two branch convs (one a 1x1 zero-padded to 3x3 in the
// stacked weights, checked against the real 1x1 conv) with per-branch epilogues, add or concat.
#include <doctest/doctest.h>

#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/test_fused_reference.h"

namespace cpu = fusert::cpu;
namespace ft = fusert::test;
using cpu::EpOp;
using cpu::OperandMode;
using ft::expect_values;
using ft::kTol;
using ft::max_rel_err;
using ft::random_floats;

namespace {

struct SumCase {
  const char* name;
  cpu::ConvParams p1, p2;
};

void check_sum(const SumCase& k, bool pooled) {
  const cpu::ConvParams &p1 = k.p1, &p2 = k.p2;
  const auto x1 = random_floats(p1.n * p1.c * p1.h * p1.w, 1), x2 = random_floats(p2.n * p2.c * p2.h * p2.w, 2);
  const auto w1 = random_floats(p1.m * p1.c / p1.group * p1.kh * p1.kw, 3);
  const auto w2 = random_floats(p2.m * p2.c / p2.group * p2.kh * p2.kw, 4);
  const auto bias = random_floats(p1.m, 5), scale = random_floats(p1.m, 6);
  cpu::Epilogue ep;
  ep.out_shape = {p1.n, p1.m, p1.oh, p1.ow};
  ep.steps = {ft::tensor_step(EpOp::kMulTensor, scale.data(), OperandMode::kPerChannel), ft::unary_step(EpOp::kRelu)};
  if (pooled) ep.tail = cpu::EpTail::kGlobalAvgPool;
  const int64_t plane = p1.oh * p1.ow;
  auto sum = ft::ref_conv(p1, x1.data(), w1.data(), bias.data());
  const auto second = ft::ref_conv(p2, x2.data(), w2.data(), nullptr);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += second[i];
  const auto ref = ft::ref_conv_epilogue(ep, p1.n, p1.m, plane, sum);
  std::vector<float> got(ref.size(), -777.f);
  cpu::conv2d_sum_fused(p1, x1.data(), w1.data(), p2, x2.data(), w2.data(), bias.data(), ep, got.data());
  INFO(k.name << (pooled ? " pooled" : ""));
  CHECK(max_rel_err(got, ref) <= kTol);
}

// Stacked weights [2M, C/g, 3, 3]: branch A's 3x3 kernels, then branch B's 1x1 kernels at the
// centre tap (zero elsewhere), as the planner balances a 3x3 | 1x1 split.
std::vector<float> stack_weights(const std::vector<float>& wa, const std::vector<float>& wb, int64_t half, int64_t cg) {
  std::vector<float> w(wa);
  w.resize(static_cast<size_t>(2 * half * cg * 9), 0.f);
  for (int64_t i = 0; i < half * cg; ++i) w[static_cast<size_t>((half * cg + i) * 9 + 4)] = wb[static_cast<size_t>(i)];
  return w;
}

// Per-branch epilogues and the merge applied to branch outputs a, b ([n, half, plane] each).
struct MergeEps {
  std::vector<float> scale, shift;
  cpu::Epilogue a, b, m;
  MergeEps(const cpu::ConvParams& p, int64_t half, bool add, bool pooled)
      : scale(random_floats(half, 15)), shift(random_floats(half, 16)) {
    a.out_shape = b.out_shape = {p.n, half, p.oh, p.ow};
    a.steps = {ft::tensor_step(EpOp::kMulTensor, scale.data(), OperandMode::kPerChannel), ft::unary_step(EpOp::kRelu)};
    b.steps = {ft::tensor_step(EpOp::kAddTensor, shift.data(), OperandMode::kStrided, {0, 1, 0, 0}),
               ft::unary_step(EpOp::kHardSwish)};
    m.out_shape = {p.n, add ? half : 2 * half, p.oh, p.ow};
    m.steps = {ft::unary_step(EpOp::kClip, -0.5f, 0.75f)};
    if (pooled) m.tail = cpu::EpTail::kGlobalAvgPool;
  }
  std::vector<float> reference(std::vector<float> ra, std::vector<float> rb, int64_t n, int64_t half, int64_t plane,
                               bool add) const {
    ft::ref_steps(a.steps, a.out_shape, half, plane, ra);
    ft::ref_steps(b.steps, b.out_shape, half, plane, rb);
    std::vector<float> merged;
    for (int64_t img = 0; img < n; ++img) {
      const auto ia = ra.begin() + img * half * plane, ib = rb.begin() + img * half * plane;
      if (add) {
        for (int64_t i = 0; i < half * plane; ++i) merged.push_back(ia[i] + ib[i]);
      } else {
        merged.insert(merged.end(), ia, ia + half * plane);
        merged.insert(merged.end(), ib, ib + half * plane);
      }
    }
    return ft::ref_conv_epilogue(m, n, add ? half : 2 * half, plane, merged);
  }
};

// Balanced branches on [n, c, h, w]: A a 3x3 conv, B a 1x1 conv zero-padded into the stacked
// weights; the reference runs them as two separate naive convs.
void check_merge(int64_t n, int64_t c, int64_t h, int64_t w, int64_t half, bool add, bool pooled) {
  const cpu::ConvParams p = ft::conv_params(n, c, h, w, 2 * half, 3, 1, 1);
  const int64_t plane = p.oh * p.ow;
  const auto x = random_floats(n * c * h * w, 11), wa = random_floats(half * c * 9, 12);
  const auto wb = random_floats(half * c, 13), bias = random_floats(2 * half, 14);
  const MergeEps eps(p, half, add, pooled);
  const auto ra = ft::ref_conv(ft::conv_params(n, c, h, w, half, 3, 1, 1), x.data(), wa.data(), bias.data());
  const auto rb = ft::ref_conv(ft::conv_params(n, c, h, w, half, 1, 1, 0), x.data(), wb.data(), bias.data() + half);
  const auto ref = eps.reference(ra, rb, n, half, plane, add);
  std::vector<float> got(ref.size(), -777.f);
  const auto w_stacked = stack_weights(wa, wb, half, c);
  cpu::conv2d_branch_merge(p, x.data(), w_stacked.data(), bias.data(), eps.a, eps.b, add, eps.m, got.data());
  INFO("n " << n << " c " << c << " " << h << "x" << w << " half " << half << (add ? " add" : " concat")
            << (pooled ? " pooled" : ""));
  CHECK(max_rel_err(got, ref) <= kTol);
}

// Grouped stacked conv: the reference is the naive stacked conv split into its two halves.
void check_merge_grouped(const cpu::ConvParams& p, bool add) {
  const int64_t half = p.m / 2, plane = p.oh * p.ow;
  const auto x = random_floats(p.n * p.c * p.h * p.w, 21), w = random_floats(p.m * p.c / p.group * p.kh * p.kw, 22);
  const auto bias = random_floats(p.m, 23);
  const MergeEps eps(p, half, add, false);
  const auto full = ft::ref_conv(p, x.data(), w.data(), bias.data());
  std::vector<float> ra, rb;
  for (int64_t img = 0; img < p.n; ++img) {
    const auto base = full.begin() + img * p.m * plane;
    ra.insert(ra.end(), base, base + half * plane);
    rb.insert(rb.end(), base + half * plane, base + p.m * plane);
  }
  const auto ref = eps.reference(ra, rb, p.n, half, plane, add);
  std::vector<float> got(ref.size(), -777.f);
  cpu::conv2d_branch_merge(p, x.data(), w.data(), bias.data(), eps.a, eps.b, add, eps.m, got.data());
  INFO("group " << p.group << " m " << p.m << (add ? " add" : " concat"));
  CHECK(max_rel_err(got, ref) <= kTol);
}

}  // namespace

TEST_CASE("conv2d_sum_fused: hand-computed 1x1 sum with relu") {
  const cpu::ConvParams p = ft::conv_params(1, 1, 1, 1, 1, 1, 1, 0);
  const float x1[] = {2}, w1[] = {3}, x2[] = {5}, w2[] = {-4}, bias[] = {1};
  cpu::Epilogue ep;
  std::vector<float> y(1);
  cpu::conv2d_sum_fused(p, x1, w1, p, x2, w2, bias, ep, y.data());
  expect_values(y, {-13});  // 2*3 + 5*(-4) + 1
  ep.steps = {ft::unary_step(EpOp::kRelu)};
  cpu::conv2d_sum_fused(p, x1, w1, p, x2, w2, bias, ep, y.data());
  expect_values(y, {0});
}

TEST_CASE("conv2d_sum_fused: matches conv + conv + epilogue (residual join with downsample)") {
  const ft::SmallTiles small_tiles;
  const SumCase cases[] = {
      {"3x3 + 1x1 stride 2 shortcut", ft::conv_params(2, 5, 7, 9, 13, 3, 1, 1),
       ft::conv_params(2, 3, 13, 17, 13, 1, 2, 0)},
      {"grouped: g3 + g2", ft::conv_params(1, 6, 5, 5, 6, 3, 1, 1, 3), ft::conv_params(1, 4, 5, 5, 6, 1, 1, 0, 2)},
      {"depthwise + 1x1", ft::conv_params(1, 3, 13, 11, 3, 3, 1, 1, 3), ft::conv_params(1, 5, 13, 11, 3, 1, 1, 0)},
      {"many tiles, m 70", ft::conv_params(1, 64, 20, 20, 70, 3, 1, 1), ft::conv_params(1, 32, 20, 20, 70, 1, 1, 0)},
      {"one pixel", ft::conv_params(3, 127, 1, 1, 1, 1, 1, 0), ft::conv_params(3, 1, 1, 1, 1, 1, 1, 0)},
  };
  for (const SumCase& k : cases) {
    check_sum(k, false);
    check_sum(k, true);
  }
}

TEST_CASE("conv2d_branch_merge: hand-computed add and concat") {
  const cpu::ConvParams p = ft::conv_params(1, 1, 1, 1, 2, 1, 1, 0);
  const float x[] = {2}, w[] = {2, -3}, bias[] = {1, 1};  // A = 5, B = -5
  cpu::Epilogue ep_a, ep_b, ep_m;
  ep_b.steps = {ft::unary_step(EpOp::kRelu)};  // b = 0
  ep_m.steps = {ft::unary_step(EpOp::kClip, 0.f, 4.f)};
  std::vector<float> y(1);
  cpu::conv2d_branch_merge(p, x, w, bias, ep_a, ep_b, true, ep_m, y.data());
  expect_values(y, {4});  // clip(5 + 0)
  std::vector<float> cat(2);
  cpu::conv2d_branch_merge(p, x, w, bias, ep_a, ep_b, false, ep_m, cat.data());
  expect_values(cat, {4, 0});
}

TEST_CASE("conv2d_branch_merge: balanced 3x3 | 1x1 branches, add and concat, against separate convs") {
  const ft::SmallTiles small_tiles;
  for (bool add : {true, false}) {
    for (bool pooled : {false, true}) {
      check_merge(1, 3, 13, 13, 5, add, pooled);
      check_merge(2, 13, 7, 5, 3, add, pooled);
      check_merge(1, 64, 20, 20, 70, add, pooled);  // several pixel tiles, ragged channel blocks
      check_merge(1, 1, 1, 1, 1, add, pooled);
    }
  }
}

TEST_CASE("conv2d_branch_merge: grouped stacked convs keep blocks inside groups") {
  const ft::SmallTiles small_tiles;
  for (bool add : {true, false}) {
    check_merge_grouped(ft::conv_params(1, 4, 7, 5, 4, 3, 1, 1, 2), add);   // A = group 0, B = group 1
    check_merge_grouped(ft::conv_params(2, 4, 5, 9, 12, 3, 2, 1, 4), add);  // each half spans two groups
    check_merge_grouped(ft::conv_params(1, 6, 5, 5, 6, 1, 1, 0, 3), add);   // a group straddles the halves
  }
}
