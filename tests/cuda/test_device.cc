// CUDA library anchors and layout kernels against the CPU oracle or a naive double loop: cuDNN
// conv with every bias/z/relu epilogue (odd sizes, grouped depthwise), cuBLASLt GEMM epilogues
// (bias+relu, C residual, trans_a/trans_b, batch 3, broadcast batch), strided copy, Gather's
// bad-index flag, Cast and Where. Each test skips with a message when no device is present.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/cublas_batched.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/layout.cuh"
#include "tests/cuda/device_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using fusert::StatusCode;
using fusert::cudatest::DevBuf;
using fusert::cudatest::have_device;
using fusert::cudatest::make_context;
using fusert::test::kTol;
using fusert::test::max_rel_err;
using fusert::test::random_floats;

namespace {

// ---------------------------------------------------------------- cuDNN conv
kern::ConvParams conv_params(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t stride,
                             int64_t pad, int64_t group) {
  kern::ConvParams p;
  p.n = n, p.c = c, p.h = h, p.w = w, p.m = m, p.kh = k, p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
  p.group = group;
  p.oh = (h + 2 * pad - k) / stride + 1;
  p.ow = (w + 2 * pad - k) / stride + 1;
  return p;
}

void check_conv(cu::Context& ctx, const kern::ConvParams& p, const cu::ConvEpilogue& ep, uint32_t seed) {
  INFO("bias=" << ep.bias << " z=" << ep.z << " relu=" << ep.relu << " group=" << p.group);
  const int64_t ny = p.n * p.m * p.oh * p.ow;
  const auto x = random_floats(p.n * p.c * p.h * p.w, seed);
  const auto w = random_floats(p.m * (p.c / p.group) * p.kh * p.kw, seed + 1);
  const auto bias = random_floats(p.m, seed + 2);
  const auto z = random_floats(ny, seed + 3);

  std::vector<float> ref(static_cast<size_t>(ny));
  cpu::conv2d(p, x.data(), w.data(), ep.bias ? bias.data() : nullptr, ref.data());
  for (size_t i = 0; i < ref.size(); ++i) {
    if (ep.z) ref[i] += z[i];
    if (ep.relu) ref[i] = std::max(ref[i], 0.f);
  }

  auto conv = cu::CudnnConv::create(ctx, p, ep, "test conv");
  REQUIRE_MESSAGE(conv.ok(), conv.status().message());
  REQUIRE(ctx.reserve_workspace(conv.value()->workspace_bytes()).ok());
  DevBuf<float> dx(ctx, x), dw(ctx, w), db(ctx, bias), dz(ctx, z), dy(ctx, static_cast<size_t>(ny));
  const auto st =
      conv.value()->run(ctx, dx.get(), dw.get(), ep.bias ? db.get() : nullptr, ep.z ? dz.get() : nullptr, dy.get());
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(max_rel_err(dy.host(), ref) <= kTol);
}

// ---------------------------------------------------------------- cuBLASLt GEMM
std::vector<float> naive_gemm(const cu::GemmDesc& d, const std::vector<float>& a, const std::vector<float>& b,
                              const std::vector<float>& bias, const std::vector<float>& c) {
  std::vector<float> y(static_cast<size_t>((d.batch - 1) * d.stride_d + d.m * d.n));
  for (int64_t bt = 0; bt < d.batch; ++bt) {
    const float* A = a.data() + bt * d.stride_a;
    const float* B = b.data() + bt * d.stride_b;
    for (int64_t i = 0; i < d.m; ++i)
      for (int64_t j = 0; j < d.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < d.k; ++k) {
          const double av = d.trans_a ? A[k * d.m + i] : A[i * d.k + k];
          const double bv = d.trans_b ? B[j * d.k + k] : B[k * d.n + j];
          acc += av * bv;
        }
        double v = d.alpha * acc;
        if (d.bias) v += bias[static_cast<size_t>(j)];
        if (d.beta != 0.f) v += d.beta * c[static_cast<size_t>(bt * d.stride_c + i * d.n + j)];
        if (d.act == cu::GemmDesc::kRelu) v = std::max(v, 0.0);
        y[static_cast<size_t>(bt * d.stride_d + i * d.n + j)] = static_cast<float>(v);
      }
  }
  return y;
}

// Runs `d` with random operands (in place into C when `in_place`) and compares to naive_gemm.
void check_gemm(cu::Context& ctx, const cu::GemmDesc& d, bool in_place, uint32_t seed) {
  INFO("M=" << d.m << " N=" << d.n << " K=" << d.k << " batch=" << d.batch << " trans_a=" << d.trans_a
            << " trans_b=" << d.trans_b << " beta=" << d.beta << " in_place=" << in_place);
  const auto size_of = [&](int64_t stride, int64_t one) { return (d.batch - 1) * stride + one; };
  const auto a = random_floats(size_of(d.stride_a, d.m * d.k), seed);
  const auto b = random_floats(size_of(d.stride_b, d.k * d.n), seed + 1);
  const auto bias = random_floats(d.n, seed + 2);
  const auto c = random_floats(size_of(std::max(d.stride_c, d.stride_d), d.m * d.n), seed + 3);
  const auto ref = naive_gemm(d, a, b, bias, c);

  auto g = cu::LtGemm::create(ctx, d, "test gemm");
  REQUIRE_MESSAGE(g.ok(), g.status().message());
  DevBuf<float> da(ctx, a), dbm(ctx, b), dbias(ctx, bias), dc(ctx, c), dd(ctx, ref.size());
  float* out = in_place ? dc.get() : dd.get();
  const auto st =
      g.value()->run(ctx, da.get(), dbm.get(), d.bias ? dbias.get() : nullptr, d.beta != 0.f ? dc.get() : nullptr, out);
  REQUIRE_MESSAGE(st.ok(), st.message());
  CHECK(max_rel_err(in_place ? dc.host() : dd.host(), ref) <= 1e-5);
}

}  // namespace

TEST_CASE("device.no_device_error") {
  if (have_device()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  auto ctx = cu::Context::create();
  REQUIRE_FALSE(ctx.ok());
  CHECK(ctx.status().code() == StatusCode::kDeviceError);
  CHECK(ctx.status().message().find("CUDA device") != std::string::npos);
}

TEST_CASE("device.context") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  CHECK(ctx->device_name().find("(sm_") != std::string::npos);
  CHECK(ctx->stream() != nullptr);
  const size_t before = ctx->workspace_bytes();
  REQUIRE(ctx->reserve_workspace(before + (1u << 20)).ok());
  CHECK(ctx->workspace_bytes() >= before + (1u << 20));
}

TEST_CASE("device.cudnn_conv_epilogues") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const auto p = conv_params(2, 3, 13, 13, 5, 3, 2, 1, 1);
  uint32_t seed = 100;
  for (int mask = 0; mask < 8; ++mask) {
    cu::ConvEpilogue ep;
    ep.bias = mask & 1, ep.z = mask & 2, ep.relu = mask & 4;
    check_conv(*ctx, p, ep, seed += 10);
  }
}

TEST_CASE("device.cudnn_conv_depthwise") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  auto p = conv_params(1, 8, 11, 9, 8, 3, 1, 1, 8);
  check_conv(*ctx, p, {true, true, true}, 7);
  check_conv(*ctx, p, {true, false, true}, 17);
  check_conv(*ctx, p, {}, 27);
  p = conv_params(2, 6, 13, 13, 12, 3, 2, 1, 3);  // grouped, 2 outputs per group
  check_conv(*ctx, p, {true, false, false}, 37);
}

TEST_CASE("device.cudnn_conv_rejects_asymmetric_pads") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  auto p = conv_params(1, 3, 8, 8, 4, 3, 1, 1, 1);
  p.pad_bottom = 2;
  p.oh += 1;
  auto conv = cu::CudnnConv::create(*ctx, p, {}, "asym");
  REQUIRE_FALSE(conv.ok());
  CHECK(conv.status().code() == StatusCode::kUnsupported);
}

TEST_CASE("device.cublaslt_gemm_bias_relu") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  cu::GemmDesc d;
  d.m = 13, d.n = 7, d.k = 29;
  d.bias = true;
  d.act = cu::GemmDesc::kRelu;
  check_gemm(*ctx, d, false, 1);
  d.m = 1, d.n = 127, d.k = 3;  // a single row, odd widths
  check_gemm(*ctx, d, false, 2);
}

TEST_CASE("device.cublaslt_gemm_residual_batched") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  cu::GemmDesc d;
  d.m = 5, d.n = 11, d.k = 17, d.batch = 3;
  d.trans_b = true;
  d.stride_a = d.m * d.k, d.stride_b = d.n * d.k, d.stride_c = d.stride_d = d.m * d.n;
  d.alpha = 0.5f, d.beta = 1.f;
  d.bias = true;
  check_gemm(*ctx, d, false, 11);
  // trans_a, B broadcast over the batch (stride 0), residual accumulated in place with relu.
  d.trans_b = false, d.trans_a = true;
  d.stride_b = 0;
  d.bias = false;
  d.act = cu::GemmDesc::kRelu;
  check_gemm(*ctx, d, true, 21);
}

TEST_CASE("device.layout_strided_copy") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  // Transpose x [2,3,4] with perm (2,0,1) -> y [4,2,3]: y[i,j,k] = x[j,k,i].
  std::vector<float> x(24);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  DevBuf<float> dx(*ctx, x), dy(*ctx, 24);
  const int64_t shape[] = {4, 2, 3}, in_strides[] = {1, 12, 4}, out_strides[] = {6, 3, 1};
  REQUIRE(cu::strided_copy(3, shape, dx.get(), 0, in_strides, dy.get(), 0, out_strides, 4, ctx->stream()) ==
          cudaSuccess);
  const auto y = dy.host();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k)
        CHECK(y[static_cast<size_t>(i * 6 + j * 3 + k)] == x[static_cast<size_t>(j * 12 + k * 4 + i)]);

  // Slice of int64 x[1:5:2] into y at offset 1.
  const std::vector<int64_t> xi = {10, 11, 12, 13, 14};
  DevBuf<int64_t> dxi(*ctx, xi), dyi(*ctx, std::vector<int64_t>{-1, -1, -1});
  const int64_t s_shape[] = {2}, s_in[] = {2}, s_out[] = {1};
  REQUIRE(cu::strided_copy(1, s_shape, dxi.get(), 1, s_in, dyi.get(), 1, s_out, 8, ctx->stream()) == cudaSuccess);
  CHECK(dyi.host() == std::vector<int64_t>{-1, 11, 13});
}

TEST_CASE("device.layout_gather_bad_index") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  // x [2,5,3] gathered along axis 1.
  std::vector<float> x(30);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i + 1);
  DevBuf<float> dx(*ctx, x), dy(*ctx, 24);
  DevBuf<int> flag(*ctx, std::vector<int>{0});
  DevBuf<int64_t> good(*ctx, std::vector<int64_t>{4, -1, 0, -5});
  REQUIRE(cu::gather(2, 5, 3, dx.get(), 4, good.get(), true, 4, dy.get(), flag.get(), ctx->stream()) == cudaSuccess);
  auto y = dy.host();
  const int64_t rows[] = {4, 4, 0, 0};
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t r = 0; r < 3; ++r)
        CHECK(y[static_cast<size_t>((o * 4 + j) * 3 + r)] == x[static_cast<size_t>((o * 5 + rows[j]) * 3 + r)]);
  CHECK(flag.host()[0] == 0);

  DevBuf<int32_t> bad(*ctx, std::vector<int32_t>{1, 5, -6, 2});
  REQUIRE(cu::gather(2, 5, 3, dx.get(), 4, bad.get(), false, 4, dy.get(), flag.get(), ctx->stream()) == cudaSuccess);
  y = dy.host();
  CHECK(flag.host()[0] == 1);
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t r = 0; r < 3; ++r) {
      CHECK(y[static_cast<size_t>((o * 4 + 1) * 3 + r)] == 0.f);  // bad rows are zero
      CHECK(y[static_cast<size_t>((o * 4 + 2) * 3 + r)] == 0.f);
      CHECK(y[static_cast<size_t>((o * 4 + 0) * 3 + r)] == x[static_cast<size_t>((o * 5 + 1) * 3 + r)]);
    }
}

TEST_CASE("device.layout_cast") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const std::vector<int64_t> xi = {0, -3, int64_t{1} << 40, 123456789, -(int64_t{1} << 53) - 1};
  DevBuf<int64_t> dxi(*ctx, xi);
  DevBuf<float> dyf(*ctx, xi.size());
  REQUIRE(cu::cast(5, dxi.get(), cu::CastType::kI64, dyf.get(), cu::CastType::kF32, ctx->stream()) == cudaSuccess);
  const auto yf = dyf.host();
  for (size_t i = 0; i < xi.size(); ++i) CHECK(yf[i] == static_cast<float>(static_cast<double>(xi[i])));

  const std::vector<float> xf = {0.f, -2.7f, 0.5f, 3.9f};
  DevBuf<float> dxf(*ctx, xf);
  DevBuf<uint8_t> dyb(*ctx, xf.size());
  DevBuf<int32_t> dy32(*ctx, xf.size());
  REQUIRE(cu::cast(4, dxf.get(), cu::CastType::kF32, dyb.get(), cu::CastType::kBool, ctx->stream()) == cudaSuccess);
  REQUIRE(cu::cast(4, dxf.get(), cu::CastType::kF32, dy32.get(), cu::CastType::kI32, ctx->stream()) == cudaSuccess);
  CHECK(dyb.host() == std::vector<uint8_t>{0, 1, 1, 1});
  CHECK(dy32.host() == std::vector<int32_t>{0, -2, 0, 3});  // truncation toward zero
}

TEST_CASE("device.layout_where") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  // cond [2,1], a [2,3], b scalar -> y [2,3].
  DevBuf<uint8_t> dc(*ctx, std::vector<uint8_t>{1, 0});
  DevBuf<float> da(*ctx, std::vector<float>{1, 2, 3, 4, 5, 6}), db(*ctx, std::vector<float>{-1}), dy(*ctx, 6);
  const int64_t shape[] = {2, 3}, cs[] = {1, 0}, as[] = {3, 1}, bs[] = {0, 0};
  REQUIRE(cu::where(2, shape, dc.get(), cs, da.get(), as, db.get(), bs, dy.get(), ctx->stream()) == cudaSuccess);
  CHECK(dy.host() == std::vector<float>{1, 2, 3, -1, -1, -1});
}

TEST_CASE("device.gemm_batched_nt: pointer-array batched GEMM against a naive loop") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const int64_t m = 5, n = 7, k = 13;
  const int batch = 3;
  std::vector<std::unique_ptr<DevBuf<float>>> as, ws, ys;
  std::vector<std::vector<float>> ha, hw;
  std::vector<const float*> pa, pw;
  std::vector<float*> py;
  for (int i = 0; i < batch; ++i) {
    ha.push_back(random_floats(m * k, 100 + i));
    hw.push_back(random_floats(n * k, 200 + i));
    as.push_back(std::make_unique<DevBuf<float>>(*ctx, ha.back()));
    ws.push_back(std::make_unique<DevBuf<float>>(*ctx, hw.back()));
    ys.push_back(std::make_unique<DevBuf<float>>(*ctx, static_cast<size_t>(m * n)));
    pa.push_back(as.back()->get());
    pw.push_back(ws.back()->get());
    py.push_back(ys.back()->get());
  }
  std::vector<const float*> ptrs(pa);
  ptrs.insert(ptrs.end(), pw.begin(), pw.end());
  ptrs.insert(ptrs.end(), py.begin(), py.end());
  const float** dptrs = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&dptrs), ptrs.size() * sizeof(float*)) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(dptrs, ptrs.data(), ptrs.size() * sizeof(float*), cudaMemcpyHostToDevice, ctx->stream()) ==
          cudaSuccess);
  const auto st = cu::gemm_batched_nt(*ctx, m, n, k, dptrs, dptrs + batch, const_cast<float* const*>(dptrs + 2 * batch),
                                      batch, "test");
  REQUIRE_MESSAGE(st.ok(), st.message());
  for (int i = 0; i < batch; ++i) {
    std::vector<float> ref(static_cast<size_t>(m * n));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += static_cast<double>(ha[i][r * k + p]) * hw[i][c * k + p];
        ref[static_cast<size_t>(r * n + c)] = static_cast<float>(acc);
      }
    CHECK(max_rel_err(ys[static_cast<size_t>(i)]->host(), ref) <= 1e-5);
  }
  cudaFree(dptrs);
}

TEST_CASE("device.conv_algorithm: exact fp32 skips Winograd and FFT; with TF32 the heuristics' first may be one") {
  FUSERT_REQUIRE_DEVICE();
  auto ctx = make_context();
  const kern::ConvParams p = conv_params(1, 16, 14, 14, 16, 3, 1, 1, 1);
  for (const bool tf32 : {false, true}) {
    CAPTURE(tf32);
    ctx->tf32 = tf32;
    auto conv = cu::CudnnConv::create(*ctx, p, {}, "3x3");
    REQUIRE_MESSAGE(conv.ok(), conv.status().message());
    const cudnnConvolutionFwdAlgo_t a = conv.value()->algorithm();
    const bool transform = a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
                           a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    if (!tf32) {
      CHECK_FALSE(transform);
      check_conv(*ctx, p, {}, 11);  // TF32's rounding would not meet the fp32 tolerance
    }
  }
  ctx->tf32 = false;
}
