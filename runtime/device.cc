// CUDA device probing: a clear error when no device can be used.
#include "runtime/session.h"

#ifdef FUSERT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fusert {

Status check_cuda_device() {
#ifdef FUSERT_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return error(StatusCode::kDeviceError) << "--device cuda: no usable CUDA device (cudaGetDeviceCount: "
                                           << cudaGetErrorString(err) << "); use --device cpu";
  }
  if (count == 0) return error(StatusCode::kDeviceError) << "--device cuda: no CUDA device found; use --device cpu";
  return Status();
#else
  return error(StatusCode::kDeviceError) << "--device cuda: this build has no CUDA backend (nvcc was not found at configure time); use --device cpu";
#endif
}

}  // namespace fusert
