// GEMM anchors with epilogues against naive double-precision products followed by the naive
// epilogue: gemm_fused (transposes, alpha/beta, C broadcasts, LayerNorm tail + post),
// matmul_fused (batch broadcast), gemm_horizontal (3 members of different widths, LayerNorm
// each) and gemm_grouped.
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

std::vector<float> ref_gemm(const cpu::GemmParams& p, const float* a, const float* b, const float* c) {
  std::vector<float> y(static_cast<size_t>(p.m * p.n));
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      double acc = 0;
      for (int64_t q = 0; q < p.k; ++q)
        acc += double(p.trans_a ? a[q * p.m + i] : a[i * p.k + q]) * (p.trans_b ? b[j * p.k + q] : b[q * p.n + j]);
      double cv = 0;
      if (c != nullptr && p.beta != 0.f) cv = c[(p.c_rows == 1 ? 0 : i) * p.c_cols + (p.c_cols == 1 ? 0 : j)];
      y[static_cast<size_t>(i * p.n + j)] = static_cast<float>(p.alpha * acc + p.beta * cv);
    }
  return y;
}

// y[rows, n] = a[rows, k] * w[n, k]^T + bias
std::vector<float> ref_linear(int64_t rows, int64_t n, int64_t k, const float* a, const float* w, const float* bias) {
  cpu::GemmParams p;
  p.m = rows, p.n = n, p.k = k, p.trans_b = true, p.c_rows = 1, p.c_cols = n;
  return ref_gemm(p, a, w, bias);
}

// Operands for the row epilogues used below (kept alive with the Epilogue).
struct RowEp {
  std::vector<float> cols, rows, full, scale, shift;
  cpu::Epilogue ep;
  RowEp(int64_t m, int64_t n, int variant, uint32_t seed)
      : cols(random_floats(n, seed)),
        rows(random_floats(m, seed + 1)),
        full(random_floats(m * n, seed + 2)),
        scale(random_floats(n, seed + 3, 0.5f, 1.5f)),
        shift(random_floats(n, seed + 4)) {
    ep.out_shape = {m, n};
    if (variant == 0) {  // FFN: bias + GELU
      ep.steps = {ft::tensor_step(EpOp::kAddTensor, cols.data(), OperandMode::kPerChannel),
                  ft::unary_step(EpOp::kGelu)};
    } else if (variant == 1) {  // residual + LayerNorm + post
      ep.steps = {ft::tensor_step(EpOp::kAddTensor, full.data(), OperandMode::kFull)};
      ep.tail = cpu::EpTail::kLayerNorm;
      ep.ln_scale = scale.data(), ep.ln_shift = shift.data(), ep.ln_epsilon = 1e-5f;
      ep.post = {ft::unary_step(EpOp::kRelu)};
    } else {  // per-row and strided per-column operands, then LayerNorm without shift
      ep.steps = {ft::tensor_step(EpOp::kMulTensor, rows.data(), OperandMode::kPerRow),
                  ft::tensor_step(EpOp::kSubTensor, cols.data(), OperandMode::kStrided, {0, 1}, true),
                  ft::unary_step(EpOp::kTanh)};
      ep.tail = cpu::EpTail::kLayerNorm;
      ep.ln_scale = scale.data(), ep.ln_epsilon = 1e-3f;
    }
  }
};

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  float alpha, beta;
  int64_t c_rows, c_cols;  // 0 = no C
};

void check_gemm(const GemmCase& g, int variant) {
  cpu::GemmParams p;
  p.m = g.m, p.n = g.n, p.k = g.k, p.trans_a = g.ta, p.trans_b = g.tb, p.alpha = g.alpha, p.beta = g.beta;
  p.c_rows = g.c_rows, p.c_cols = g.c_cols;
  const auto a = random_floats(g.m * g.k, 1), b = random_floats(g.k * g.n, 2);
  const auto c = random_floats(std::max<int64_t>(g.c_rows * g.c_cols, 1), 3);
  const float* c_ptr = g.c_rows > 0 ? c.data() : nullptr;
  const RowEp re(g.m, g.n, variant, 10);
  auto ref = ref_gemm(p, a.data(), b.data(), c_ptr);
  ft::ref_row_epilogue(re.ep, g.n, ref);
  std::vector<float> got(ref.size(), -777.f);
  cpu::gemm_fused(p, a.data(), b.data(), c_ptr, re.ep, got.data());
  INFO("m " << g.m << " n " << g.n << " k " << g.k << " ta " << g.ta << " tb " << g.tb << " variant " << variant);
  CHECK(max_rel_err(got, ref) <= kTol);
}

}  // namespace

TEST_CASE("gemm_fused: hand-computed C, LayerNorm tail and post") {
  cpu::GemmParams p;
  p.m = 2, p.n = 2, p.k = 2, p.c_rows = 1, p.c_cols = 2;
  const float a[] = {1, 2, 3, 4}, b[] = {1, 0, 0, 1}, c[] = {0, 1};
  // y = A + C = [1, 3; 3, 5]; every row has mean +-1 around its centre, variance 1.
  cpu::Epilogue ep;
  std::vector<float> y(4);
  cpu::gemm_fused(p, a, b, c, ep, y.data());
  expect_values(y, {1, 3, 3, 5});
  const float scale[] = {2, 3}, shift[] = {0.5f, 0};
  ep.tail = cpu::EpTail::kLayerNorm;
  ep.ln_scale = scale, ep.ln_shift = shift, ep.ln_epsilon = 0.f;
  ep.post = {ft::unary_step(EpOp::kRelu)};
  cpu::gemm_fused(p, a, b, c, ep, y.data());
  expect_values(y, {0, 3, 0, 3});  // (-1 * 2 + 0.5 -> relu 0, 1 * 3 + 0)
}

TEST_CASE("gemm_fused: matches naive gemm + epilogue over odd and non-square shapes") {
  const ft::SmallTiles small_tiles;  // 300 x 2048 runs in five 64-row blocks
  const GemmCase cases[] = {
      {1, 1, 1, false, false, 1.f, 1.f, 1, 1},       {3, 13, 127, false, true, 1.f, 1.f, 1, 13},
      {127, 3, 13, true, false, 0.5f, 2.f, 127, 1},  {13, 127, 3, true, true, 1.f, 0.f, 13, 127},
      {200, 96, 64, false, true, 1.f, 1.f, 1, 96},   {1000, 13, 5, false, false, -1.f, 1.f, 0, 0},
      {37, 768, 31, false, true, 1.f, 1.f, 37, 768}, {300, 2048, 7, true, true, 1.f, 1.f, 1, 2048},
  };
  for (const GemmCase& g : cases) {
    for (int variant = 0; variant < 3; ++variant) check_gemm(g, variant);
  }
}

TEST_CASE("matmul_fused: batched with broadcast batches matches naive matmul + epilogue") {
  cpu::MatMulParams p;
  p.batch = 3, p.m = 13, p.n = 5, p.k = 7;
  for (const auto& [ai, bi] : {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{}, {}},
                               {{0, 1, 2}, {0, 0, 1}},
                               {{0, 0, 0}, {2, 1, 0}}}) {
    p.a_batch_index = ai, p.b_batch_index = bi;
    const auto a = random_floats(3 * 13 * 7, 1), b = random_floats(3 * 7 * 5, 2);
    const auto per_m = random_floats(13, 3), scale = random_floats(5, 4);
    cpu::Epilogue ep;
    ep.out_shape = {3, 13, 5};
    ep.steps = {ft::tensor_step(EpOp::kAddTensor, per_m.data(), OperandMode::kStrided, {0, 1, 0}),
                ft::unary_step(EpOp::kSigmoid)};
    ep.tail = cpu::EpTail::kLayerNorm;
    ep.ln_scale = scale.data();
    std::vector<float> ref;
    for (int64_t i = 0; i < 3; ++i) {
      cpu::GemmParams g;
      g.m = 13, g.n = 5, g.k = 7;
      const int64_t sa = ai.empty() ? i : ai[i], sb = bi.empty() ? i : bi[i];
      const auto yi = ref_gemm(g, a.data() + sa * 13 * 7, b.data() + sb * 7 * 5, nullptr);
      ref.insert(ref.end(), yi.begin(), yi.end());
    }
    ft::ref_row_epilogue(ep, 5, ref);
    std::vector<float> got(ref.size(), -777.f);
    cpu::matmul_fused(p, a.data(), b.data(), ep, got.data());
    CHECK(max_rel_err(got, ref) <= kTol);
  }
}

TEST_CASE("gemm_horizontal: three members of different widths, each with its own LayerNorm") {
  const ft::SmallTiles small_tiles;
  for (int64_t m : {1, 13, 127, 300}) {
    // m 300 with a 2000-wide member: several row blocks of the 2016-wide concatenated GEMM
    const int64_t k = 13, widths[] = {3, 13, m == 300 ? 2000 : 127}, total = widths[0] + widths[1] + widths[2];
    const auto a = random_floats(m * k, 1), w_cat = random_floats(total * k, 2), b_cat = random_floats(total, 3);
    std::vector<RowEp> eps;
    eps.reserve(3);  // operand pointers must stay put
    for (int i = 0; i < 3; ++i) eps.emplace_back(m, widths[i], i == 0 ? 0 : 1 + (i % 2), 20 + 10 * i);
    for (bool with_bias : {true, false}) {
      std::vector<std::vector<float>> outs(3);
      std::vector<cpu::HorizontalMember> members(3);
      for (int i = 0; i < 3; ++i) {
        outs[i].assign(static_cast<size_t>(m * widths[i]), -777.f);
        members[i].n = widths[i], members[i].ep = eps[i].ep, members[i].y = outs[i].data();
      }
      cpu::gemm_horizontal(m, k, a.data(), w_cat.data(), with_bias ? b_cat.data() : nullptr, members);
      int64_t off = 0;
      for (int i = 0; i < 3; ++i) {
        auto ref =
            ref_linear(m, widths[i], k, a.data(), w_cat.data() + off * k, with_bias ? b_cat.data() + off : nullptr);
        ft::ref_row_epilogue(eps[i].ep, widths[i], ref);
        INFO("m " << m << " member " << i << " bias " << with_bias);
        CHECK(max_rel_err(outs[i], ref) <= kTol);
        off += widths[i];
      }
    }
  }
}

TEST_CASE("gemm_grouped: same-shape members on different inputs") {
  const ft::SmallTiles small_tiles;
  const int64_t m = 13, n = 127, k = 3;
  std::vector<std::vector<float>> as, ws, bs, outs(3);
  std::vector<RowEp> eps;
  eps.reserve(3);  // operand pointers must stay put
  std::vector<cpu::GroupedGemmMember> members(3);
  for (int i = 0; i < 3; ++i) {
    as.push_back(random_floats(m * k, 40 + i));
    ws.push_back(random_floats(n * k, 50 + i));
    bs.push_back(random_floats(n, 60 + i));
    eps.emplace_back(m, n, i, 70 + 10 * i);
  }
  for (int i = 0; i < 3; ++i) {
    outs[i].assign(static_cast<size_t>(m * n), -777.f);
    members[i].a = as[i].data(), members[i].w = ws[i].data(), members[i].bias = i == 1 ? nullptr : bs[i].data();
    members[i].ep = eps[i].ep, members[i].y = outs[i].data();
  }
  cpu::gemm_grouped(m, n, k, members);
  for (int i = 0; i < 3; ++i) {
    auto ref = ref_linear(m, n, k, as[i].data(), ws[i].data(), i == 1 ? nullptr : bs[i].data());
    ft::ref_row_epilogue(eps[i].ep, n, ref);
    INFO("member " << i);
    CHECK(max_rel_err(outs[i], ref) <= kTol);
  }
}

TEST_CASE("gemm kernels: output may reuse the residual operand's buffer (in place)") {
  const ft::SmallTiles small_tiles;
  const int64_t m = 127, n = 13, k = 3;
  const auto a = random_floats(m * k, 81), w = random_floats(n * k, 82), bias = random_floats(n, 83);
  const auto residual = random_floats(m * n, 84), scale = random_floats(n, 85);
  auto make_ep = [&](float* res) {
    cpu::Epilogue ep;
    ep.out_shape = {m, n};
    ep.steps = {ft::tensor_step(EpOp::kAddTensor, res, OperandMode::kFull)};
    ep.tail = cpu::EpTail::kLayerNorm;
    ep.ln_scale = scale.data();
    return ep;
  };
  auto ref = ref_linear(m, n, k, a.data(), w.data(), bias.data());
  std::vector<float> res_copy = residual;
  ft::ref_row_epilogue(make_ep(res_copy.data()), n, ref);
  cpu::GemmParams p;
  p.m = m, p.n = n, p.k = k, p.trans_b = true, p.c_rows = 1, p.c_cols = n;
  std::vector<float> y = residual;
  cpu::gemm_fused(p, a.data(), w.data(), bias.data(), make_ep(y.data()), y.data());
  CHECK(max_rel_err(y, ref) <= kTol);
  std::vector<float> y_grouped = residual;
  std::vector<cpu::GroupedGemmMember> members(1);
  members[0].a = a.data(), members[0].w = w.data(), members[0].bias = bias.data();
  members[0].ep = make_ep(y_grouped.data()), members[0].y = y_grouped.data();
  cpu::gemm_grouped(m, n, k, members);
  CHECK(max_rel_err(y_grouped, ref) <= kTol);
  std::vector<float> y_horizontal = residual;
  std::vector<cpu::HorizontalMember> hm(1);
  hm[0].n = n, hm[0].ep = make_ep(y_horizontal.data()), hm[0].y = y_horizontal.data();
  cpu::gemm_horizontal(m, k, a.data(), w.data(), bias.data(), hm);
  CHECK(max_rel_err(y_horizontal, ref) <= kTol);
}
