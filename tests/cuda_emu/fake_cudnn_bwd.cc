// Emulated cuDNN, the backward-data convolution (ConvTranspose: kernels/cuda/cudnn_conv_transpose.cc)
// and cudnnAddTensor, written from the cuDNN API reference, independently of fusert's CPU
// ConvTranspose:
//   cudnnConvolutionBackwardData: dx = alpha * conv^T(dy, w) + beta * dx (dx unread when beta = 0),
//     dx[n, g*cg + c, iy, ix] = sum over the group's filters k and taps (r, s) with
//     iy = oy * u - pad_h + r * dil_h (and the same for x) of dy[n, k, oy, ox] * w[k, c, r, s]
//     (accumulated in double);
//   cudnnAddTensor: C = alpha * A + beta * C, A broadcast along its dims of 1.
// The heuristic lists FFT_TILING and WINOGRAD_NONFUSED first where they apply (as the library
// may), so that a caller asking for exact fp32 must skip them; every algorithm's workspace is
// checked and scribbled on.
#include <cudnn.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudnn_internal.h"

using namespace fake_cudnn;

namespace {

namespace emu = fusert::emu;

size_t bwd_workspace(cudnnConvolutionBwdDataAlgo_t algo, const Conv& c) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0:
      return 0;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1:
      return 512 + sizeof(float) * static_cast<size_t>(c.cg);  // nonzero: the workspace plumbing is used
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING:
      return size_t{1} << 30;
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED:
      return size_t{4} << 20;
    default:
      return 0;
  }
}

bool bwd_supported(cudnnConvolutionBwdDataAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 || algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ||
         algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

// dx [n, c, h, w] of the forward convolution `cv` (x = dx, y = dy).
void transpose_convolve(const Conv& cv, const float* dy, const float* w, float a, float b, float* dx) {
  const int kg = cv.k / cv.groups;
#pragma omp parallel for schedule(static)
  for (int64_t plane = 0; plane < int64_t{cv.n} * cv.c; ++plane) {
    const int ni = static_cast<int>(plane / cv.c), ch = static_cast<int>(plane % cv.c);
    const int g = ch / cv.cg, ci = ch % cv.cg;
    for (int iy = 0; iy < cv.h; ++iy)
      for (int ix = 0; ix < cv.w; ++ix) {
        double acc = 0;
        for (int k = g * kg; k < (g + 1) * kg; ++k)
          for (int r = 0; r < cv.r; ++r) {
            const int ty = iy + cv.pad_h - r * cv.dil_h;
            if (ty < 0 || ty % cv.u != 0 || ty / cv.u >= cv.oh) continue;
            for (int s = 0; s < cv.s; ++s) {
              const int tx = ix + cv.pad_w - s * cv.dil_w;
              if (tx < 0 || tx % cv.v != 0 || tx / cv.v >= cv.ow) continue;
              acc += static_cast<double>(dy[((int64_t{ni} * cv.k + k) * cv.oh + ty / cv.u) * cv.ow + tx / cv.v]) *
                     w[((int64_t{k} * cv.cg + ci) * cv.r + r) * cv.s + s];
            }
          }
        float& out = dx[(plane * cv.h + iy) * cv.w + ix];
        out = a * static_cast<float>(acc) + (b != 0.f ? b * out : 0.f);
      }
  }
}

}  // namespace

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  if (!live(handle) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = 6;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  if (!live(handle) || !returnedAlgoCount || !perfResults || requestedAlgoCount < 1) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(dxDesc, wDesc, convDesc, dyDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  const cudnnMathType_t math = convDesc->math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> all;
  auto add = [&](cudnnConvolutionBwdDataAlgo_t algo) {
    cudnnConvolutionBwdDataAlgoPerf_t p;
    std::memset(&p, 0, sizeof p);
    p.algo = algo;
    p.status = CUDNN_STATUS_SUCCESS;
    p.time = static_cast<float>(all.size() + 1);
    p.memory = bwd_workspace(algo, cv);
    p.determinism = CUDNN_DETERMINISTIC;
    p.mathType = math;
    all.push_back(p);
  };
  if (cv.u == 1 && cv.v == 1 && cv.dil_h == 1 && cv.dil_w == 1) {
    add(CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED);
    add(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING);
  }
  add(CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  add(CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
  const int n = std::min<int>(requestedAlgoCount, static_cast<int>(all.size()));
  std::copy(all.begin(), all.begin() + n, perfResults);
  *returnedAlgoCount = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes) {
  if (!live(handle) || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(dxDesc, wDesc, convDesc, dyDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (!bwd_supported(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *sizeInBytes = bwd_workspace(algo, cv);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                       const cudnnFilterDescriptor_t wDesc, const void* w,
                                                       const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                       const cudnnConvolutionDescriptor_t convDesc,
                                                       cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                                       size_t workSpaceSizeInBytes, const void* beta,
                                                       const cudnnTensorDescriptor_t dxDesc, void* dx) {
  if (!live(handle) || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(dxDesc, wDesc, convDesc, dyDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (cv.flip) return fail(CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_CONVOLUTION mode is not emulated");
  if (!w || !dy || !dx) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnConvolutionBackwardData: null pointer");
  if (!aligned4(w) || !aligned4(dy) || !aligned4(dx))
    return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, "cudnnConvolutionBackwardData: misaligned pointer");
  if (!bwd_supported(algo)) return fail(CUDNN_STATUS_NOT_SUPPORTED, "cudnnConvolutionBackwardData: algorithm");
  const size_t ws = bwd_workspace(algo, cv);
  if (workSpaceSizeInBytes < ws)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionBackwardData: workspace of " +
                                            std::to_string(workSpaceSizeInBytes) + " bytes, the algorithm needs " +
                                            std::to_string(ws));
  const std::string what = "cuDNN cudnnConvolutionBackwardData";
  const size_t dxb = sizeof(float) * cv.x_elems(), dyb = sizeof(float) * cv.y_elems(),
               wb = sizeof(float) * cv.w_elems();
  bool ok = emu::check_device_range(dy, dyb, emu::Access::kRead, what + " dy");
  ok &= emu::check_device_range(w, wb, emu::Access::kRead, what + " w");
  ok &= emu::check_device_range(dx, dxb, emu::Access::kWrite, what + " dx");
  if (ws) ok &= emu::check_device_range(workSpace, ws, emu::Access::kWrite, what + " workspace");
  if (overlaps(dx, dxb, dy, dyb) || overlaps(dx, dxb, w, wb)) {
    emu::record_violation(what + ": dx overlaps dy or w");
    ok = false;
  }
  if (!ok) return CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const auto* dyp = static_cast<const float*>(dy);
  const auto* wp = static_cast<const float*>(w);
  auto* dxp = static_cast<float*>(dx);
  emu::emu_enqueue(handle->stream, [cv, dyp, wp, dxp, a, b, workSpace, ws] {
    emu::scribble(workSpace, ws);
    transpose_convolve(cv, dyp, wp, a, b, dxp);
    emu::count_op(emu::OpKind::kLibrary);
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t aDesc,
                                         const void* A, const void* beta, const cudnnTensorDescriptor_t cDesc,
                                         void* C) {
  if (!live(handle) || !alpha || !beta || !live(aDesc) || !live(cDesc) || !aDesc->set || !cDesc->set)
    return CUDNN_STATUS_BAD_PARAM;
  const int ad[4] = {aDesc->n, aDesc->c, aDesc->h, aDesc->w}, cd[4] = {cDesc->n, cDesc->c, cDesc->h, cDesc->w};
  for (int d = 0; d < 4; ++d)
    if (ad[d] != 1 && ad[d] != cd[d]) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnAddTensor: A does not broadcast to C");
  const size_t ab = sizeof(float) * ad[0] * ad[1] * ad[2] * ad[3], cb = sizeof(float) * cd[0] * cd[1] * cd[2] * cd[3];
  bool ok = emu::check_device_range(A, ab, emu::Access::kRead, "cuDNN cudnnAddTensor A");
  ok &= emu::check_device_range(C, cb, emu::Access::kWrite, "cuDNN cudnnAddTensor C");
  if (!ok) return CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const auto* ap = static_cast<const float*>(A);
  auto* cp = static_cast<float*>(C);
  const std::vector<int> as(ad, ad + 4), cs(cd, cd + 4);
  emu::emu_enqueue(handle->stream, [as, cs, ap, cp, a, b] {
    int64_t i = 0;
    for (int n = 0; n < cs[0]; ++n)
      for (int c = 0; c < cs[1]; ++c)
        for (int h = 0; h < cs[2]; ++h)
          for (int w = 0; w < cs[3]; ++w, ++i) {
            const int64_t ai =
                ((int64_t{as[0] == 1 ? 0 : n} * as[1] + (as[1] == 1 ? 0 : c)) * as[2] + (as[2] == 1 ? 0 : h)) * as[3] +
                (as[3] == 1 ? 0 : w);
            cp[i] = a * ap[ai] + b * cp[i];
          }
    emu::count_op(emu::OpKind::kLibrary);
  });
  return CUDNN_STATUS_SUCCESS;
}
