// The CUDA execution context: device selection with a clear "no device / old driver" message,
// the stream, cuBLASLt and cuDNN handles, the shared workspace, and the generated kernels
// loaded through the runtime's library API (cudaLibraryLoadData / cudaLibraryGetKernel).
#include "kernels/cuda/context.h"

#include <sstream>
#include <utility>

namespace fusert::cuda {

namespace {

Status device_error(const std::string& what, const char* call, const std::string& detail) {
  std::string msg;
  if (!what.empty()) msg = what + ": ";
  msg += call;
  msg += " failed: ";
  msg += detail;
  return Status(StatusCode::kDeviceError, std::move(msg));
}

}  // namespace

Status cuda_status(cudaError_t err, const char* call, const std::string& what) {
  if (err == cudaSuccess) return Status::ok_status();
  return device_error(what, call, std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ")");
}

Status cublas_status(cublasStatus_t st, const char* call, const std::string& what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::ok_status();
  return device_error(what, call, std::string(cublasLtGetStatusName(st)) + " (" + cublasLtGetStatusString(st) + ")");
}

Status cudnn_status(cudnnStatus_t st, const char* call, const std::string& what) {
  if (st == CUDNN_STATUS_SUCCESS) return Status::ok_status();
  return device_error(what, call, cudnnGetErrorString(st));
}

Result<std::unique_ptr<Context>> Context::create(int device, size_t workspace_bytes) {
  const std::string what = "CUDA context";
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  // With no driver installed cudart reports cudaErrorInsufficientDriver, so both cases read as
  // "no usable CUDA device"; the runtime's own error names the precise cause.
  if (err == cudaErrorInsufficientDriver) {
    return error(StatusCode::kDeviceError)
           << "no usable CUDA device: the NVIDIA driver is missing or older than this CUDA " << CUDART_VERSION / 1000
           << "." << (CUDART_VERSION % 1000) / 10 << " runtime requires (cudaGetDeviceCount: " << cudaGetErrorName(err)
           << ")";
  }
  if (err != cudaSuccess || count == 0) {
    return error(StatusCode::kDeviceError)
           << "no CUDA device found (cudaGetDeviceCount: "
           << (err == cudaSuccess ? std::string("0 devices")
                                  : std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err))
           << ")";
  }
  if (device < 0 || device >= count) {
    return error(StatusCode::kInvalidArgument)
           << "CUDA device " << device << " does not exist (" << count << " device(s) present)";
  }

  // The destructor releases whatever was created before a failure.
  std::unique_ptr<Context> ctx(new Context());
  ctx->device_ = device;
  CUDA_CHECK(cudaSetDevice(device), what);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device), what);
  std::ostringstream name;
  name << prop.name << " (sm_" << prop.major << prop.minor << ")";
  ctx->name_ = name.str();
  // Generated kernels are sm_90 cubins (no PTX): they load on compute capability 9.0 only.
  if (prop.major != 9 || prop.minor != 0) {
    return error(StatusCode::kDeviceError)
           << "--device cuda: " << ctx->name_ << " is not supported: fusert's generated kernels target " << kTargetArch
           << " (H100/H200); use --device cpu";
  }

  CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking), what);
  CUBLAS_CHECK(cublasLtCreate(&ctx->lt_), what);
  CUBLAS_CHECK(cublasCreate(&ctx->blas_), what);
  CUBLAS_CHECK(cublasSetStream(ctx->blas_, ctx->stream_), what);
  CUDNN_CHECK(cudnnCreate(&ctx->dnn_), what);
  CUDNN_CHECK(cudnnSetStream(ctx->dnn_, ctx->stream_), what);
  if (workspace_bytes > 0) {
    CUDA_CHECK(cudaMalloc(&ctx->workspace_, workspace_bytes), what + " workspace");
    ctx->workspace_bytes_ = workspace_bytes;
  }
  return ctx;
}

Context::~Context() {
  // Errors cannot be reported from here; each release is attempted regardless.
  if (stream_) cudaStreamSynchronize(stream_);
  for (const LoadedKernel& k : loaded_) {
    if (k.library) cudaLibraryUnload(k.library);
  }
  if (workspace_) cudaFree(workspace_);
  if (zeros_) cudaFree(zeros_);
  if (dnn_) cudnnDestroy(dnn_);
  if (lt_) cublasLtDestroy(lt_);
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
}

Status Context::reserve_workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return Status::ok_status();
  const std::string what = "CUDA workspace of " + std::to_string(bytes) + " bytes";
  // The old buffer may still be read by enqueued work; the new one is allocated first so a
  // failure leaves the context usable.
  CUDA_CHECK(cudaStreamSynchronize(stream_), what);
  void* fresh = nullptr;
  CUDA_CHECK(cudaMalloc(&fresh, bytes), what);
  if (workspace_) cudaFree(workspace_);
  workspace_ = fresh;
  workspace_bytes_ = bytes;
  return Status::ok_status();
}

Status Context::reserve_zeros(size_t bytes) {
  if (bytes <= zeros_bytes_) return Status::ok_status();
  const std::string what = "zero buffer of " + std::to_string(bytes) + " bytes";
  CUDA_CHECK(cudaStreamSynchronize(stream_), what);
  void* fresh = nullptr;
  CUDA_CHECK(cudaMalloc(&fresh, bytes), what);
  // On this context's stream and waited for: cudaMemset runs on the legacy stream, which a
  // non-blocking stream does not wait for.
  cudaError_t st = cudaMemsetAsync(fresh, 0, bytes, stream_);
  if (st == cudaSuccess) st = cudaStreamSynchronize(stream_);
  if (st != cudaSuccess) {
    cudaFree(fresh);
    return cuda_status(st, "cudaMemset", what);
  }
  if (zeros_) cudaFree(zeros_);
  zeros_ = fresh;
  zeros_bytes_ = bytes;
  return Status::ok_status();
}

Result<LoadedKernel> Context::load(const CompiledKernel& k, const std::string& what) {
  if (k.cubin.empty()) return error(StatusCode::kInternal) << what << ": kernel '" << k.entry << "' has no cubin";
  LoadedKernel out;
  out.entry = k.entry;
  CUDA_CHECK(cudaLibraryLoadData(&out.library, k.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0), what);
  const cudaError_t err = cudaLibraryGetKernel(&out.kernel, out.library, k.entry.c_str());
  if (err != cudaSuccess) {
    cudaLibraryUnload(out.library);
    return cuda_status(err, "cudaLibraryGetKernel", what + " (entry '" + k.entry + "')");
  }
  // Opt in once to the largest dynamic shared memory the device allows beside the kernel's
  // static shared memory (the default limit is 48 KiB for static + dynamic together), so no
  // attribute call happens on the launch path or inside a CUDA Graph capture.
  const void* func = reinterpret_cast<const void*>(out.kernel);
  cudaFuncAttributes attr{};
  int optin = 0;
  CUDA_CHECK(cudaFuncGetAttributes(&attr, func), what);
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_), what);
  const int dynamic_max = optin - static_cast<int>(attr.sharedSizeBytes);
  if (dynamic_max > 0) {
    CUDA_CHECK(cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic_max), what);
  }
  loaded_.push_back(out);
  return out;
}

Status Context::launch(const LoadedKernel& k, dim3 grid, dim3 block, size_t shared_bytes, const void* args,
                       const std::string& what) {
  // A cudaKernel_t cast to const void* is accepted by the runtime's launch and attribute calls
  // (CUDA Runtime API, Execution Control: "can also be used with a kernel cudaKernel_t").
  const void* func = reinterpret_cast<const void*>(k.kernel);
  // Every generated kernel takes exactly one by-value struct (kernel_abi.h).
  void* params[] = {const_cast<void*>(args)};
  cudaError_t err = cudaLaunchKernel(func, grid, block, params, shared_bytes, stream_);
  const char* call = "cudaLaunchKernel";
  if (err == cudaSuccess) {
    err = cudaGetLastError();
    call = "cudaGetLastError";
  }
  // The message is built only on failure: launch() is on the hot path.
  if (err != cudaSuccess) return cuda_status(err, call, what + " (kernel " + k.entry + ")");
  return Status::ok_status();
}

std::string Context::device_name() const { return name_; }

}  // namespace fusert::cuda
