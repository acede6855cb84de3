// norm_rows_fused against naive prologue + LayerNorm/softmax + post per row: hand-computed rows,
// odd row lengths, fully masked (-inf) softmax rows and huge logits.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
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

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> ref_norm(int64_t outer, int64_t inner, std::vector<float> x,
                            const std::vector<cpu::EpilogueStep>& pre, cpu::RowNorm kind, const float* scale,
                            const float* shift, float eps, const std::vector<cpu::EpilogueStep>& post) {
  ft::ref_steps(pre, {outer, inner}, inner, 1, x);
  for (int64_t r = 0; r < outer; ++r) {
    if (kind == cpu::RowNorm::kLayerNorm) {
      ft::ref_layer_norm(x.data() + r * inner, inner, scale, shift, eps);
    } else {
      ft::ref_softmax(x.data() + r * inner, inner);
    }
  }
  ft::ref_steps(post, {outer, inner}, inner, 1, x);
  return x;
}

}  // namespace

TEST_CASE("norm_rows_fused: hand-computed LayerNorm and softmax rows") {
  const float ones[] = {1, 1, 1};
  std::vector<float> y(3);
  cpu::norm_rows_fused(1, 3, std::vector<float>{1, 2, 3}.data(), {}, cpu::RowNorm::kLayerNorm, ones, nullptr, 0.f, {},
                       y.data());
  expect_values(y, {-1.2247449f, 0, 1.2247449f});  // (x - 2) / sqrt(2/3)
  std::vector<float> p(2);
  cpu::norm_rows_fused(1, 2, std::vector<float>{0.f, std::log(3.f)}.data(), {}, cpu::RowNorm::kSoftmax, nullptr,
                       nullptr, 0.f, {}, p.data());
  expect_values(p, {0.25f, 0.75f});
}

TEST_CASE("norm_rows_fused: LayerNorm with prologue and post matches naive rows") {
  for (int64_t inner : {1, 3, 13, 127, 768}) {
    const int64_t outer = 13;
    const auto x = random_floats(outer * inner, 1, -3.f, 5.f), bias = random_floats(inner, 2);
    const auto rows = random_floats(outer, 3), scale = random_floats(inner, 4), shift = random_floats(inner, 5);
    const std::vector<cpu::EpilogueStep> pre = {
        ft::tensor_step(EpOp::kAddTensor, bias.data(), OperandMode::kPerChannel),
        ft::tensor_step(EpOp::kMulTensor, rows.data(), OperandMode::kPerRow)};
    const std::vector<cpu::EpilogueStep> post = {ft::unary_step(EpOp::kClip, -1.f, 1.f)};
    for (const float* sh : {shift.data(), static_cast<const float*>(nullptr)}) {
      const auto ref = ref_norm(outer, inner, x, pre, cpu::RowNorm::kLayerNorm, scale.data(), sh, 1e-5f, post);
      std::vector<float> got(ref.size(), -777.f);
      cpu::norm_rows_fused(outer, inner, x.data(), pre, cpu::RowNorm::kLayerNorm, scale.data(), sh, 1e-5f, post,
                           got.data());
      INFO("inner " << inner << (sh ? " with shift" : " no shift"));
      CHECK(max_rel_err(got, ref) <= kTol);
    }
  }
}

TEST_CASE("norm_rows_fused: softmax with scale and additive mask, masked rows give zeros") {
  const int64_t outer = 6, inner = 13;
  auto x = random_floats(outer * inner, 7, -2.f, 2.f);
  std::vector<float> mask(static_cast<size_t>(outer * inner), 0.f);
  for (int64_t j = 0; j < inner; ++j) mask[static_cast<size_t>(2 * inner + j)] = -kInf;  // row 2 fully masked
  for (int64_t j = 5; j < inner; ++j) mask[static_cast<size_t>(4 * inner + j)] = -kInf;  // row 4 partly masked
  for (int64_t j = 0; j < inner; ++j) x[static_cast<size_t>(5 * inner + j)] = j % 2 ? 1e4f : -1e4f;  // huge logits
  const float scale[] = {0.125f};
  const std::vector<cpu::EpilogueStep> pre = {ft::tensor_step(EpOp::kMulTensor, scale, OperandMode::kScalar),
                                              ft::tensor_step(EpOp::kAddTensor, mask.data(), OperandMode::kFull)};
  const auto ref = ref_norm(outer, inner, x, pre, cpu::RowNorm::kSoftmax, nullptr, nullptr, 0.f, {});
  std::vector<float> got(ref.size(), -777.f);
  cpu::norm_rows_fused(outer, inner, x.data(), pre, cpu::RowNorm::kSoftmax, nullptr, nullptr, 0.f, {}, got.data());
  CHECK(max_rel_err(got, ref) <= kTol);
  for (int64_t j = 0; j < inner; ++j) {
    CHECK(got[static_cast<size_t>(2 * inner + j)] == 0.f);
    CHECK(std::isfinite(got[static_cast<size_t>(5 * inner + j)]));
  }
}

TEST_CASE("norm_rows_fused: scores far below the row max (an additive mask of -10000) give exact zeros") {
  // Row of 19 (the 8-lane loop and its tail): 0, -1, then -10000, -87.5 and -86.5 below the max
  // in turn. exp(-86.5) / (1 + e^-1) = 2.0e-38 is a normal float and stays; anything more than 87
  // below the max is exactly 0, never a denormal (whose arithmetic is several-fold slower).
  const int64_t n = 19;
  std::vector<float> x(static_cast<size_t>(n));
  const float tail[] = {-10000.f, -87.5f, -86.5f};
  for (int64_t j = 0; j < n; ++j) x[static_cast<size_t>(j)] = j == 0 ? 0.f : j == 1 ? -1.f : tail[j % 3];
  std::vector<float> got(x.size(), -777.f);
  cpu::norm_rows_fused(1, n, x.data(), {}, cpu::RowNorm::kSoftmax, nullptr, nullptr, 0.f, {}, got.data());
  double sum = 0;
  for (float v : x) sum += v < -87.f ? 0.0 : std::exp(static_cast<double>(v));
  for (int64_t j = 0; j < n; ++j) {
    const float v = x[static_cast<size_t>(j)], p = got[static_cast<size_t>(j)];
    CAPTURE(j);
    CHECK(std::fpclassify(p) != FP_SUBNORMAL);
    if (v < -87.f) {
      CHECK(p == 0.f);
    } else {
      CHECK(p == doctest::Approx(std::exp(static_cast<double>(v)) / sum).epsilon(1e-5));
    }
  }
}

TEST_CASE("norm_rows_fused: in place (x == y)") {
  auto x = random_floats(3 * 127, 9);
  const auto ref =
      ref_norm(3, 127, x, {}, cpu::RowNorm::kSoftmax, nullptr, nullptr, 0.f, {ft::unary_step(EpOp::kSqrt)});
  cpu::norm_rows_fused(3, 127, x.data(), {}, cpu::RowNorm::kSoftmax, nullptr, nullptr, 0.f,
                       {ft::unary_step(EpOp::kSqrt)}, x.data());
  CHECK(max_rel_err(x, ref) <= kTol);
}
