// The CUDA execution context of one session: device, one stream, cuBLASLt and cuDNN handles,
// a workspace, and the generated kernels loaded from their cubins (cudaLibraryLoadData: the
// runtime API, so fusert never links libcuda directly). Every CUDA/cuBLAS/cuDNN call is checked;
// errors (kDeviceError) name the call and the caller's `what` (a node or group).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/base/status.h"
#include "kernels/cuda/nvrtc_compiler.h"

namespace fusert::cuda {

/// Status of a CUDA runtime call: OK, or kDeviceError "`what`: `call` failed: <cuda message>".
Status cuda_status(cudaError_t err, const char* call, const std::string& what);
Status cublas_status(cublasStatus_t st, const char* call, const std::string& what);
Status cudnn_status(cudnnStatus_t st, const char* call, const std::string& what);

/// Return-on-error wrappers; `what` is any expression convertible to std::string.
#define CUDA_CHECK(call, what) FUSERT_RETURN_IF_ERROR(::fusert::cuda::cuda_status((call), #call, (what)))
#define CUBLAS_CHECK(call, what) FUSERT_RETURN_IF_ERROR(::fusert::cuda::cublas_status((call), #call, (what)))
#define CUDNN_CHECK(call, what) FUSERT_RETURN_IF_ERROR(::fusert::cuda::cudnn_status((call), #call, (what)))

/// A generated kernel loaded on the device.
struct LoadedKernel {
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  std::string entry;
};

class Context {
 public:
  /// Selects `device`, creates the stream (non-blocking), the cuBLASLt and cuDNN handles (bound
  /// to the stream) and a workspace of `workspace_bytes` (default 32 MiB; grown by
  /// reserve_workspace before the first run). Fails with a clear message when there is no
  /// device, the driver is too old for this toolkit, or a library cannot initialise.
  static Result<std::unique_ptr<Context>> create(int device = 0, size_t workspace_bytes = 32u << 20);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t lt() const { return lt_; }
  cublasHandle_t blas() const { return blas_; }  ///< cuBLAS (pointer-array batched GEMM)
  cudnnHandle_t dnn() const { return dnn_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  /// Grows the workspace to at least `bytes` (call before graph capture, never during a run).
  Status reserve_workspace(size_t bytes);
  /// A zero-filled, never-written device buffer of at least `bytes` (grown like the
  /// workspace): the `z` of fused convolutions without a residual, so cuDNN never blends
  /// stale memory, whatever it does with alpha2 = 0.
  Status reserve_zeros(size_t bytes);
  const float* zeros() const { return static_cast<const float*>(zeros_); }
  size_t zeros_bytes() const { return zeros_bytes_; }

  /// TF32 tensor-core math for fp32 GEMMs and convolutions (off by default: exact fp32).
  bool tf32 = false;

  /// Loads a compiled kernel (cudaLibraryLoadData + cudaLibraryGetKernel); errors name `what`.
  Result<LoadedKernel> load(const CompiledKernel& k, const std::string& what);
  /// Launches a loaded kernel on the stream with one by-value argument struct `args` of `size`
  /// bytes (a struct of kernel_abi.h). Checks the launch (cudaGetLastError).
  Status launch(const LoadedKernel& k, dim3 grid, dim3 block, size_t shared_bytes, const void* args,
                const std::string& what);

  /// Device name and compute capability, e.g. "NVIDIA H200 (sm_90)".
  std::string device_name() const;

 private:
  Context() = default;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  void* zeros_ = nullptr;
  size_t zeros_bytes_ = 0;
  std::vector<LoadedKernel> loaded_;
  std::string name_;
};

}  // namespace fusert::cuda
