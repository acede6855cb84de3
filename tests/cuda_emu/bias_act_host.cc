// Host implementation of kernels/cuda/bias_act.cuh for fusert_emu (in place of bias_act.cu): the
// same function and argument checks, written from the header's contract; the call checks d's and
// the bias's ranges against the device allocations, then enqueues the work.
#include <cmath>

#include "kernels/cuda/bias_act.cuh"
#include "tests/cuda_emu/emu.h"

namespace fusert::cuda {

cudaError_t bias_act(int64_t rows, int64_t cols, const float* bias, BiasAct act, float* d, cudaStream_t stream) {
  namespace emu = fusert::emu;
  if (rows < 0 || cols < 0 || (rows * cols > 0 && !d)) return cudaErrorInvalidValue;
  const int64_t numel = rows * cols;
  if (numel == 0) return cudaSuccess;
  bool ok = emu::check_device_range(d, 4 * static_cast<size_t>(numel), emu::Access::kWrite, "bias_act d");
  if (bias) ok &= emu::check_device_range(bias, 4 * static_cast<size_t>(cols), emu::Access::kRead, "bias_act bias");
  if (!ok) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        float& v = d[r * cols + c];
        const float x = v + (bias ? bias[c] : 0.0f);
        if (act == BiasAct::kRelu)
          v = x < 0.0f ? 0.0f : x;
        else if (act == BiasAct::kGeluTanh)
          v = 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
        else
          v = x;
      }
    }
    emu::count_op(emu::OpKind::kCopy);  // as the other nvcc kernels
  });
  return cudaSuccess;
}

}  // namespace fusert::cuda
