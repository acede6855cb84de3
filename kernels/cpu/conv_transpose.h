// Fast ONNX ConvTranspose (2-D NCHW, groups, strides, dilations, pads; ConvTransposeParams of
// kernels/common/params.h) as a GEMM and a col2im scatter: per image, group and band of
// input rows, cols [Mg*KH*KW, rows*W] = w_g^T [Mg*KH*KW, Cg] x x_g [Cg, rows*W] (Eigen's blocked,
// threaded GEMM, no copy of the weights), then each column adds its value into the output pixel
// it maps to (or, when kernel == stride with no pads, each output pixel is written once with its
// bias: no fill, no accumulation). The band keeps cols near the cache (about 1 MiB); col2im is threaded over output
// channels, which never share a pixel. The 2x2 stride-2 case with one group (DBNet's and U-Net's
// upsampling) is direct instead: threaded over input rows, each writes its two output rows of
// every channel from its C input rows in L1 (AVX2 + FMA, 8 and 24 columns at a time; DBNet's
// 24 -> 24 at 160x160, batch 8, 2 threads: 17.6 -> 8.5 ms). cpu::conv_transpose (double
// accumulation) is the oracle.
#pragma once

#include "kernels/cpu/import_kernels.h"

namespace fusert::cpu {

/// Whether conv_transpose_gemm runs `p` on the direct 2x2 stride-2 kernel (for reports).
bool conv_transpose_direct(const ConvTransposeParams& p);

/// Same contract as cpu::conv_transpose; float accumulation within the GEMM.
void conv_transpose_gemm(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y);

}  // namespace fusert::cpu
