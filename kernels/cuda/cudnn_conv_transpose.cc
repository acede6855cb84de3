// ConvTranspose on cuDNN's backward-data convolution (kernels/cuda/cudnn_conv_transpose.h).
#include "kernels/cuda/cudnn_conv_transpose.h"

#include <limits>
#include <vector>

namespace fusert::cuda {

namespace {

constexpr size_t kMaxWorkspace = 256u << 20;  // as the forward convolution's

bool fits_int(int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

// Algorithms that round fp32 (FFT, Winograd): taken only with TF32 asked for.
bool approximate(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD || a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}

}  // namespace

bool conv_transpose_fits(const kern::ConvTransposeParams& p, int64_t pad_bottom, int64_t pad_right, std::string* why) {
  if (p.pt != pad_bottom || p.pl != pad_right) {
    *why = "asymmetric pads (cuDNN's convolution descriptor has one pad per dim)";
    return false;
  }
  // The forward convolution of y [OH, OW] must give x [H, W] back: OH + 2 pad - d (k - 1) - 1 - s (H - 1)
  // (output_padding + pad_top - pad_bottom) in [0, s).
  const int64_t rh = p.oh + 2 * p.pt - p.dh * (p.kh - 1) - 1 - p.sh * (p.h - 1);
  const int64_t rw = p.ow + 2 * p.pl - p.dw * (p.kw - 1) - 1 - p.sw * (p.w - 1);
  if (rh < 0 || rh >= p.sh || rw < 0 || rw >= p.sw) {
    *why = "an output size the forward convolution does not map back to the input's";
    return false;
  }
  for (int64_t v : {p.n, p.c, p.h, p.w, p.m, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl})
    if (!fits_int(v)) {
      *why = "a dimension beyond int";
      return false;
    }
  if (p.group <= 0 || p.c % p.group != 0 || p.m % p.group != 0) {
    *why = "group does not divide the channels";
    return false;
  }
  return true;
}

Result<std::unique_ptr<CudnnConvTranspose>> CudnnConvTranspose::create(Context& ctx, const kern::ConvTransposeParams& p,
                                                                       bool bias, const std::string& what) {
  std::unique_ptr<CudnnConvTranspose> ct(new CudnnConvTranspose());
  ct->what_ = what;
  ct->bias_ = bias;
  const cudnnHandle_t dnn = ctx.dnn();
  const auto i = [](int64_t v) { return static_cast<int>(v); };
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&ct->x_), what);  // the forward convolution's dy
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(ct->x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(p.n), i(p.c), i(p.h), i(p.w)),
              what);
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&ct->y_), what);  // its dx
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(ct->y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, i(p.n), i(p.m), i(p.oh), i(p.ow)),
              what);
  CUDNN_CHECK(cudnnCreateFilterDescriptor(&ct->w_), what);
  CUDNN_CHECK(cudnnSetFilter4dDescriptor(ct->w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, i(p.c), i(p.m / p.group), i(p.kh),
                                         i(p.kw)),
              what);
  CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&ct->conv_), what);
  CUDNN_CHECK(cudnnSetConvolution2dDescriptor(ct->conv_, i(p.pt), i(p.pl), i(p.sh), i(p.sw), i(p.dh), i(p.dw),
                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              what);
  CUDNN_CHECK(cudnnSetConvolutionGroupCount(ct->conv_, i(p.group)), what);
  CUDNN_CHECK(cudnnSetConvolutionMathType(ct->conv_, ctx.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), what);
  if (bias) {
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&ct->b_), what);
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(ct->b_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, i(p.m), 1, 1), what);
  }
  int max_algos = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(dnn, &max_algos), what);
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<size_t>(max_algos > 0 ? max_algos : 1));
  int returned = 0;
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, ct->w_, ct->x_, ct->conv_, ct->y_,
                                                          static_cast<int>(perf.size()), &returned, perf.data()),
              what);
  bool found = false;
  for (int k = 0; k < returned && !found; ++k) {
    const cudnnConvolutionBwdDataAlgoPerf_t& r = perf[static_cast<size_t>(k)];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace) continue;
    if (!ctx.tf32 && (r.mathType != CUDNN_FMA_MATH || approximate(r.algo))) continue;  // exact fp32 asked for
    if (r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;                 // would round to fp16
    ct->algo_ = r.algo;
    if (ctx.tf32) CUDNN_CHECK(cudnnSetConvolutionMathType(ct->conv_, r.mathType), what);
    found = true;
  }
  if (!found) ct->algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;  // every 2-D configuration, deterministic
  CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, ct->w_, ct->x_, ct->conv_, ct->y_, ct->algo_,
                                                           &ct->workspace_bytes_),
              what);
  return ct;
}

CudnnConvTranspose::~CudnnConvTranspose() {
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
  if (w_) cudnnDestroyFilterDescriptor(w_);
  if (b_) cudnnDestroyTensorDescriptor(b_);
  if (y_) cudnnDestroyTensorDescriptor(y_);
  if (x_) cudnnDestroyTensorDescriptor(x_);
}

Status CudnnConvTranspose::run(Context& ctx, const float* x, const float* w, const float* bias, float* y) const {
  if (ctx.workspace_bytes() < workspace_bytes_)
    return error(StatusCode::kInternal) << what_ << ": ConvTranspose needs " << workspace_bytes_
                                        << " workspace bytes, the context has " << ctx.workspace_bytes();
  if (bias_ && !bias) return error(StatusCode::kInternal) << what_ << ": the bias pointer is null";
  const float one = 1.f, zero = 0.f;
  void* ws = workspace_bytes_ > 0 ? ctx.workspace() : nullptr;
  CUDNN_CHECK(
      cudnnConvolutionBackwardData(ctx.dnn(), &one, w_, w, x_, x, conv_, algo_, ws, workspace_bytes_, &zero, y_, y),
      what_);
  if (bias_) CUDNN_CHECK(cudnnAddTensor(ctx.dnn(), &one, b_, bias, &one, y_, y), what_);
  return Status::ok_status();
}

}  // namespace fusert::cuda
