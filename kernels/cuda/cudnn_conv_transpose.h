// ConvTranspose (the gradient of Conv) on cuDNN: y = conv^T(x, w) + bias, NCHW fp32, through
// cudnnConvolutionBackwardData (x read as the forward convolution's dy, y written as its dx) and
// cudnnAddTensor for the bias. Symmetric pads only, and the forward convolution from y's size must
// give back x's (output_padding + pad_top - pad_bottom in [0, stride)): the caller checks
// (conv_transpose_fits) and otherwise keeps the op on the host. TF32 follows Context::tf32.
#pragma once

#include <memory>
#include <string>

#include "kernels/common/params.h"
#include "kernels/cuda/context.h"

namespace fusert::cuda {

/// True when cuDNN's backward-data convolution computes `p` (see the file comment); else the reason.
bool conv_transpose_fits(const kern::ConvTransposeParams& p, int64_t pad_bottom, int64_t pad_right, std::string* why);

class CudnnConvTranspose {
 public:
  /// Descriptors for `p` (w [C, M/group, KH, KW] is the forward filter [K = C, M/group, KH, KW]) and
  /// the algorithm from cudnnGetConvolutionBackwardDataAlgorithm_v7: exact fp32 unless ctx.tf32, no
  /// FFT or Winograd, ALGO_1 when nothing else fits. `what` names the node in errors.
  static Result<std::unique_ptr<CudnnConvTranspose>> create(Context& ctx, const kern::ConvTransposeParams& p, bool bias,
                                                            const std::string& what);
  ~CudnnConvTranspose();
  size_t workspace_bytes() const { return workspace_bytes_; }
  /// Enqueues on ctx.stream(): x [N, C, H, W], w, bias [M] (or null), y [N, M, OH, OW].
  Status run(Context& ctx, const float* x, const float* w, const float* bias, float* y) const;

 private:
  CudnnConvTranspose() = default;
  std::string what_;
  bool bias_ = false;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionBwdDataAlgo_t algo_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  size_t workspace_bytes_ = 0;
};

}  // namespace fusert::cuda
