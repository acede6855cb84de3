// Internal interface between the fake CUDA runtime's files (tests/cuda_emu): the handle
// types behind cudaStream_t, cudaEvent_t, cudaGraph_t, cudaLibrary_t and cudaKernel_t, and the
// kernel-side checks (fake_kernels.cc): cubin parsing, argument-struct checks, error texts.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/cuda_oracle/kernel_reference.h"

// ---------------------------------------------------------------- handle types
using OpList = std::vector<std::function<void()>>;

struct CUstream_st {
  unsigned flags = 0;
  std::deque<std::function<void()>> queue;
  bool capturing = false;
  bool capture_invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::shared_ptr<OpList> capture;
};

struct CUevent_st {
  bool recorded = false;  ///< cudaEventRecord was called at least once
  bool done = false;      ///< the last record has executed
  std::chrono::steady_clock::time_point when;
};

struct CUgraph_st {
  std::shared_ptr<OpList> ops;
};

struct CUgraphExec_st {
  std::shared_ptr<const OpList> ops;
};

struct CUlib_st {
  std::vector<char> image;  ///< copy of the cubin
};

struct CUkern_st {
  CUlib_st* lib = nullptr;
  std::string entry, kind;  ///< kind: "ew", "layernorm", ... from "fz_<kind>_<hash>"
  const fusert::cuda::KernelReference* ref = nullptr;
  size_t param_bytes = 0;      ///< from EIATTR_CBANK_PARAM_SIZE
  int max_threads = 1024;      ///< from EIATTR_MAX_THREADS (__launch_bounds__)
  size_t static_shared = 0;    ///< size of .nv.shared.<entry>
  int max_dynamic_shared = 0;  ///< cudaFuncAttributeMaxDynamicSharedMemorySize
};

namespace fusert::emu::detail {

struct CubinKernel {
  bool found = false;
  size_t param_bytes = 0;
  int max_threads = 0;
  size_t static_shared = 0;
};

/// True when `img` is a 64-bit ELF image.
bool elf_ok(const std::vector<char>& img);
/// Size of an ELF image from its headers (the runtime gets only a pointer).
size_t elf_size(const void* code);
/// The entry's facts from the cubin: present, parameter bytes, launch bounds, static shared.
CubinKernel parse_kernel(const std::vector<char>& img, const std::string& entry);
/// sizeof the kernel_abi.h argument struct of a generated kernel kind ("ew", "layernorm", ...).
size_t sizeof_args(const std::string& kind);
/// Checks a launch's argument struct against the allocations it points into, the grid and the
/// shared memory; records violations and returns false on any.
bool check_args(const CUkern_st& k, const void* args, dim3 grid, size_t shared);
/// cudaGetErrorName / cudaGetErrorString texts of the errors the emulation returns.
const char* error_name(cudaError_t e);
const char* error_string(cudaError_t e);

}  // namespace fusert::emu::detail
