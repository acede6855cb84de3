// Convolution anchor on cuDNN's legacy API: descriptors and algorithm are fixed at create, run()
// only enqueues. y = act(conv(x, w) + z + bias) goes through cudnnConvolutionBiasActivationForward
// (activation RELU, or IDENTITY which cuDNN only accepts with IMPLICIT_PRECOMP_GEMM); a bare
// convolution through cudnnConvolutionForward.
#include "kernels/cuda/cudnn_conv.h"

#include <limits>
#include <vector>

namespace fusert::cuda {

namespace {

// Largest workspace an algorithm may ask for before the heuristic's next choice is taken.
constexpr size_t kMaxConvWorkspace = 256u << 20;

bool fits_int(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

Status check_params(const kern::ConvParams& p, const std::string& what) {
  if (p.pad_top != p.pad_bottom || p.pad_left != p.pad_right) {
    return error(StatusCode::kUnsupported)
           << what << ": cuDNN needs symmetric pads, got top/bottom " << p.pad_top << "/" << p.pad_bottom
           << ", left/right " << p.pad_left << "/" << p.pad_right;
  }
  if (p.group <= 0 || p.c % p.group != 0 || p.m % p.group != 0) {
    return error(StatusCode::kInvalidArgument)
           << what << ": group " << p.group << " must divide C=" << p.c << " and M=" << p.m;
  }
  for (int64_t v : {p.n, p.c, p.h, p.w, p.m, p.kh, p.kw, p.oh, p.ow, p.stride_h, p.stride_w, p.dil_h, p.dil_w,
                    p.pad_top, p.pad_left}) {
    if (!fits_int(v))
      return error(StatusCode::kUnsupported) << what << ": convolution dimension " << v << " out of range";
  }
  return Status::ok_status();
}

// Algorithms whose arithmetic differs from fp32's (FFT, Winograd transforms): taken only with
// TF32 asked for, as the backward-data ones of cudnn_conv_transpose.cc.
bool rounds_fp32(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

}  // namespace

Result<std::unique_ptr<CudnnConv>> CudnnConv::create(Context& ctx, const kern::ConvParams& p, const ConvEpilogue& ep,
                                                     const std::string& what) {
  FUSERT_RETURN_IF_ERROR(check_params(p, what));
  std::unique_ptr<CudnnConv> cv(new CudnnConv());
  cv->ep_ = ep;
  cv->what_ = what;
  const cudnnHandle_t dnn = ctx.dnn();
  const int n = static_cast<int>(p.n), m = static_cast<int>(p.m);

  CUDNN_CHECK(cudnnCreateTensorDescriptor(&cv->x_), what);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(cv->x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, static_cast<int>(p.c),
                                         static_cast<int>(p.h), static_cast<int>(p.w)),
              what);
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&cv->w_), what);
  CUDNN_CHECK(
      cudnnSetFilter4dDescriptor(cv->w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, m, static_cast<int>(p.c / p.group),
                                 static_cast<int>(p.kh), static_cast<int>(p.kw)),
      what);
  // ONNX Conv is a cross-correlation (no kernel flip).
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&cv->conv_), what);
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(cv->conv_, static_cast<int>(p.pad_top), static_cast<int>(p.pad_left),
                                              static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),
                                              static_cast<int>(p.dil_h), static_cast<int>(p.dil_w),
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              what);
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(cv->conv_, static_cast<int>(p.group)), what);
  // FMA math excludes TF32 tensor cores for fp32 data; default math permits them.
  CUDNN_CHECK(cudnnSetConvolutionMathType(cv->conv_, ctx.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), what);

  int on = 0, om = 0, oh = 0, ow = 0;
  CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(cv->conv_, cv->x_, cv->w_, &on, &om, &oh, &ow), what);
  if (on != n || om != m || oh != p.oh || ow != p.ow) {
    return error(StatusCode::kShapeMismatch)
           << what << ": cuDNN output [" << on << "," << om << "," << oh << "," << ow << "] differs from the planned ["
           << p.n << "," << p.m << "," << p.oh << "," << p.ow << "]";
  }
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&cv->y_), what);
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(cv->y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, m, oh, ow), what);

  const bool fused = ep.bias || ep.z || ep.relu;
  cv->y_bytes_ = static_cast<size_t>(n) * m * oh * ow * sizeof(float);
  if (fused && !ep.z) FUSERT_RETURN_IF_ERROR(ctx.reserve_zeros(cv->y_bytes_));
  if (fused) {
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&cv->b_), what);
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(cv->b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, m, 1, 1), what);
    CUDNN_CHECK(cudnnCreateActivationDescriptor(&cv->act_), what);
    // NOT_PROPAGATE_NAN is the option the fused kernels are documented and used with.
    CUDNN_CHECK(cudnnSetActivationDescriptor(cv->act_, ep.relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
                what);
    if (!ep.bias) {
      CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&cv->zero_bias_), sizeof(float) * p.m), what);
      CUDA_CHECK(cudaMemsetAsync(cv->zero_bias_, 0, sizeof(float) * p.m, ctx.stream()), what);
    }
  }

  if (fused && !ep.relu) {
    // cuDNN: CUDNN_ACTIVATION_IDENTITY in the fused call requires IMPLICIT_PRECOMP_GEMM.
    cv->algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  } else {
    int max_algos = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(dnn, &max_algos), what);
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_algos > 0 ? max_algos : 1));
    int returned = 0;
    CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(dnn, cv->x_, cv->w_, cv->conv_, cv->y_,
                                                       static_cast<int>(perf.size()), &returned, perf.data()),
                what);
    bool found = false;
    for (int i = 0; i < returned && !found; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[static_cast<size_t>(i)];
      if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxConvWorkspace) continue;
      if (!ctx.tf32 && (r.mathType != CUDNN_FMA_MATH || rounds_fp32(r.algo))) continue;  // exact fp32 asked for
      if (r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;                 // would round fp32 to fp16
      cv->algo_ = r.algo;
      // The heuristic's math type goes with its algorithm (it may pick tensor-op math for TF32).
      if (ctx.tf32) CUDNN_CHECK(cudnnSetConvolutionMathType(cv->conv_, r.mathType), what);
      found = true;
    }
    // IMPLICIT_PRECOMP_GEMM supports every 2-D configuration: the fallback when nothing fits.
    if (!found) cv->algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  }
  CUDNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(dnn, cv->x_, cv->w_, cv->conv_, cv->y_, cv->algo_, &cv->workspace_bytes_),
      what);
  return cv;
}

CudnnConv::~CudnnConv() {
  if (zero_bias_) cudaFree(zero_bias_);
  if (act_) cudnnDestroyActivationDescriptor(act_);
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
  if (w_) cudnnDestroyFilterDescriptor(w_);
  if (b_) cudnnDestroyTensorDescriptor(b_);
  if (y_) cudnnDestroyTensorDescriptor(y_);
  if (x_) cudnnDestroyTensorDescriptor(x_);
}

Status CudnnConv::run(Context& ctx, const float* x, const float* w, const float* bias, const float* z, float* y) const {
  if (ctx.workspace_bytes() < workspace_bytes_) {
    return error(StatusCode::kInternal) << what_ << ": the convolution needs " << workspace_bytes_
                                        << " workspace bytes but the context has " << ctx.workspace_bytes()
                                        << " (Context::reserve_workspace was not called)";
  }
  if ((ep_.bias && !bias) || (ep_.z && !z)) {
    return error(StatusCode::kInternal) << what_ << ": the epilogue expects a " << (ep_.bias && !bias ? "bias" : "z")
                                        << " pointer, got null";
  }
  const float one = 1.f, zero = 0.f;
  void* ws = workspace_bytes_ > 0 ? ctx.workspace() : nullptr;
  if (!act_) {
    CUDNN_CHECK(
        cudnnConvolutionForward(ctx.dnn(), &one, x_, x, w_, w, conv_, algo_, ws, workspace_bytes_, &zero, y_, y),
        what_);
    return Status::ok_status();
  }
  // y = act(1 * conv(x, w) + alpha2 * z + bias). Without a residual, alpha2 = 0 and z is the
  // context's zero buffer (cuDNN does not document that z goes unread when alpha2 = 0, and
  // y may hold stale NaN/inf from an earlier use of its memory: 0 * NaN = NaN).
  const float alpha2 = ep_.z ? 1.f : 0.f;
  if (!ep_.z && ctx.zeros_bytes() < y_bytes_) {
    return error(StatusCode::kInternal) << what_ << ": the zero buffer is smaller than the output";
  }
  const float* zp = ep_.z ? z : ctx.zeros();
  const float* bp = ep_.bias ? bias : zero_bias_;
  CUDNN_CHECK(cudnnConvolutionBiasActivationForward(ctx.dnn(), &one, x_, x, w_, w, conv_, algo_, ws, workspace_bytes_,
                                                    &alpha2, y_, zp, b_, bp, act_, y_, y),
              what_);
  return Status::ok_status();
}

}  // namespace fusert::cuda
