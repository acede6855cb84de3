// conv2d_fused against a naive direct convolution followed by the naive epilogue: hand-computed
// tiny cases, then a table of shapes (1x1 direct, strided, grouped, depthwise, many pixel tiles
// and ragged channel blocks) under several epilogues, including the GlobalAveragePool tail.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
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

enum class EpKind { kBiasRelu, kResidualRelu, kAffineClip, kStridedHardSwish, kPoolPost, kPoolStridedPost };

// An epilogue and the operand buffers it points to.
struct EpFixture {
  std::vector<float> full, per_ch, strided, post_ch;
  cpu::Epilogue ep;
};

EpFixture make_epilogue(EpKind kind, const cpu::ConvParams& p) {
  const int64_t plane = p.oh * p.ow;
  EpFixture f;
  f.ep.out_shape = {p.n, p.m, p.oh, p.ow};
  f.full = random_floats(p.n * p.m * plane, 101);
  f.per_ch = random_floats(p.m, 102, 0.5f, 1.5f);
  f.strided = random_floats(p.m * p.ow, 103);
  f.post_ch = random_floats(p.m, 104);
  auto& s = f.ep.steps;
  switch (kind) {
    case EpKind::kBiasRelu:
      s = {ft::unary_step(EpOp::kRelu)};
      break;
    case EpKind::kResidualRelu:
      s = {ft::tensor_step(EpOp::kAddTensor, f.full.data(), OperandMode::kFull), ft::unary_step(EpOp::kRelu)};
      break;
    case EpKind::kAffineClip:
      s = {ft::tensor_step(EpOp::kMulTensor, f.per_ch.data(), OperandMode::kPerChannel),
           ft::tensor_step(EpOp::kSubTensor, f.post_ch.data(), OperandMode::kPerChannel, {}, true),
           ft::unary_step(EpOp::kClip, -0.25f, 0.5f)};
      break;
    case EpKind::kStridedHardSwish:  // operand [1, M, 1, OW]
      s = {ft::tensor_step(EpOp::kAddTensor, f.strided.data(), OperandMode::kStrided, {0, p.ow, 0, 1}),
           ft::unary_step(EpOp::kHardSwish)};
      break;
    case EpKind::kPoolPost:
      s = {ft::unary_step(EpOp::kRelu)};
      f.ep.tail = cpu::EpTail::kGlobalAvgPool;
      f.ep.post = {ft::tensor_step(EpOp::kMulTensor, f.post_ch.data(), OperandMode::kPerChannel),
                   ft::unary_step(EpOp::kSigmoid)};
      break;
    case EpKind::kPoolStridedPost:  // post operand [1, M, 1, 1] with strides over the 4-D shape
      s = {ft::unary_step(EpOp::kClip, -0.5f, 0.5f)};
      f.ep.tail = cpu::EpTail::kGlobalAvgPool;
      f.ep.post = {ft::tensor_step(EpOp::kAddTensor, f.post_ch.data(), OperandMode::kStrided, {0, 1, 0, 0})};
      break;
  }
  return f;
}

struct FusedConvCase {
  const char* name;
  int64_t n, c, h, w, m, k, stride, pad, group;
};

void check_case(const FusedConvCase& k, EpKind kind) {
  const cpu::ConvParams p = ft::conv_params(k.n, k.c, k.h, k.w, k.m, k.k, k.stride, k.pad, k.group);
  const auto x = random_floats(p.n * p.c * p.h * p.w, 1);
  const auto w = random_floats(p.m * (p.c / p.group) * p.kh * p.kw, 2);
  const auto bias = random_floats(p.m, 3);
  const EpFixture f = make_epilogue(kind, p);
  const int64_t plane = p.oh * p.ow;
  const auto ref = ft::ref_conv_epilogue(f.ep, p.n, p.m, plane, ft::ref_conv(p, x.data(), w.data(), bias.data()));
  std::vector<float> got(ref.size(), -777.f);
  cpu::conv2d_fused(p, x.data(), w.data(), bias.data(), f.ep, got.data());
  INFO(k.name << ", epilogue " << static_cast<int>(kind));
  CHECK(max_rel_err(got, ref) <= kTol);
}

// clang-format off
const FusedConvCase kCases[] = {
    // name                   n    c    h    w    m    k    s    p    g
    {"3x3 pad 1",               1,   3,  13,  13,   5,   3,   1,   1,   1},
    {"1x1 direct batch 2",      2,  13,   7,   5,   3,   1,   1,   0,   1},
    {"1x1 stride 2",            1,  13,   7,   5,   3,   1,   2,   0,   1},
    {"3x3 stride 2 odd",        1,   3,  13,  11,   4,   3,   2,   1,   1},
    {"127 in, 13 out",          1, 127,   5,   5,  13,   3,   1,   1,   1},
    {"one pixel, batch 3",      3,  13,   1,   1, 127,   1,   1,   0,   1},
    {"one output channel",      1,   3,  13,  11,   1,   3,   1,   0,   1},
    {"7 pixel tiles, m 70",     1,  64,  20,  20,  70,   3,   1,   1,   1},
    {"1x1 direct 2 tiles",      2, 127,  20,  20,  13,   1,   1,   0,   1},
    {"group 2",                 1,   4,   9,   7,   6,   3,   1,   1,   2},
    {"group 3 batch 2",         2,   6,   5,   9,   3,   3,   2,   1,   3},
    {"depthwise s2 batch 2",    2,  13,  13,  13,  13,   3,   2,   1,  13},
    {"depthwise 5x5 pad 0",     1,   3,  13,  11,   3,   5,   1,   0,   3},
    {"1x1 2 tiles, ragged rows", 1,  16,  50,  50,  40,   1,   1,   0,   1},
};
// clang-format on

}  // namespace

TEST_CASE("conv2d_fused: hand-computed bias, relu, clip and pooling") {
  const cpu::ConvParams p = ft::conv_params(1, 1, 3, 3, 1, 2, 1, 0);
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w = {1, 2, 3, 4};
  const float bias[] = {-50.f};
  // conv = {37, 47, 67, 77}; + bias = {-13, -3, 17, 27}.
  cpu::Epilogue ep;
  ep.steps = {ft::unary_step(EpOp::kRelu)};
  std::vector<float> y(4);
  cpu::conv2d_fused(p, x.data(), w.data(), bias, ep, y.data());
  expect_values(y, {0, 0, 17, 27});
  ep.steps.push_back(ft::unary_step(EpOp::kClip, 0.f, 20.f));
  cpu::conv2d_fused(p, x.data(), w.data(), bias, ep, y.data());
  expect_values(y, {0, 0, 17, 20});
  ep.tail = cpu::EpTail::kGlobalAvgPool;
  std::vector<float> pooled(1);
  cpu::conv2d_fused(p, x.data(), w.data(), bias, ep, pooled.data());
  expect_values(pooled, {37.f / 4.f});
}

TEST_CASE("conv2d_fused: matches naive conv + epilogue across shapes") {
  const ft::SmallTiles small_tiles;  // "7 pixel tiles" has 7 tiles, "ragged rows" 16+16+8-row blocks
  for (const FusedConvCase& k : kCases) {
    for (EpKind kind : {EpKind::kBiasRelu, EpKind::kResidualRelu, EpKind::kAffineClip, EpKind::kStridedHardSwish,
                        EpKind::kPoolPost, EpKind::kPoolStridedPost}) {
      check_case(k, kind);
    }
  }
}

TEST_CASE("conv2d_fused: no bias, empty epilogue equals the plain convolution") {
  const cpu::ConvParams p = ft::conv_params(2, 5, 13, 3, 7, 3, 1, 1);
  const auto x = random_floats(p.n * p.c * p.h * p.w, 21), w = random_floats(p.m * p.c * 9, 22);
  const auto ref = ft::ref_conv(p, x.data(), w.data(), nullptr);
  std::vector<float> got(ref.size());
  cpu::conv2d_fused(p, x.data(), w.data(), nullptr, cpu::Epilogue{}, got.data());
  CHECK(max_rel_err(got, ref) <= kTol);
}

TEST_CASE("conv2d_fused: NaN in the input reaches the output through relu and pooling") {
  const cpu::ConvParams p = ft::conv_params(1, 2, 5, 5, 3, 3, 1, 1);
  auto x = random_floats(p.n * p.c * p.h * p.w, 31);
  x[12] = std::numeric_limits<float>::quiet_NaN();  // centre of channel 0
  const auto w = random_floats(p.m * p.c * 9, 32);
  cpu::Epilogue ep;
  ep.steps = {ft::unary_step(EpOp::kRelu)};
  std::vector<float> y(static_cast<size_t>(p.m * 25));
  cpu::conv2d_fused(p, x.data(), w.data(), nullptr, ep, y.data());
  for (int64_t m = 0; m < p.m; ++m) {
    CHECK(std::isnan(y[m * 25 + 12]));  // every output window over the centre
    CHECK(!std::isnan(y[m * 25 + 0]));  // the corner window does not reach it
  }
  ep.tail = cpu::EpTail::kGlobalAvgPool;
  std::vector<float> pooled(static_cast<size_t>(p.m));
  cpu::conv2d_fused(p, x.data(), w.data(), nullptr, ep, pooled.data());
  for (float v : pooled) CHECK(std::isnan(v));
}

TEST_CASE("conv2d_fused: output may reuse the residual operand's buffer (in place)") {
  const ft::SmallTiles small_tiles;
  for (const cpu::ConvParams& p : {ft::conv_params(2, 13, 13, 11, 13, 3, 1, 1),         // im2col path
                                   ft::conv_params(1, 13, 13, 11, 13, 3, 1, 1, 13)}) {  // depthwise path
    const auto x = random_floats(p.n * p.c * p.h * p.w, 41), w = random_floats(p.m * p.c / p.group * 9, 42);
    auto residual = random_floats(p.n * p.m * p.oh * p.ow, 43);
    cpu::Epilogue ep;
    ep.out_shape = {p.n, p.m, p.oh, p.ow};
    ep.steps = {ft::tensor_step(EpOp::kAddTensor, residual.data(), OperandMode::kFull), ft::unary_step(EpOp::kRelu)};
    const auto ref = ft::ref_conv_epilogue(ep, p.n, p.m, p.oh * p.ow, ft::ref_conv(p, x.data(), w.data(), nullptr));
    cpu::conv2d_fused(p, x.data(), w.data(), nullptr, ep, residual.data());
    INFO("group " << p.group);
    CHECK(max_rel_err(residual, ref) <= kTol);
  }
}
