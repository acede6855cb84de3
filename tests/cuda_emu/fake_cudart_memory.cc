// Emulated CUDA runtime: memory (cudaMalloc / cudaFree / pinned host memory, guarded and
// quarantined by fake_cudart.cc's allocator) and copies, checked against the allocations.
#include <cuda_runtime_api.h>
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudart_internal.h"
#include "tests/cuda_oracle/kernel_reference.h"

using namespace fusert::emu;
using namespace fusert::emu::detail;

// ---------------------------------------------------------------- memory
cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return ret(cudaErrorInvalidValue);
  if (refuse_during_capture("cudaMalloc")) return ret(cudaErrorStreamCaptureUnsupported);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;
  if (size > kTotalMemory) return ret(cudaErrorMemoryAllocation);
  *devPtr = allocate(size, false);
  return *devPtr ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  if (refuse_during_capture("cudaFree")) return ret(cudaErrorStreamCaptureUnsupported);
  if (!devPtr) return cudaSuccess;
  drain_all();  // cudaFree synchronises the device
  return ret(release(devPtr, false, "cudaFree"));
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return ret(cudaErrorInvalidValue);
  if (refuse_during_capture("cudaMallocHost")) return ret(cudaErrorStreamCaptureUnsupported);
  *ptr = allocate(size == 0 ? 1 : size, true);
  return *ptr ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  if (refuse_during_capture("cudaFreeHost")) return ret(cudaErrorStreamCaptureUnsupported);
  if (!ptr) return cudaSuccess;
  drain_all();
  return ret(release(ptr, true, "cudaFreeHost"));
}

namespace {

// Resolves cudaMemcpyDefault and checks the direction against the pointers.
bool copy_kind(const void* dst, const void* src, size_t count, cudaMemcpyKind kind, const char* call, bool* dst_dev,
               bool* src_dev) {
  const bool d_dev = is_device_pointer(dst), s_dev = is_device_pointer(src);
  if (kind == cudaMemcpyDefault) {
    *dst_dev = d_dev;
    *src_dev = s_dev;
  } else {
    *dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    *src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (*dst_dev != d_dev || *src_dev != s_dev) {
      std::ostringstream os;
      os << call << ": kind " << static_cast<int>(kind) << " but dst " << dst << " is " << (d_dev ? "device" : "host")
         << " memory and src " << src << " is " << (s_dev ? "device" : "host") << " memory";
      record_violation(os.str());
      return false;
    }
  }
  bool ok = true;
  if (*dst_dev) ok &= check_device_range(dst, count, Access::kWrite, std::string(call) + " destination");
  if (*src_dev) ok &= check_device_range(src, count, Access::kRead, std::string(call) + " source");
  if (is_pinned_pointer(dst))
    ok &= check_device_range(dst, count, Access::kWrite, std::string(call) + " destination", true);
  if (is_pinned_pointer(src)) ok &= check_device_range(src, count, Access::kRead, std::string(call) + " source", true);
  return ok;
}

}  // namespace

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  if (refuse_during_capture("cudaMemcpy")) return ret(cudaErrorStreamCaptureUnsupported);
  if (count == 0) return cudaSuccess;
  bool dd = false, sd = false;
  if (!copy_kind(dst, src, count, kind, "cudaMemcpy", &dd, &sd)) return ret(cudaErrorInvalidValue);
  if (dd && sd) {  // device to device: asynchronous on the legacy stream
    emu_enqueue(nullptr, [=] {
      std::memmove(dst, src, count);
      count_op(OpKind::kCopy);
    });
    return cudaSuccess;
  }
  drain(&st().legacy);  // synchronous with the legacy default stream (not with non-blocking ones)
  std::memmove(dst, src, count);
  count_op(OpKind::kCopy);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  bool dd = false, sd = false;
  if (!copy_kind(dst, src, count, kind, "cudaMemcpyAsync", &dd, &sd)) return ret(cudaErrorInvalidValue);
  const bool pageable_dst = !dd && !is_pinned_pointer(dst), pageable_src = !sd && !is_pinned_pointer(src);
  if ((pageable_dst || pageable_src) && emu_capturing(stream)) {
    record_violation("cudaMemcpyAsync of pageable host memory inside a stream capture");
    return ret(cudaErrorStreamCaptureUnsupported);
  }
  if (pageable_dst) {  // to pageable memory: returns once the copy is done
    drain(resolve(stream));
    std::memmove(dst, src, count);
    count_op(OpKind::kCopy);
    return cudaSuccess;
  }
  if (pageable_src) {  // from pageable memory: staged at the call
    auto staged =
        std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    emu_enqueue(stream, [=] {
      std::memcpy(dst, staged->data(), count);
      count_op(OpKind::kCopy);
    });
    return cudaSuccess;
  }
  emu_enqueue(stream, [=] {
    if (dd && !check_device_range(dst, count, Access::kWrite, "cudaMemcpyAsync destination (at execution)")) return;
    if (sd && !check_device_range(src, count, Access::kRead, "cudaMemcpyAsync source (at execution)")) return;
    std::memmove(dst, src, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  if (refuse_during_capture("cudaMemset")) return ret(cudaErrorStreamCaptureUnsupported);
  if (count == 0) return cudaSuccess;
  if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemset")) return ret(cudaErrorInvalidValue);
  // Asynchronous with respect to the host for device memory, on the legacy default stream.
  emu_enqueue(nullptr, [=] {
    std::memset(devPtr, value, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemsetAsync")) return ret(cudaErrorInvalidValue);
  emu_enqueue(stream, [=] {
    if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemsetAsync (at execution)")) return;
    std::memset(devPtr, value, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}
