// Internal interface between the fake CUDA runtime's files (tests/cuda_emu): the handle
// types behind cudaStream_t, cudaEvent_t, cudaGraph_t, cudaLibrary_t and cudaKernel_t, and the
// kernel-side checks (fake_kernels.cc): cubin parsing, argument-struct checks, error texts.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/cuda_emu/emu.h"

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

// ---------------------------------------------------------------- the runtime's state
// Defined in fake_cudart.cc, shared by fake_cudart_{memory,streams,launch}.cc.
namespace fusert::emu::detail {

constexpr int kSmVersion = 90;
constexpr size_t kSharedOptin = 232448;  // sm_90: 227 KiB per block by opt-in
constexpr size_t kSharedDefault = 48 * 1024;
constexpr size_t kTotalMemory = size_t{141} << 30;
constexpr size_t kGuard = 256;         // guard bytes before and after every allocation
constexpr unsigned char kFill = 0xFF;  // fresh memory and guards: NaN as f32
constexpr size_t kQuarantineBytes = size_t{512} << 20;

struct Alloc {
  char* base = nullptr;  ///< what aligned_alloc returned
  size_t size = 0;       ///< bytes the caller asked for
  size_t total = 0;      ///< with guards
  bool pinned = false;
};

struct State {
  std::mutex mu;                      // allocations, violations, counters
  std::map<uintptr_t, Alloc> allocs;  // by user pointer
  std::deque<Alloc> quarantine;
  size_t quarantined = 0;
  std::vector<std::string> violations;
  std::set<std::string> reported;
  Counters counters;
  // Handles (host thread only).
  CUstream_st legacy;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::set<CUlib_st*> libraries;
  std::set<const CUkern_st*> kernels;
  std::map<CUlib_st*, std::vector<CUkern_st*>> lib_kernels;
  cudaError_t async_error = cudaSuccess;
};

State& st();
/// Synchronisation points (device, stream, event) also verify every allocation's guard bytes.
void check_guards(const char* when);
/// Records e as the thread's last error (cudaGetLastError) when it is one; returns it.
cudaError_t ret(cudaError_t e);
extern thread_local cudaError_t t_last_error;
CUstream_st* resolve(cudaStream_t s);
bool valid_stream(cudaStream_t s);
/// A call that is not permitted while a capture is in progress: invalidates the captures.
bool refuse_during_capture(const char* call);
/// Runs the queued work of one stream / of every stream, in order.
void drain(CUstream_st* s);
void drain_all();
cudaError_t take_async_error();
/// Guarded allocation (device) or plain (pinned host); nullptr when out of memory.
char* allocate(size_t size, bool pinned);
/// Frees into the quarantine; a pointer not allocated (or freed twice) is a violation.
cudaError_t release(void* p, bool pinned, const char* call);

}  // namespace fusert::emu::detail
