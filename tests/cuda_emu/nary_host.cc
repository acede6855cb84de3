// Host implementation of kernels/cuda/nary.cuh for fusert_emu (in place of nary.cu): the same
// function and argument checks, written from the header's contract; the call checks every input's
// read range and y's write range against the device allocations, then enqueues the work.
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/nary.cuh"
#include "tests/cuda_emu/emu.h"

namespace fusert::cuda {

cudaError_t nary(int rank, const int64_t* out_shape, NaryOp op, int n, const float* const* xs, const int64_t* strides,
                 float* y, cudaStream_t stream) {
  namespace emu = fusert::emu;
  if (rank < 0 || rank > kMaxCopyRank || n < 1 || n > kMaxNaryInputs || (op == NaryOp::kPRelu && n != 2))
    return cudaErrorInvalidValue;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) numel *= out_shape[d];
  if (numel == 0) return cudaSuccess;
  bool ok = emu::check_device_range(y, 4 * static_cast<size_t>(numel), emu::Access::kWrite, "nary y");
  for (int k = 0; k < n; ++k) {
    int64_t extent = 1;
    for (int d = 0; d < rank; ++d) extent += (out_shape[d] - 1) * strides[k * rank + d];
    ok &= emu::check_device_range(xs[k], 4 * static_cast<size_t>(extent), emu::Access::kRead,
                                  "nary input " + std::to_string(k));
  }
  if (!ok) return cudaErrorIllegalAddress;
  const std::vector<int64_t> shape(out_shape, out_shape + rank), st(strides, strides + n * rank);
  const std::vector<const float*> in(xs, xs + n);
  emu::emu_enqueue(stream, [=] {
    std::vector<int64_t> off(static_cast<size_t>(n));
    for (int64_t i = 0; i < numel; ++i) {
      std::fill(off.begin(), off.end(), 0);
      int64_t rem = i;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t idx = rem % shape[static_cast<size_t>(d)];
        rem /= shape[static_cast<size_t>(d)];
        for (int k = 0; k < n; ++k) off[static_cast<size_t>(k)] += idx * st[static_cast<size_t>(k * rank + d)];
      }
      float v = in[0][off[0]];
      if (op == NaryOp::kPRelu) {
        y[i] = v < 0.0f ? in[1][off[1]] * v : v;
        continue;
      }
      for (int k = 1; k < n; ++k) {
        const float u = in[static_cast<size_t>(k)][off[static_cast<size_t>(k)]];
        if (op == NaryOp::kSum || op == NaryOp::kMean) {
          v += u;
        } else if (!std::isnan(v)) {
          v = std::isnan(u) ? u : op == NaryOp::kMax ? (u > v ? u : v) : (u < v ? u : v);
        }
      }
      y[i] = op == NaryOp::kMean ? v * (1.0f / static_cast<float>(n)) : v;
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

}  // namespace fusert::cuda
