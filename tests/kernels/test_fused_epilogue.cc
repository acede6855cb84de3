// apply_epilogue_steps: every EpOp on hand-computed values, NaN/Inf propagation, exact Clip
// bounds, operand_first, and every OperandMode (incl. kStrided broadcasts) against the naive
// element-by-element reference, applied in uneven pieces to exercise the run splitting.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/test_fused_reference.h"

namespace cpu = fusert::cpu;
using cpu::EpOp;
using cpu::OperandMode;
using fusert::test::expect_values;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;
using fusert::test::tensor_step;
using fusert::test::unary_step;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> run_steps(const std::vector<cpu::EpilogueStep>& steps, std::vector<float> v,
                             const std::vector<int64_t>& shape = {}, int64_t channels = 1, int64_t spatial = 1) {
  cpu::apply_epilogue_steps(steps, shape, 0, static_cast<int64_t>(v.size()), channels, spatial, v.data());
  return v;
}

std::vector<float> run_one(cpu::EpilogueStep s, const std::vector<float>& v) { return run_steps({s}, v); }

const std::vector<float> kX = {-2.f, -0.5f, 0.f, 0.5f, 2.f};

}  // namespace

TEST_CASE("epilogue: unary ops on hand-computed values") {
  expect_values(run_one(unary_step(EpOp::kRelu), kX), {0, 0, 0, 0.5f, 2});
  expect_values(run_one(unary_step(EpOp::kClip, -1.f, 1.f), kX), {-1, -0.5f, 0, 0.5f, 1});
  expect_values(run_one(unary_step(EpOp::kSigmoid), kX), {0.11920292f, 0.37754067f, 0.5f, 0.62245933f, 0.88079708f});
  expect_values(run_one(unary_step(EpOp::kHardSigmoid, 0.2f, 0.5f), kX), {0.1f, 0.4f, 0.5f, 0.6f, 0.9f});
  expect_values(run_one(unary_step(EpOp::kHardSwish), kX), {-0.33333333f, -0.20833333f, 0, 0.29166667f, 1.6666667f});
  expect_values(run_one(unary_step(EpOp::kTanh), kX), {-0.96402758f, -0.46211716f, 0, 0.46211716f, 0.96402758f});
  expect_values(run_one(unary_step(EpOp::kErf), kX), {-0.99532227f, -0.52049988f, 0, 0.52049988f, 0.99532227f});
  expect_values(run_one(unary_step(EpOp::kExp), kX), {0.13533528f, 0.60653066f, 1, 1.6487213f, 7.3890561f});
  expect_values(run_one(unary_step(EpOp::kNeg), kX), {2, 0.5f, 0, -0.5f, -2});
  expect_values(run_one(unary_step(EpOp::kIdentity), kX), kX, 0.0);
  expect_values(run_one(unary_step(EpOp::kSqrt), {0.f, 0.25f, 4.f, -1.f}), {0, 0.5f, 2, kNaN});
}

TEST_CASE("epilogue: GELU erf and tanh forms differ as documented") {
  const std::vector<float> erf_form = {-0.045500264f, -0.15426877f, 0, 0.34573123f, 1.9544997f};
  const std::vector<float> tanh_form = {-0.045402306f, -0.15428599f, 0, 0.34571401f, 1.9545977f};
  expect_values(run_one(unary_step(EpOp::kGelu), kX), erf_form);
  expect_values(run_one(unary_step(EpOp::kGeluTanh), kX), tanh_form);
  // At x = 2 the two forms differ by ~1e-4: an implementation swapping them fails this.
  CHECK(run_one(unary_step(EpOp::kGelu), {2.f})[0] != run_one(unary_step(EpOp::kGeluTanh), {2.f})[0]);
}

TEST_CASE("epilogue: binary ops with operand_first") {
  const float t[] = {8.f, 9.f};
  const std::vector<float> v = {2.f, 3.f};
  auto step = [&](EpOp op, bool first) { return tensor_step(op, t, OperandMode::kFull, {}, first); };
  expect_values(run_one(step(EpOp::kAddTensor, false), v), {10, 12});
  expect_values(run_one(step(EpOp::kMulTensor, false), v), {16, 27});
  expect_values(run_one(step(EpOp::kSubTensor, false), v), {-6, -6});
  expect_values(run_one(step(EpOp::kSubTensor, true), v), {6, 6});
  expect_values(run_one(step(EpOp::kDivTensor, false), v), {0.25f, 1.f / 3.f});
  expect_values(run_one(step(EpOp::kDivTensor, true), v), {4, 3});
  expect_values(run_one(step(EpOp::kPowTensor, false), v), {256, 19683});
  expect_values(run_one(step(EpOp::kPowTensor, true), v), {64, 729});
}

TEST_CASE("epilogue: NaN and Inf propagate through activations and operands") {
  const std::vector<float> v = {kNaN, -kInf, kInf, -1.f};
  expect_values(run_one(unary_step(EpOp::kRelu), v), {kNaN, 0, kInf, 0});
  expect_values(run_one(unary_step(EpOp::kClip, -6.f, 6.f), v), {kNaN, -6, 6, -1});
  expect_values(run_one(unary_step(EpOp::kHardSigmoid, 0.2f, 0.5f), v), {kNaN, 0, 1, 0.3f});
  expect_values(run_one(unary_step(EpOp::kHardSwish), v), {kNaN, kNaN, kInf, -1.f / 3.f});
  expect_values(run_one(unary_step(EpOp::kSigmoid), v), {kNaN, 0, 1, 0.26894142f});
  expect_values(run_one(unary_step(EpOp::kTanh), v), {kNaN, -1, 1, -0.76159416f});
  // A NaN in a residual operand survives a following Relu and Clip.
  const float nan_operand[] = {kNaN};
  const auto chain = {tensor_step(EpOp::kAddTensor, nan_operand, OperandMode::kScalar), unary_step(EpOp::kRelu),
                      unary_step(EpOp::kClip, 0.f, 6.f)};
  expect_values(run_steps(chain, {1.f, -1.f}), {kNaN, kNaN});
  // Large negative inputs give exact zeros, never NaN.
  expect_values(run_one(unary_step(EpOp::kSigmoid), {-100.f, 100.f}), {0, 1});
}

TEST_CASE("epilogue: Clip returns its bounds exactly") {
  const float lo = -0.3f, hi = 0.7f;  // not exactly representable: any rescaling would show
  const std::vector<float> got = run_one(unary_step(EpOp::kClip, lo, hi), {-5.f, -0.3f, 0.1f, 0.7f, 1e30f});
  expect_values(got, {lo, lo, 0.1f, hi, hi}, 0.0);
  // ReLU6 as Clip(0, 6): inside values unchanged bit for bit.
  expect_values(run_one(unary_step(EpOp::kClip, 0.f, 6.f), {-1.f, 5.999999f, 6.000001f}), {0.f, 5.999999f, 6.f}, 0.0);
}

TEST_CASE("epilogue: every operand mode matches the naive indexing, applied in uneven pieces") {
  // Conv-like output [3, 13, 5]: channels 13, spatial 5.
  const std::vector<int64_t> shape = {3, 13, 5};
  const int64_t total = 3 * 13 * 5;
  const auto full = random_floats(total, 1), per_ch = random_floats(13, 2), per_row = random_floats(3, 3);
  const auto scalar = random_floats(1, 4), strided = random_floats(3 * 5, 5), bcast = random_floats(13 * 5, 6);
  const std::vector<cpu::EpilogueStep> steps = {
      tensor_step(EpOp::kAddTensor, per_ch.data(), OperandMode::kPerChannel),
      tensor_step(EpOp::kMulTensor, full.data(), OperandMode::kFull),
      tensor_step(EpOp::kSubTensor, per_row.data(), OperandMode::kPerRow, {}, true),
      tensor_step(EpOp::kAddTensor, strided.data(), OperandMode::kStrided, {5, 0, 1}),
      tensor_step(EpOp::kDivTensor, bcast.data(), OperandMode::kStrided, {0, 5, 1}, true),
      tensor_step(EpOp::kMulTensor, scalar.data(), OperandMode::kScalar),
      tensor_step(EpOp::kAddTensor, per_ch.data(), OperandMode::kStrided, {0, 1, 0}),
      unary_step(EpOp::kTanh),
  };
  const auto x = random_floats(total, 7, 0.5f, 2.f);
  std::vector<float> ref = x;
  fusert::test::ref_steps(steps, shape, 13, 5, ref);
  std::vector<float> got = x;
  const int64_t cuts[] = {0, 1, 7, 64, 130, total};
  for (int i = 0; i + 1 < 6; ++i) {
    cpu::apply_epilogue_steps(steps, shape, cuts[i], cuts[i + 1] - cuts[i], 13, 5, got.data() + cuts[i]);
  }
  CHECK(max_rel_err(got, ref) <= kTol);
}

TEST_CASE("epilogue: gemm indexing (spatial 1) for per-column and per-row operands") {
  // [13, 127]: kPerChannel = column, kPerRow = row.
  const std::vector<int64_t> shape = {13, 127};
  const auto cols = random_floats(127, 11), rows = random_floats(13, 12), x = random_floats(13 * 127, 13);
  const auto diag = random_floats(13 + 127 - 1, 14);
  const std::vector<cpu::EpilogueStep> steps = {
      tensor_step(EpOp::kAddTensor, cols.data(), OperandMode::kPerChannel),
      tensor_step(EpOp::kMulTensor, rows.data(), OperandMode::kPerRow),
      tensor_step(EpOp::kSubTensor, cols.data(), OperandMode::kStrided, {0, 1}),
      tensor_step(EpOp::kAddTensor, diag.data(), OperandMode::kStrided, {1, 1}),  // sliding view: no merge
      unary_step(EpOp::kGelu),
  };
  std::vector<float> ref = x;
  fusert::test::ref_steps(steps, shape, 127, 1, ref);
  std::vector<float> got = x;
  cpu::apply_epilogue_steps(steps, shape, 0, 50, 127, 1, got.data());
  cpu::apply_epilogue_steps(steps, shape, 50, 13 * 127 - 50, 127, 1, got.data() + 50);
  CHECK(max_rel_err(got, ref) <= kTol);
}
