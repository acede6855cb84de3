// Convolution anchor on cuDNN with a fused epilogue: y = act(conv(x, w) + z + bias), NCHW fp32,
// through cudnnConvolutionBiasActivationForward (cuDNN 9 legacy API; see the cuDNN API
// reference: activation RELU or IDENTITY, z optional via alpha2) or cudnnConvolutionForward
// when there is neither bias nor z nor activation. TF32 follows Context::tf32
// (CUDNN_DEFAULT_MATH vs CUDNN_FMA_MATH).
#pragma once

#include <memory>
#include <string>

#include "kernels/common/params.h"
#include "kernels/cuda/context.h"

namespace fusert::cuda {

struct ConvEpilogue {
  bool bias = false;  ///< add bias [M] per output channel
  bool z = false;     ///< add z [N, M, OH, OW] (residual) before the activation
  bool relu = false;  ///< max(0, .) last
};

class CudnnConv {
 public:
  /// Builds the descriptors for `p` (asymmetric pads are not supported by cuDNN: returns
  /// kUnsupported so the caller can pad or fall back) and picks the algorithm (algorithm()).
  /// `what` names the node/group in errors.
  static Result<std::unique_ptr<CudnnConv>> create(Context& ctx, const kern::ConvParams& p, const ConvEpilogue& ep,
                                                   const std::string& what);
  ~CudnnConv();
  /// Workspace the chosen algorithm needs; reserve it on the context before running.
  size_t workspace_bytes() const { return workspace_bytes_; }
  /// The algorithm create chose: the heuristics' first that fits the workspace limit and is
  /// exact fp32 (FMA math; no FFT or Winograd transform) unless TF32 was asked for;
  /// IMPLICIT_PRECOMP_GEMM for a fused call without ReLU, as cuDNN requires.
  cudnnConvolutionFwdAlgo_t algorithm() const { return algo_; }
  /// Enqueues on ctx.stream(). x [N,C,H,W], w [M,C/group,KH,KW], bias [M] (or null), z like y
  /// (or null), y [N,M,OH,OW]. y may equal z (in place), never x or w.
  Status run(Context& ctx, const float* x, const float* w, const float* bias, const float* z, float* y) const;

 private:
  CudnnConv() = default;
  ConvEpilogue ep_;
  std::string what_;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, b_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  size_t workspace_bytes_ = 0;
  size_t y_bytes_ = 0;          ///< output bytes (the zero buffer standing in for z must cover them)
  float* zero_bias_ = nullptr;  ///< [M] zeros: cuDNN's fused call needs a bias even when the node has none
};

}  // namespace fusert::cuda
