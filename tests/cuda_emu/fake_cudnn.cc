// Emulated cuDNN (the legacy-API subset kernels/cuda/cudnn_conv.cc uses), for fusert_emu.
// Descriptors keep their parameters and are validated as the cuDNN API reference describes;
// the forward convolution runs on the CPU in NCHW fp32 (im2col + Eigen GEMM per image and
// group), written from the documented semantics, independently of fusert's CPU kernels:
//   cudnnConvolutionForward:               y = alpha * conv(x, w) + beta * y   (y unread when beta = 0)
//   cudnnConvolutionBiasActivationForward: y = act(alpha1 * conv(x, w) + alpha2 * z + bias)
// with conv a cross-correlation (or a true convolution for CUDNN_CONVOLUTION) with the
// descriptor's pads, strides, dilations and group count. z is always read and multiplied, even
// when alpha2 = 0 (0 * NaN = NaN), as the worst case of the real library may do (for diagnosis
// only, FUSERT_EMU_LENIENT_Z=1 skips z when alpha2 = 0). Work is
// enqueued on the handle's stream (captured into CUDA Graphs like any other stream work); the
// algorithms' workspace is checked and scribbled on.
#include <cudnn.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/cuda_emu/emu.h"

#include "tests/cuda_emu/fake_cudnn_internal.h"

namespace fake_cudnn {

Handles& handles() {
  static Handles* h = new Handles();
  return *h;
}

cudnnStatus_t fail(cudnnStatus_t st, const std::string& why) {
  std::fprintf(stderr, "fusert-emu cuDNN: %s\n", why.c_str());
  return st;
}

namespace {
int out_dim(int in, int pad, int filter, int dil, int stride) {
  return 1 + (in + 2 * pad - ((filter - 1) * dil + 1)) / stride;
}

}  // namespace

cudnnStatus_t conv_of(const cudnnTensorStruct* x, const cudnnFilterStruct* w, const cudnnConvolutionStruct* cd,
                      const cudnnTensorStruct* y, Conv* cv) {
  if (!live(x) || !live(w) || !live(cd) || (y && !live(y))) return fail(CUDNN_STATUS_BAD_PARAM, "unknown descriptor");
  if (!x->set || !w->set || !cd->set || (y && !y->set)) return fail(CUDNN_STATUS_BAD_PARAM, "descriptor not set");
  if (x->type != CUDNN_DATA_FLOAT || w->type != CUDNN_DATA_FLOAT || (y && y->type != CUDNN_DATA_FLOAT) ||
      cd->compute != CUDNN_DATA_FLOAT) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED, "the emulation has fp32 data and compute only");
  }
  if (w->c * cd->groups != x->c || w->k % cd->groups != 0) {
    return fail(CUDNN_STATUS_BAD_PARAM, "filter channels " + std::to_string(w->c) + " x groups " +
                                            std::to_string(cd->groups) + " != input channels " + std::to_string(x->c) +
                                            " (or K not divisible by the groups)");
  }
  Conv c{};
  c.n = x->n;
  c.c = x->c;
  c.h = x->h;
  c.w = x->w;
  c.k = w->k;
  c.cg = w->c;
  c.r = w->h;
  c.s = w->w;
  c.pad_h = cd->pad_h;
  c.pad_w = cd->pad_w;
  c.u = cd->u;
  c.v = cd->v;
  c.dil_h = cd->dil_h;
  c.dil_w = cd->dil_w;
  c.groups = cd->groups;
  c.flip = cd->mode == CUDNN_CONVOLUTION;
  c.oh = out_dim(c.h, c.pad_h, c.r, c.dil_h, c.u);
  c.ow = out_dim(c.w, c.pad_w, c.s, c.dil_w, c.v);
  if (c.oh <= 0 || c.ow <= 0) return fail(CUDNN_STATUS_BAD_PARAM, "empty convolution output");
  if (y && (y->n != c.n || y->c != c.k || y->h != c.oh || y->w != c.ow)) {
    return fail(CUDNN_STATUS_BAD_PARAM,
                "y descriptor [" + std::to_string(y->n) + "," + std::to_string(y->c) + "," + std::to_string(y->h) +
                    "," + std::to_string(y->w) + "] is not the convolution output [" + std::to_string(c.n) + "," +
                    std::to_string(c.k) + "," + std::to_string(c.oh) + "," + std::to_string(c.ow) + "]");
  }
  *cv = c;
  return CUDNN_STATUS_SUCCESS;
}

bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  const char* pa = static_cast<const char*>(a);
  const char* pb = static_cast<const char*>(b);
  return pa < pb + bn && pb < pa + an;
}

bool aligned4(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 3u) == 0; }

}  // namespace fake_cudnn

namespace {

namespace emu = fusert::emu;
using namespace fake_cudnn;

// Workspace each algorithm asks for (some nonzero, so the workspace plumbing is exercised).
size_t algo_workspace(cudnnConvolutionFwdAlgo_t algo, const Conv& c) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return 0;
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return 256 + sizeof(int) * static_cast<size_t>(c.k);
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return sizeof(float) * static_cast<size_t>(c.cg) * c.r * c.s * c.oh * c.ow;
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return size_t{1} << 30;
    default:
      return 0;
  }
}

bool algo_supported(cudnnConvolutionFwdAlgo_t algo) {
  return algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

// conv(x, w) into out [n, k, oh, ow]: per image and group, W_g [k/G, cg*r*s] times the
// im2col matrix [cg*r*s, oh*ow].
void convolve(const Conv& c, const float* x, const float* w, float* out) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const int kg = c.k / c.groups;
  const int64_t p = int64_t{c.oh} * c.ow, q = int64_t{c.cg} * c.r * c.s;
  const int tasks = c.n * c.groups;
  auto one = [&](int task, std::vector<float>& col) {
    const int ni = task / c.groups, g = task % c.groups;
    col.assign(static_cast<size_t>(q * p), 0.f);
    for (int ci = 0; ci < c.cg; ++ci) {
      const float* plane = x + (int64_t{ni} * c.c + int64_t{g} * c.cg + ci) * c.h * c.w;
      for (int ri = 0; ri < c.r; ++ri) {
        for (int si = 0; si < c.s; ++si) {
          // A true convolution reads the filter flipped: tap (ri, si) holds w[r-1-ri][s-1-si].
          const int64_t row = (int64_t{ci} * c.r + (c.flip ? c.r - 1 - ri : ri)) * c.s + (c.flip ? c.s - 1 - si : si);
          float* dst = col.data() + row * p;
          for (int oy = 0; oy < c.oh; ++oy) {
            const int iy = oy * c.u - c.pad_h + ri * c.dil_h;
            if (iy < 0 || iy >= c.h) continue;
            for (int ox = 0; ox < c.ow; ++ox) {
              const int ix = ox * c.v - c.pad_w + si * c.dil_w;
              if (ix >= 0 && ix < c.w) dst[int64_t{oy} * c.ow + ox] = plane[int64_t{iy} * c.w + ix];
            }
          }
        }
      }
    }
    Eigen::Map<const RowMat> wm(w + int64_t{g} * kg * q, kg, q);
    Eigen::Map<const RowMat> cm(col.data(), q, p);
    Eigen::Map<RowMat> ym(out + (int64_t{ni} * c.k + int64_t{g} * kg) * p, kg, p);
    ym.noalias() = wm * cm;
  };
  if (c.groups == 1) {
    std::vector<float> col;
    for (int t = 0; t < tasks; ++t) one(t, col);  // Eigen parallelises each product
  } else {
#pragma omp parallel
    {
      std::vector<float> col;
#pragma omp for schedule(static)
      for (int t = 0; t < tasks; ++t) one(t, col);
    }
  }
}

struct Operands {
  const float* x;
  const float* w;
  const float* z;     // null: none
  const float* bias;  // null: none
  float* y;
  void* ws;
  size_t ws_bytes;
};

// Common argument checks of both forward calls.
cudnnStatus_t check_operands(const char* call, const Conv& c, const Operands& o, cudnnConvolutionFwdAlgo_t algo,
                             size_t ws_given) {
  if (!o.x || !o.w || !o.y) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null x, w or y");
  if (!aligned4(o.x) || !aligned4(o.w) || !aligned4(o.y) || (o.z && !aligned4(o.z)) || (o.bias && !aligned4(o.bias))) {
    return fail(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER, std::string(call) + ": misaligned pointer");
  }
  if (!algo_supported(algo)) return fail(CUDNN_STATUS_NOT_SUPPORTED, std::string(call) + ": algorithm not supported");
  if (ws_given < o.ws_bytes) {
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": workspace of " + std::to_string(ws_given) +
                                            " bytes, the algorithm needs " + std::to_string(o.ws_bytes));
  }
  const std::string what = std::string("cuDNN ") + call;
  bool ok = emu::check_device_range(o.x, sizeof(float) * c.x_elems(), emu::Access::kRead, what + " x");
  ok &= emu::check_device_range(o.w, sizeof(float) * c.w_elems(), emu::Access::kRead, what + " w");
  ok &= emu::check_device_range(o.y, sizeof(float) * c.y_elems(), emu::Access::kWrite, what + " y");
  if (o.z) ok &= emu::check_device_range(o.z, sizeof(float) * c.y_elems(), emu::Access::kRead, what + " z");
  if (o.bias) ok &= emu::check_device_range(o.bias, sizeof(float) * c.k, emu::Access::kRead, what + " bias");
  if (o.ws_bytes) ok &= emu::check_device_range(o.ws, o.ws_bytes, emu::Access::kWrite, what + " workspace");
  const size_t yb = sizeof(float) * c.y_elems();
  if (overlaps(o.x, sizeof(float) * c.x_elems(), o.y, yb) || overlaps(o.w, sizeof(float) * c.w_elems(), o.y, yb)) {
    emu::record_violation(what + ": y overlaps x or w (cuDNN convolutions are not in place)");
    ok = false;
  }
  if (o.z && o.z != o.y && overlaps(o.z, yb, o.y, yb)) {
    emu::record_violation(what + ": z partially overlaps y");
    ok = false;
  }
  if (o.ws_bytes &&
      (overlaps(o.ws, o.ws_bytes, o.y, yb) || overlaps(o.ws, o.ws_bytes, o.x, sizeof(float) * c.x_elems()))) {
    emu::record_violation(what + ": the workspace overlaps x or y");
    ok = false;
  }
  return ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND;
}

float activate(const cudnnActivationStruct& a, float v) {
  if (a.mode == CUDNN_ACTIVATION_IDENTITY) return v;
  if (std::isnan(v)) return a.nan == CUDNN_PROPAGATE_NAN ? v : 0.f;
  return v > 0.f ? v : 0.f;  // RELU
}

}  // namespace

using namespace fake_cudnn;

// ---------------------------------------------------------------- handle
size_t CUDNNWINAPI cudnnGetVersion(void) { return CUDNN_VERSION; }

const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
      return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER:
      return "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER";
    case CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND:
      return "CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR:
      return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED:
      return "CUDNN_STATUS_EXECUTION_FAILED";
    default:
      return "CUDNN_STATUS_UNKNOWN (emulated)";
  }
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) { return create(handle); }

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM;
  return destroy(handle);
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t streamId) {
  if (!live(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = streamId;
  return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- descriptors
cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* tensorDesc) {
  return create(tensorDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t tensorDesc) {
  return destroy(tensorDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* filterDesc) {
  return create(filterDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t filterDesc) {
  return destroy(filterDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* convDesc) {
  return create(convDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t convDesc) {
  return destroy(convDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* activationDesc) {
  return create(activationDesc);
}
cudnnStatus_t CUDNNWINAPI cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t activationDesc) {
  return destroy(activationDesc);
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
                                                     cudnnDataType_t dataType, int n, int c, int h, int w) {
  if (!live(tensorDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW) return fail(CUDNN_STATUS_NOT_SUPPORTED, "the emulation has NCHW tensors only");
  tensorDesc->set = true;
  tensorDesc->type = dataType;
  tensorDesc->n = n;
  tensorDesc->c = c;
  tensorDesc->h = h;
  tensorDesc->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
                                                     cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (!live(filterDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW) return fail(CUDNN_STATUS_NOT_SUPPORTED, "the emulation has KCRS filters only");
  filterDesc->set = true;
  filterDesc->type = dataType;
  filterDesc->k = k;
  filterDesc->c = c;
  filterDesc->h = h;
  filterDesc->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w,
                                                          int u, int v, int dilation_h, int dilation_w,
                                                          cudnnConvolutionMode_t mode, cudnnDataType_t computeType) {
  if (!live(convDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (pad_h < 0 || pad_w < 0 || u <= 0 || v <= 0 || dilation_h <= 0 || dilation_w <= 0 ||
      (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  convDesc->set = true;
  convDesc->pad_h = pad_h;
  convDesc->pad_w = pad_w;
  convDesc->u = u;
  convDesc->v = v;
  convDesc->dil_h = dilation_h;
  convDesc->dil_w = dilation_w;
  convDesc->mode = mode;
  convDesc->compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t convDesc, int groupCount) {
  if (!live(convDesc) || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  convDesc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType) {
  if (!live(convDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (mathType != CUDNN_DEFAULT_MATH && mathType != CUDNN_TENSOR_OP_MATH &&
      mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION && mathType != CUDNN_FMA_MATH) {
    return CUDNN_STATUS_BAD_PARAM;
  }
  convDesc->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetActivationDescriptor(cudnnActivationDescriptor_t activationDesc,
                                                       cudnnActivationMode_t mode, cudnnNanPropagation_t reluNanOpt,
                                                       double coef) {
  if (!live(activationDesc)) return CUDNN_STATUS_BAD_PARAM;
  if (reluNanOpt != CUDNN_NOT_PROPAGATE_NAN && reluNanOpt != CUDNN_PROPAGATE_NAN) return CUDNN_STATUS_BAD_PARAM;
  activationDesc->set = true;
  activationDesc->mode = mode;
  activationDesc->nan = reluNanOpt;
  activationDesc->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t convDesc,
                                                                const cudnnTensorDescriptor_t inputTensorDesc,
                                                                const cudnnFilterDescriptor_t filterDesc, int* n,
                                                                int* c, int* h, int* w) {
  if (!n || !c || !h || !w) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(inputTensorDesc, filterDesc, convDesc, nullptr, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  *n = cv.n;
  *c = cv.k;
  *h = cv.oh;
  *w = cv.ow;
  return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- algorithm choice
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle, int* count) {
  if (!live(handle) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

// Heuristic results, fastest first: an FFT_TILING that needs 1 GiB of workspace (a caller with
// a workspace limit skips it), a WINOGRAD_NONFUSED for 3x3 stride-1 convs (no workspace; a
// caller asking for exact fp32 skips it), a tensor-op entry with fp16 conversion when the descriptor
// allows tensor ops (never acceptable for fp32 results), DIRECT (not supported), and
// IMPLICIT_PRECOMP_GEMM in the descriptor's math type.
cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc, const cudnnFilterDescriptor_t filterDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
    int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  if (!live(handle) || !returnedAlgoCount || !perfResults || requestedAlgoCount < 1) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(srcDesc, filterDesc, convDesc, destDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  const cudnnMathType_t math = convDesc->math == CUDNN_FMA_MATH ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  std::vector<cudnnConvolutionFwdAlgoPerf_t> all;
  auto add = [&](cudnnConvolutionFwdAlgo_t algo, cudnnStatus_t status, cudnnMathType_t m) {
    cudnnConvolutionFwdAlgoPerf_t p;
    std::memset(&p, 0, sizeof p);
    p.algo = algo;
    p.status = status;
    p.time = static_cast<float>(all.size() + 1);
    p.memory = algo_workspace(algo, cv);
    p.determinism = CUDNN_DETERMINISTIC;
    p.mathType = m;
    all.push_back(p);
  };
  if (cv.u == 1 && cv.v == 1 && cv.dil_h == 1 && cv.dil_w == 1) {
    add(CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, CUDNN_STATUS_SUCCESS, math);
  }
  if (cv.r == 3 && cv.s == 3 && cv.u == 1 && cv.v == 1 && cv.dil_h == 1 && cv.dil_w == 1 && cv.groups == 1) {
    add(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_STATUS_SUCCESS, math);  // fits; not exact fp32
  }
  if (convDesc->math != CUDNN_FMA_MATH) {
    add(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
  }
  add(CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, CUDNN_STATUS_NOT_SUPPORTED, math);
  add(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_STATUS_SUCCESS, math);
  const int n = std::min<int>(requestedAlgoCount, static_cast<int>(all.size()));
  std::copy(all.begin(), all.begin() + n, perfResults);
  *returnedAlgoCount = n;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t handle,
                                                                  const cudnnTensorDescriptor_t xDesc,
                                                                  const cudnnFilterDescriptor_t wDesc,
                                                                  const cudnnConvolutionDescriptor_t convDesc,
                                                                  const cudnnTensorDescriptor_t yDesc,
                                                                  cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  if (!live(handle) || !sizeInBytes) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  const cudnnStatus_t s = conv_of(xDesc, wDesc, convDesc, yDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (!algo_supported(algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *sizeInBytes = algo_workspace(algo, cv);
  return CUDNN_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- forward
cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                  const cudnnTensorDescriptor_t xDesc, const void* x,
                                                  const cudnnFilterDescriptor_t wDesc, const void* w,
                                                  const cudnnConvolutionDescriptor_t convDesc,
                                                  cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                                  size_t workSpaceSizeInBytes, const void* beta,
                                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  if (!live(handle) || !alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  cudnnStatus_t s = conv_of(xDesc, wDesc, convDesc, yDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (cv.flip) return fail(CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_CONVOLUTION mode is not emulated");
  Operands o{
      static_cast<const float*>(x), static_cast<const float*>(w), nullptr, nullptr, static_cast<float*>(y), workSpace,
      algo_workspace(algo, cv)};
  s = check_operands("cudnnConvolutionForward", cv, o, algo, workSpaceSizeInBytes);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);  // host scalars, read now
  emu::emu_enqueue(handle->stream, [cv, o, a, b] {
    emu::scribble(o.ws, o.ws_bytes);
    std::vector<float> acc(static_cast<size_t>(cv.y_elems()));
    convolve(cv, o.x, o.w, acc.data());
    for (int64_t i = 0; i < cv.y_elems(); ++i) {
      const float prior = b != 0.f ? b * o.y[i] : 0.f;  // beta = 0: y is not read
      o.y[i] = a * acc[static_cast<size_t>(i)] + prior;
    }
    emu::count_op(emu::OpKind::kLibrary);
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc, const void* bias,
    const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc, void* y) {
  if (!live(handle) || !alpha1 || !alpha2) return CUDNN_STATUS_BAD_PARAM;
  Conv cv{};
  cudnnStatus_t s = conv_of(xDesc, wDesc, convDesc, yDesc, &cv);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  if (cv.flip) return fail(CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_CONVOLUTION mode is not emulated");
  if (!live(zDesc) || !zDesc->set || zDesc->n != yDesc->n || zDesc->c != yDesc->c || zDesc->h != yDesc->h ||
      zDesc->w != yDesc->w || zDesc->type != CUDNN_DATA_FLOAT) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionBiasActivationForward: zDesc must match yDesc");
  }
  if (!live(biasDesc) || !biasDesc->set || biasDesc->n != 1 || biasDesc->c != cv.k || biasDesc->h != 1 ||
      biasDesc->w != 1) {
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnConvolutionBiasActivationForward: biasDesc must be [1, K, 1, 1]");
  }
  if (!live(activationDesc) || !activationDesc->set) return CUDNN_STATUS_BAD_PARAM;
  if (activationDesc->mode != CUDNN_ACTIVATION_RELU && activationDesc->mode != CUDNN_ACTIVATION_IDENTITY) {
    return fail(CUDNN_STATUS_NOT_SUPPORTED,
                "cudnnConvolutionBiasActivationForward: activation must be RELU or IDENTITY");
  }
  if (activationDesc->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    return fail(
        CUDNN_STATUS_NOT_SUPPORTED,
        "cudnnConvolutionBiasActivationForward: IDENTITY needs CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM");
  }
  if (!z || !bias)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnConvolutionBiasActivationForward: null z or bias");
  Operands o{static_cast<const float*>(x),    static_cast<const float*>(w), static_cast<const float*>(z),
             static_cast<const float*>(bias), static_cast<float*>(y),       workSpace,
             algo_workspace(algo, cv)};
  s = check_operands("cudnnConvolutionBiasActivationForward", cv, o, algo, workSpaceSizeInBytes);
  if (s != CUDNN_STATUS_SUCCESS) return s;
  const float a1 = *static_cast<const float*>(alpha1), a2 = *static_cast<const float*>(alpha2);
  const cudnnActivationStruct act = *activationDesc;
  static const bool lenient_z = std::getenv("FUSERT_EMU_LENIENT_Z") != nullptr;
  const bool read_z = a2 != 0.f || !lenient_z;
  emu::emu_enqueue(handle->stream, [cv, o, a1, a2, act, read_z] {
    emu::scribble(o.ws, o.ws_bytes);
    std::vector<float> acc(static_cast<size_t>(cv.y_elems()));
    convolve(cv, o.x, o.w, acc.data());
    const int64_t plane = int64_t{cv.oh} * cv.ow;
    for (int64_t i = 0; i < cv.y_elems(); ++i) {
      const int64_t ch = (i / plane) % cv.k;
      // z is read and scaled even when alpha2 = 0; with y == z each element is read first.
      const float v = a1 * acc[static_cast<size_t>(i)] + (read_z ? a2 * o.z[i] : 0.f) + o.bias[ch];
      o.y[i] = activate(act, v);
    }
    emu::count_op(emu::OpKind::kLibrary);
  });
  return CUDNN_STATUS_SUCCESS;
}
