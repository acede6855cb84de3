// CUDA device probing: the only CUDA runtime call the CPU build path needs.
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
  return error(StatusCode::kUnsupported) << "--device cuda: a CUDA device is present, but the CUDA backend is not built yet; use --device cpu";
#else
  return error(StatusCode::kDeviceError) << "--device cuda: this build has no CUDA backend (nvcc was not found at configure time); use --device cpu";
#endif
}

}  // namespace fusert
