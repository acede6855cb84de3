// Fake cuBLAS for the CUDA emulation: the handle calls and cublasGemmBatchedEx, written from the
// cuBLAS API reference (column-major: C_i = alpha * op(A_i) op(B_i) + beta * C_i for each i, with
// the matrix pointers read from DEVICE arrays of pointers), independent of how
// kernels/cuda/cublas_batched.cc maps the row-major problem onto it.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/cuda_emu/emu.h"

namespace {

namespace emu = fusert::emu;

struct Handle {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

std::mutex g_mu;
std::set<Handle*> g_handles;

bool live(cublasHandle_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_handles.count(reinterpret_cast<Handle*>(h)) > 0;
}

cublasStatus_t fail(cublasStatus_t st, const std::string& why) {
  emu::record_violation("cublasGemmBatchedEx: " + why);
  return st;
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  auto* h = new Handle();
  std::lock_guard<std::mutex> lock(g_mu);
  g_handles.insert(h);
  *handle = reinterpret_cast<cublasHandle_t>(h);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* h = reinterpret_cast<Handle*>(handle);
  if (!g_handles.erase(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete h;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  reinterpret_cast<Handle*>(handle)->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t bytes) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bytes > 0 && !emu::check_device_range(workspace, bytes, emu::Access::kWrite, "cublasSetWorkspace")) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  auto* h = reinterpret_cast<Handle*>(handle);
  h->workspace = workspace;
  h->workspace_bytes = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGemmBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                                const void* const Aarray[], cudaDataType Atype, int lda,
                                                const void* const Barray[], cudaDataType Btype, int ldb,
                                                const void* beta, void* const Carray[], cudaDataType Ctype, int ldc,
                                                int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (Atype != CUDA_R_32F || Btype != CUDA_R_32F || Ctype != CUDA_R_32F)
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "only fp32 is emulated");
  if (computeType != CUBLAS_COMPUTE_32F && computeType != CUBLAS_COMPUTE_32F_FAST_TF32) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "compute type");
  }
  if (m < 0 || n < 0 || k < 0 || batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const int a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
  const int b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "leading dimension smaller than the rows");
  }
  const size_t array_bytes = static_cast<size_t>(batchCount) * sizeof(void*);
  if (!emu::check_device_range(Aarray, array_bytes, emu::Access::kRead, "cublasGemmBatchedEx Aarray") ||
      !emu::check_device_range(Barray, array_bytes, emu::Access::kRead, "cublasGemmBatchedEx Barray") ||
      !emu::check_device_range(Carray, array_bytes, emu::Access::kRead, "cublasGemmBatchedEx Carray")) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);  // host scalars
  cudaStream_t stream = reinterpret_cast<Handle*>(handle)->stream;
  // The pointer arrays are read when the work runs (they live in device memory).
  emu::emu_enqueue(stream, [=]() {
    emu::count_op(emu::OpKind::kLibrary);
    for (int i = 0; i < batchCount; ++i) {
      const float* A = static_cast<const float*>(Aarray[i]);
      const float* B = static_cast<const float*>(Barray[i]);
      float* C = static_cast<float*>(Carray[i]);
      const size_t a_bytes = (static_cast<size_t>(a_cols - 1) * lda + a_rows) * sizeof(float);
      const size_t b_bytes = (static_cast<size_t>(b_cols - 1) * ldb + b_rows) * sizeof(float);
      const size_t c_bytes = (static_cast<size_t>(n - 1) * ldc + m) * sizeof(float);
      if (!emu::check_device_range(A, a_bytes, emu::Access::kRead, "cublasGemmBatchedEx A[i]") ||
          !emu::check_device_range(B, b_bytes, emu::Access::kRead, "cublasGemmBatchedEx B[i]") ||
          !emu::check_device_range(C, c_bytes, emu::Access::kWrite, "cublasGemmBatchedEx C[i]")) {
        return;
      }
      std::vector<float> out(static_cast<size_t>(m) * n);
      for (int col = 0; col < n; ++col) {
        for (int row = 0; row < m; ++row) {
          double acc = 0;
          for (int p = 0; p < k; ++p) {
            const float a =
                transa == CUBLAS_OP_N ? A[row + static_cast<size_t>(p) * lda] : A[p + static_cast<size_t>(row) * lda];
            const float b =
                transb == CUBLAS_OP_N ? B[p + static_cast<size_t>(col) * ldb] : B[col + static_cast<size_t>(p) * ldb];
            acc += static_cast<double>(a) * b;
          }
          const float c = be != 0.f ? C[row + static_cast<size_t>(col) * ldc] : 0.f;  // beta == 0: C not read
          out[static_cast<size_t>(col) * m + row] = static_cast<float>(al * acc) + be * c;
        }
      }
      for (int col = 0; col < n; ++col)
        for (int row = 0; row < m; ++row)
          C[row + static_cast<size_t>(col) * ldc] = out[static_cast<size_t>(col) * m + row];
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
