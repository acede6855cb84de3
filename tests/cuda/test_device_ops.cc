// The device kernels that took ops off the host fallback, against naive loops written here (and
// the CPU oracle cpu::conv_transpose, double accumulation): compare / logical_not / where with
// broadcasting, nary (Max with a NaN, Mean, PRelu), pad_map (constant, reflect, edge, wrap
// = Tile), resize_2d (nearest and linear tables by hand), reduce_axis (L2, a NaN in a max,
// LogSumExp), arg_extreme (ties, last index), bias_act (the GEMM epilogue apart: bias, ReLU with a
// NaN, tanh-GELU), and ConvTranspose on cuDNN's backward data. They run
// on a GPU (test_cuda, tests/gpu/run.sh) and on the emulated device (test_cuda_emu); each skips with
// a message when no device is present.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/import_kernels.h"
#include "kernels/cuda/bias_act.cuh"
#include "kernels/cuda/cudnn_conv_transpose.h"
#include "kernels/cuda/layout.cuh"
#include "kernels/cuda/logic.cuh"
#include "kernels/cuda/nary.cuh"
#include "kernels/cuda/reduce.cuh"
#include "tests/cuda/device_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using fusert::cudatest::DevBuf;
using fusert::cudatest::make_context;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

TEST_CASE("device.pad_map: constant, reflect, edge and wrap (Tile)") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};  // [2, 3]
  DevBuf<float> dx(*ctx, x), dv(*ctx, std::vector<float>{-9}), dy(*ctx, 2 * 7);
  const int64_t in[] = {2, 3}, out[] = {2, 7}, begin[] = {0, 2};  // 2 before, 2 after along dim 1
  REQUIRE(cu::pad_map(2, out, in, begin, cu::PadMode::kConstant, dv.get(), dx.get(), dy.get(), 4, ctx->stream()) ==
          cudaSuccess);
  CHECK(dy.host() == std::vector<float>{-9, -9, 1, 2, 3, -9, -9, -9, -9, 4, 5, 6, -9, -9});
  REQUIRE(cu::pad_map(2, out, in, begin, cu::PadMode::kReflect, nullptr, dx.get(), dy.get(), 4, ctx->stream()) ==
          cudaSuccess);
  CHECK(dy.host() == std::vector<float>{3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4});
  REQUIRE(cu::pad_map(2, out, in, begin, cu::PadMode::kEdge, nullptr, dx.get(), dy.get(), 4, ctx->stream()) ==
          cudaSuccess);
  CHECK(dy.host() == std::vector<float>{1, 1, 1, 2, 3, 3, 3, 4, 4, 4, 5, 6, 6, 6});
  // Tile [2, 3] by [2, 3]: [4, 9], y[i, j] = x[i % 2, j % 3]; int64 elements.
  const std::vector<int64_t> xi = {1, 2, 3, 4, 5, 6};
  DevBuf<int64_t> dxi(*ctx, xi), dyi(*ctx, 36);
  const int64_t tout[] = {4, 9}, zero[] = {0, 0};
  REQUIRE(cu::pad_map(2, tout, in, zero, cu::PadMode::kWrap, nullptr, dxi.get(), dyi.get(), 8, ctx->stream()) ==
          cudaSuccess);
  const auto yt = dyi.host();
  int wrong = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 9; ++j)
      wrong += yt[static_cast<size_t>(i * 9 + j)] != xi[static_cast<size_t>((i % 2) * 3 + j % 3)];
  CHECK(wrong == 0);
}

TEST_CASE("device.resize_2d: nearest rows, linear columns, tables by hand") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const std::vector<float> x = {1, 2, 3, 10, 20, 30};  // [1, 2, 3]
  // Rows: 2 -> 3, nearest (0, 0, 1). Columns: 3 -> 2, linear at 0.5 and 1.75.
  DevBuf<int64_t> ri(*ctx, std::vector<int64_t>{0, 0, 1}), ci(*ctx, std::vector<int64_t>{0, 1, 1, 2});
  DevBuf<float> rw(*ctx, std::vector<float>{1, 1, 1}), cw(*ctx, std::vector<float>{0.5f, 0.5f, 0.25f, 0.75f});
  DevBuf<float> dx(*ctx, x), dy(*ctx, 6);
  cu::ResizeTables t;
  t.row_taps = 1;
  t.col_taps = 2;
  t.row_index = ri.get();
  t.row_weight = rw.get();
  t.col_index = ci.get();
  t.col_weight = cw.get();
  REQUIRE(cu::resize_2d(1, 2, 3, 3, 2, t, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<float>{1.5f, 2.75f, 1.5f, 2.75f, 15.f, 27.5f});
}

TEST_CASE("device.reduce_axis and arg_extreme: L2, a NaN in a max, LogSumExp, ties") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // x [2, 3, 2]: reduce the middle axis.
  const std::vector<float> x = {3, 1, 4, nan, 0, 2, -1, 5, -2, 5, -3, 0};
  DevBuf<float> dx(*ctx, x), dy(*ctx, 4);
  cu::ReduceKind l2;
  l2.pre = cu::ReduceKind::kSquare;
  l2.post = cu::ReduceKind::kSqrt;
  REQUIRE(cu::reduce_axis(2, 3, 2, l2, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  auto y = dy.host();
  CHECK(y[0] == doctest::Approx(5.f));  // sqrt(9 + 16 + 0)
  CHECK(std::isnan(y[1]));
  CHECK(y[2] == doctest::Approx(std::sqrt(1.f + 4 + 9)));
  CHECK(y[3] == doctest::Approx(std::sqrt(25.f + 25 + 0)));
  cu::ReduceKind mx;
  mx.combine = cu::ReduceKind::kMax;
  REQUIRE(cu::reduce_axis(2, 3, 2, mx, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  y = dy.host();
  CHECK(y[0] == 4.f);
  CHECK(std::isnan(y[1]));  // the NaN wins
  CHECK(y[2] == -1.f);
  CHECK(y[3] == 5.f);
  cu::ReduceKind lse;
  lse.combine = cu::ReduceKind::kLogSumExp;
  REQUIRE(cu::reduce_axis(2, 3, 2, lse, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  y = dy.host();
  CHECK(y[0] == doctest::Approx(std::log(std::exp(3.0) + std::exp(4.0) + 1.0)).epsilon(1e-6));
  DevBuf<int64_t> di(*ctx, 4);
  REQUIRE(cu::arg_extreme(2, 3, 2, false, false, dx.get(), di.get(), ctx->stream()) == cudaSuccess);
  CHECK(di.host() == std::vector<int64_t>{1, 1, 0, 0});  // the NaN at 1; 5 first at 0 (tie with 1)
  REQUIRE(cu::arg_extreme(2, 3, 2, false, true, dx.get(), di.get(), ctx->stream()) == cudaSuccess);
  CHECK(di.host() == std::vector<int64_t>{1, 1, 0, 1});  // select_last_index: the tie's last
  REQUIRE(cu::arg_extreme(2, 3, 2, true, false, dx.get(), di.get(), ctx->stream()) == cudaSuccess);
  CHECK(di.host() == std::vector<int64_t>{2, 1, 2, 2});
}

TEST_CASE("device.conv_transpose: cuDNN backward data + bias against the CPU oracle") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  struct Case {
    kern::ConvTransposeParams p;
    bool bias;
  };
  // {n, c, h, w, m, oh, ow, kh, kw, group, sh, sw, dh, dw, pt, pl}
  const Case cases[] = {{{2, 6, 5, 7, 4, 10, 14, 2, 2, 1, 2, 2, 1, 1, 0, 0}, true},  // DBNet's 2x2 stride 2
                        {{1, 4, 5, 4, 6, 10, 8, 3, 3, 2, 2, 2, 1, 1, 1, 1}, false},  // output_padding 1, 2 groups
                        {{1, 3, 6, 5, 2, 10, 9, 3, 3, 1, 1, 1, 2, 2, 0, 0}, true}};  // dilation 2
  uint32_t seed = 40;
  for (const Case& k : cases) {
    const kern::ConvTransposeParams& p = k.p;
    std::string why;
    REQUIRE_MESSAGE(cu::conv_transpose_fits(p, p.pt, p.pl, &why), why);
    const auto x = random_floats(p.n * p.c * p.h * p.w, seed++);
    const auto w = random_floats(p.c * (p.m / p.group) * p.kh * p.kw, seed++);
    const auto b = random_floats(p.m, seed++);
    std::vector<float> ref(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
    cpu::conv_transpose(p, x.data(), w.data(), k.bias ? b.data() : nullptr, ref.data());
    auto ct = cu::CudnnConvTranspose::create(*ctx, p, k.bias, "test conv_transpose");
    REQUIRE_MESSAGE(ct.ok(), ct.status().message());
    REQUIRE(ctx->reserve_workspace(ct.value()->workspace_bytes()).ok());
    DevBuf<float> dx(*ctx, x), dw(*ctx, w), db(*ctx, b), dy(*ctx, ref.size());
    const auto st = ct.value()->run(*ctx, dx.get(), dw.get(), k.bias ? db.get() : nullptr, dy.get());
    REQUIRE_MESSAGE(st.ok(), st.message());
    CHECK(max_rel_err(dy.host(), ref) <= 1e-5);
  }
}

TEST_CASE("device.compare, logical_not and where: broadcasting by hand") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // a [2, 3] against b [3] (broadcast along dim 0): a <= b, and a == b (NaN equals nothing).
  DevBuf<float> da(*ctx, std::vector<float>{1, 5, nan, 2, 2, 3}), db(*ctx, std::vector<float>{2, 2, nan});
  DevBuf<uint8_t> dy(*ctx, 6), dn(*ctx, 6);
  const int64_t shape[] = {2, 3}, as[] = {3, 1}, bs[] = {0, 1};
  REQUIRE(cu::compare(2, shape, cu::LogicOp::kLessOrEqual, cu::LogicType::kF32, da.get(), as, db.get(), bs, dy.get(),
                      ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<uint8_t>{1, 0, 0, 1, 1, 0});
  REQUIRE(cu::compare(2, shape, cu::LogicOp::kEqual, cu::LogicType::kF32, da.get(), as, db.get(), bs, dy.get(),
                      ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<uint8_t>{0, 0, 0, 1, 1, 0});
  REQUIRE(cu::logical_not(6, dy.get(), dn.get(), ctx->stream()) == cudaSuccess);
  CHECK(dn.host() == std::vector<uint8_t>{1, 1, 1, 0, 0, 1});
  // i64 Greater with a scalar b; bool Xor.
  DevBuf<int64_t> ia(*ctx, std::vector<int64_t>{-3, 0, int64_t{1} << 40}), ib(*ctx, std::vector<int64_t>{0});
  DevBuf<uint8_t> g3(*ctx, 3);
  const int64_t s3[] = {3}, one[] = {1}, zero[] = {0};
  REQUIRE(cu::compare(1, s3, cu::LogicOp::kGreater, cu::LogicType::kI64, ia.get(), one, ib.get(), zero, g3.get(),
                      ctx->stream()) == cudaSuccess);
  CHECK(g3.host() == std::vector<uint8_t>{0, 0, 1});
  DevBuf<uint8_t> ba(*ctx, std::vector<uint8_t>{0, 1, 1}), bb(*ctx, std::vector<uint8_t>{1, 1, 0});
  REQUIRE(cu::compare(1, s3, cu::LogicOp::kXor, cu::LogicType::kBool, ba.get(), one, bb.get(), one, g3.get(),
                      ctx->stream()) == cudaSuccess);
  CHECK(g3.host() == std::vector<uint8_t>{1, 0, 1});
  // where(cond [2, 1], a [2, 3], b scalar).
  DevBuf<uint8_t> dc(*ctx, std::vector<uint8_t>{0, 1});
  DevBuf<float> wa(*ctx, std::vector<float>{1, 2, 3, 4, 5, 6}), wb(*ctx, std::vector<float>{-7}), wy(*ctx, 6);
  const int64_t cs[] = {1, 0}, was[] = {3, 1}, wbs[] = {0, 0};
  REQUIRE(cu::where(2, shape, dc.get(), cs, wa.get(), was, wb.get(), wbs, wy.get(), ctx->stream()) == cudaSuccess);
  CHECK(wy.host() == std::vector<float>{-7, -7, -7, 4, 5, 6});
}

TEST_CASE("device.nary: Max with a NaN, Mean of three, PRelu by a broadcast slope, by hand") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  DevBuf<float> a(*ctx, std::vector<float>{1, -2, 3, nan}), b(*ctx, std::vector<float>{0, 5}),
      c(*ctx, std::vector<float>{-1});
  DevBuf<float> y(*ctx, 4);
  // a [2, 2], b [2] (broadcast along dim 0), c scalar.
  const int64_t shape[] = {2, 2}, strides[] = {2, 1, 0, 1, 0, 0};
  const float* xs[] = {a.get(), b.get(), c.get()};
  REQUIRE(cu::nary(2, shape, cu::NaryOp::kMax, 3, xs, strides, y.get(), ctx->stream()) == cudaSuccess);
  auto h = y.host();
  CHECK(h[0] == 1.f);
  CHECK(h[1] == 5.f);
  CHECK(h[2] == 3.f);
  CHECK(std::isnan(h[3]));
  REQUIRE(cu::nary(2, shape, cu::NaryOp::kMean, 3, xs, strides, y.get(), ctx->stream()) == cudaSuccess);
  h = y.host();
  CHECK(h[0] == 0.f);  // (1 + 0 - 1) / 3
  CHECK(h[1] == doctest::Approx(2.f / 3.f));
  CHECK(h[2] == doctest::Approx(2.f / 3.f));
  // PRelu: a times the slope b where a < 0; the NaN stays.
  const float* pr[] = {a.get(), b.get()};
  REQUIRE(cu::nary(2, shape, cu::NaryOp::kPRelu, 2, pr, strides, y.get(), ctx->stream()) == cudaSuccess);
  h = y.host();
  CHECK(h[0] == 1.f);
  CHECK(h[1] == -10.f);
  CHECK(h[2] == 3.f);
  CHECK(std::isnan(h[3]));
}

TEST_CASE("device.lrn: a window of 3 channels clipped at the edges, by hand") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  // x [1, 3, 1]: channels 1, 2, 3; size 3, alpha 3 (alpha / size = 1), beta 1, bias 1:
  // y_c = x_c / (1 + sum of x^2 over c-1..c+1): 1 / (1 + 1 + 4), 2 / (1 + 1 + 4 + 9), 3 / (1 + 4 + 9).
  DevBuf<float> dx(*ctx, std::vector<float>{1, 2, 3}), dy(*ctx, 3);
  REQUIRE(cu::lrn(1, 3, 1, 3, 3.f, 1.f, 1.f, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  const auto y = dy.host();
  CHECK(y[0] == doctest::Approx(1.0 / 6));
  CHECK(y[1] == doctest::Approx(2.0 / 15));
  CHECK(y[2] == doctest::Approx(3.0 / 14));
}

TEST_CASE("device.cumsum: inclusive, exclusive and reverse, f32 and a wrapping int32, by hand") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  DevBuf<float> dx(*ctx, std::vector<float>{1, 2, 3, 4}), dy(*ctx, 4);  // [1, 4, 1]
  REQUIRE(cu::cumsum(1, 4, 1, false, false, cu::ScanType::kF32, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<float>{1, 3, 6, 10});
  REQUIRE(cu::cumsum(1, 4, 1, true, true, cu::ScanType::kF32, dx.get(), dy.get(), ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<float>{9, 7, 4, 0});
  // [2, 2] along axis 0 (outer 1, len 2, inner 2): the int32 maximum plus 1 wraps.
  DevBuf<int32_t> ix(*ctx, std::vector<int32_t>{2147483647, 5, 1, -5}), iy(*ctx, 4);
  REQUIRE(cu::cumsum(1, 2, 2, false, false, cu::ScanType::kI32, ix.get(), iy.get(), ctx->stream()) == cudaSuccess);
  CHECK(iy.host() == std::vector<int32_t>{2147483647, 5, -2147483647 - 1, 0});
}

TEST_CASE("device.bias_act: bias then ReLU (a NaN stays) or tanh-GELU, against a naive loop at odd sizes") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t cols : {1, 3, 13, 127}) {
    for (const cu::BiasAct act : {cu::BiasAct::kNone, cu::BiasAct::kRelu, cu::BiasAct::kGeluTanh}) {
      for (const bool with_bias : {true, false}) {
        CAPTURE(cols);
        CAPTURE(static_cast<int>(act));
        CAPTURE(with_bias);
        const int64_t rows = 5;
        std::vector<float> d = random_floats(rows * cols, 7 + static_cast<uint32_t>(cols), -3, 3);
        d[0] = nan;
        const std::vector<float> bias = random_floats(cols, 3, -1, 1);
        DevBuf<float> dd(*ctx, d), db(*ctx, bias);
        REQUIRE(cu::bias_act(rows, cols, with_bias ? db.get() : nullptr, act, dd.get(), ctx->stream()) == cudaSuccess);
        const std::vector<float> got = dd.host();
        int wrong = 0;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            const double x = static_cast<double>(d[static_cast<size_t>(r * cols + c)]) +
                             (with_bias ? bias[static_cast<size_t>(c)] : 0.0);
            double want = x;
            if (act == cu::BiasAct::kRelu) want = x < 0 ? 0 : x;
            if (act == cu::BiasAct::kGeluTanh)
              want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
            const float g = got[static_cast<size_t>(r * cols + c)];
            if (std::isnan(want))
              wrong += !std::isnan(g);
            else
              wrong += std::fabs(g - want) > 1e-5 * (1 + std::fabs(want));
          }
        }
        CHECK(wrong == 0);
      }
    }
  }
}
