// Emulated CUDA runtime: libraries and kernels (cubins checked by fake_kernels.cc) and
// launches, run as their host references after the argument structs are checked.
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

// ---------------------------------------------------------------- libraries and kernels
cudaError_t CUDARTAPI cudaLibraryLoadData(cudaLibrary_t* library, const void* code, enum cudaJitOption* jitOptions,
                                          void** jitOptionsValues, unsigned int numJitOptions,
                                          enum cudaLibraryOption* libraryOptions, void** libraryOptionValues,
                                          unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)numJitOptions;
  (void)libraryOptions;
  (void)libraryOptionValues;
  (void)numLibraryOptions;
  if (!library || !code) return ret(cudaErrorInvalidValue);
  *library = nullptr;
  const auto* eh = static_cast<const Elf64_Ehdr*>(code);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
    record_violation("cudaLibraryLoadData: the image is not a 64-bit ELF cubin");
    return ret(cudaErrorInvalidKernelImage);
  }
  const unsigned arch = (eh->e_flags >> 8) & 0xFF;
  if (eh->e_machine != EM_CUDA || arch != kSmVersion) {
    std::fprintf(stderr, "fusert-emu: cudaLibraryLoadData: cubin for machine %u sm_%u, the device is sm_%d\n",
                 eh->e_machine, arch, kSmVersion);
    return ret(cudaErrorNoKernelImageForDevice);
  }
  auto* lib = new CUlib_st();
  const char* bytes = static_cast<const char*>(code);
  lib->image.assign(bytes, bytes + elf_size(code));
  if (!elf_ok(lib->image)) {
    delete lib;
    return ret(cudaErrorInvalidKernelImage);
  }
  st().libraries.insert(lib);
  *library = lib;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library, const char* name) {
  if (!pKernel || !name) return ret(cudaErrorInvalidValue);
  if (!library || !st().libraries.count(library)) return ret(cudaErrorInvalidResourceHandle);
  *pKernel = nullptr;
  const CubinKernel info = parse_kernel(library->image, name);
  if (!info.found) return ret(cudaErrorSymbolNotFound);
  const fusert::cuda::KernelReference* ref = fusert::cuda::find_kernel_reference(name);
  if (!ref) {
    std::fprintf(stderr, "fusert-emu: kernel '%s' is in the cubin but has no host reference\n", name);
    return ret(cudaErrorSymbolNotFound);
  }
  auto* k = new CUkern_st();
  k->lib = library;
  k->entry = name;
  if (k->entry.rfind("fz_", 0) == 0) {
    const size_t end = k->entry.rfind('_');
    if (end > 3) k->kind = k->entry.substr(3, end - 3);
  }
  k->ref = ref;
  k->param_bytes = info.param_bytes;
  k->max_threads = info.max_threads > 0 ? info.max_threads : 1024;
  k->static_shared = info.static_shared;
  k->max_dynamic_shared = static_cast<int>(kSharedDefault - std::min(kSharedDefault, info.static_shared));
  const size_t expect = sizeof_args(k->kind);
  if (expect && info.param_bytes != expect) {
    record_violation("kernel " + k->entry + ": the cubin takes " + std::to_string(info.param_bytes) +
                     " parameter bytes, the host ABI struct has " + std::to_string(expect));
  }
  if (std::getenv("FUSERT_EMU_TRACE")) {
    std::fprintf(stderr, "fusert-emu: loaded %s: %zu parameter bytes, %d threads max, %zu static shared bytes\n", name,
                 k->param_bytes, k->max_threads, k->static_shared);
  }
  st().kernels.insert(k);
  st().lib_kernels[library].push_back(k);
  *pKernel = k;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLibraryUnload(cudaLibrary_t library) {
  if (!library || !st().libraries.count(library)) return ret(cudaErrorInvalidResourceHandle);
  drain_all();  // queued launches of its kernels run first
  for (CUkern_st* k : st().lib_kernels[library]) {
    st().kernels.erase(k);
    delete k;
  }
  st().lib_kernels.erase(library);
  st().libraries.erase(library);
  delete library;
  return cudaSuccess;
}

namespace {

CUkern_st* as_kernel(const void* func) {
  auto* k = const_cast<CUkern_st*>(static_cast<const CUkern_st*>(func));
  return st().kernels.count(k) ? k : nullptr;
}

}  // namespace

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  if (!attr) return ret(cudaErrorInvalidValue);
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  std::memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = k->static_shared;
  attr->maxThreadsPerBlock = k->max_threads;
  attr->numRegs = 32;
  attr->ptxVersion = kSmVersion;
  attr->binaryVersion = kSmVersion;
  attr->maxDynamicSharedSizeBytes = k->max_dynamic_shared;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || static_cast<size_t>(value) + k->static_shared > kSharedOptin) return ret(cudaErrorInvalidValue);
      k->max_dynamic_shared = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? cudaSuccess : ret(cudaErrorInvalidValue);
    default:
      return ret(cudaErrorInvalidValue);
  }
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                       cudaStream_t stream) {
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  const uint64_t threads = uint64_t{blockDim.x} * blockDim.y * blockDim.z;
  if (gridDim.x == 0 || gridDim.y == 0 || gridDim.z == 0 || gridDim.x > 2147483647u || gridDim.y > 65535 ||
      gridDim.z > 65535 || threads == 0 || threads > 1024 || blockDim.z > 64) {
    return ret(cudaErrorInvalidConfiguration);
  }
  if (threads > static_cast<uint64_t>(k->max_threads)) return ret(cudaErrorLaunchOutOfResources);
  if (sharedMem > static_cast<size_t>(k->max_dynamic_shared)) {
    std::fprintf(stderr, "fusert-emu: %s: %zu bytes of dynamic shared memory, the kernel allows %d\n", k->entry.c_str(),
                 sharedMem, k->max_dynamic_shared);
    return ret(cudaErrorInvalidValue);
  }
  if (!args || !args[0]) return ret(cudaErrorInvalidValue);
  // Parameters are copied at the launch, as the runtime does.
  const size_t bytes = k->param_bytes ? k->param_bytes : sizeof_args(k->kind);
  if (!bytes) return ret(cudaErrorInvalidValue);
  auto params = std::make_shared<std::vector<unsigned char>>(bytes);
  std::memcpy(params->data(), args[0], bytes);
  const bool ok = check_args(*k, params->data(), gridDim, sharedMem);
  const fusert::cuda::KernelReference* ref = k->ref;
  const std::string entry = k->entry;
  const CUkern_st* handle = k;
  emu_enqueue(stream, [=] {
    if (!st().kernels.count(handle)) {
      record_violation("kernel " + entry + " launched after its library was unloaded");
      return;
    }
    // Allocations may have been freed since the launch (a replayed graph): check again.
    if (!ok || !check_args(*handle, params->data(), gridDim, sharedMem)) return;
    (*ref)(params->data(), gridDim.x, gridDim.y, gridDim.z);
    count_op(OpKind::kKernel);
  });
  return cudaSuccess;
}
