// Emulated CUDA runtime: the one sm_90 device (count, properties, attributes, synchronisation)
// and the error calls.
#include <cuda_runtime_api.h>

#include <cstring>

#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudart_internal.h"

using namespace fusert::emu;
using namespace fusert::emu::detail;

// ---------------------------------------------------------------- device management
cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  if (!count) return ret(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) { return ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice); }

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (!prop) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "%s", "fusert CUDA emulator");
  prop->totalGlobalMem = kTotalMemory;
  prop->sharedMemPerBlock = kSharedDefault;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = 2147483647;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 65536;
  prop->major = kSmVersion / 10;
  prop->minor = kSmVersion % 10;
  prop->multiProcessorCount = 132;
  prop->canMapHostMemory = 1;
  prop->concurrentKernels = 1;
  prop->asyncEngineCount = 3;
  prop->unifiedAddressing = 1;
  prop->memoryBusWidth = 6144;
  prop->l2CacheSize = 50 << 20;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->sharedMemPerMultiprocessor = 233472;
  prop->regsPerMultiprocessor = 65536;
  prop->sharedMemPerBlockOptin = kSharedOptin;
  prop->maxBlocksPerMultiProcessor = 32;
  prop->reservedSharedMemPerBlock = 1024;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (!value) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kSharedOptin);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(kSharedDefault);
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = 233472;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = kSmVersion / 10;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = kSmVersion % 10;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrL2CacheSize:
      *value = 50 << 20;
      break;
    default:
      std::fprintf(stderr, "fusert-emu: cudaDeviceGetAttribute(%d) is not emulated\n", static_cast<int>(attr));
      return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  if (refuse_during_capture("cudaDeviceSynchronize")) return ret(cudaErrorStreamCaptureUnsupported);
  drain_all();
  check_guards("cudaDeviceSynchronize");
  return ret(take_async_error());
}

// ---------------------------------------------------------------- errors
cudaError_t CUDARTAPI cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return t_last_error; }

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) { return error_name(error); }

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) { return error_string(error); }
