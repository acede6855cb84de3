// Element-wise ops of several broadcast f32 inputs on the device (kernels/cuda/nary.cu, nvcc): ONNX
// Max and Min (a NaN wins), Sum and Mean (in input order, the mean times 1/n), and PRelu (x below 0
// times the slope; a NaN stays), in the CPU kernels' arithmetic (kernels/cpu/import_kernels.h). One
// launch; enqueue on `stream` and return the launch status.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/layout.cuh"

namespace fusert::cuda {

constexpr int kMaxNaryInputs = 8;

enum class NaryOp { kMax, kMin, kSum, kMean, kPRelu };

/// y over out_shape (rank <= kMaxCopyRank) from `n` inputs (PRelu: x then the slope), input k read
/// at sum_d i_d * strides[k * rank + d] (0 where it broadcasts); n <= kMaxNaryInputs.
cudaError_t nary(int rank, const int64_t* out_shape, NaryOp op, int n, const float* const* xs, const int64_t* strides,
                 float* y, cudaStream_t stream);

}  // namespace fusert::cuda
