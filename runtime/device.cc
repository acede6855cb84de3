// CUDA device probing: a clear error when no device can be used.
#include "runtime/backend.h"

#ifdef FUSERT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fusert {

Status check_cuda_device() {
#ifdef FUSERT_HAVE_CUDA
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error for a later attempt
    const char* why = err == cudaErrorInsufficientDriver ? "no NVIDIA driver, or one older than this CUDA runtime needs"
                      : err == cudaErrorNoDevice         ? "no CUDA device"
                                                         : "the CUDA runtime cannot initialise";
    return error(StatusCode::kDeviceError)
           << "--device cuda: no usable CUDA device: " << why << " (cudaGetDeviceCount: " << cudaGetErrorName(err)
           << ": " << cudaGetErrorString(err) << "); use --device cpu";
  }
  if (count == 0) return error(StatusCode::kDeviceError) << "--device cuda: no CUDA device found; use --device cpu";
  return Status();
#else
  return error(StatusCode::kDeviceError)
         << "--device cuda: this build has no CUDA backend (nvcc was not found at configure time); use --device cpu";
#endif
}

}  // namespace fusert
