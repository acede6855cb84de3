// Helpers of the device tests (tests/cuda/test_device*.cc, run on a GPU by test_cuda and on the
// emulated device by test_cuda_emu): whether a device is present, a context, device buffers.
#pragma once

#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "kernels/cuda/context.h"

namespace fusert::cudatest {

namespace cu = fusert::cuda;

inline bool have_device() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();  // clear the "no driver / no device" error for later checks
  return ok;
}

#define FUSERT_REQUIRE_DEVICE()             \
  if (!::fusert::cudatest::have_device()) { \
    MESSAGE("skipped: no CUDA device");     \
    return;                                 \
  }

inline std::unique_ptr<cu::Context> make_context() {
  auto ctx = cu::Context::create();
  REQUIRE_MESSAGE(ctx.ok(), ctx.status().message());
  return std::move(ctx).value();
}

/// A device copy of a host vector; all transfers are ordered on the context's stream.
template <typename T>
class DevBuf {
 public:
  DevBuf(cu::Context& ctx, size_t n) : ctx_(ctx), n_(n) {
    REQUIRE(cudaMalloc(reinterpret_cast<void**>(&p_), sizeof(T) * (n ? n : 1)) == cudaSuccess);
  }
  DevBuf(cu::Context& ctx, const std::vector<T>& h) : DevBuf(ctx, h.size()) {
    REQUIRE(cudaMemcpyAsync(p_, h.data(), sizeof(T) * n_, cudaMemcpyHostToDevice, ctx_.stream()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(ctx_.stream()) == cudaSuccess);
  }
  ~DevBuf() { cudaFree(p_); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  T* get() const { return p_; }
  std::vector<T> host() const {
    std::vector<T> h(n_);
    REQUIRE(cudaStreamSynchronize(ctx_.stream()) == cudaSuccess);
    REQUIRE(cudaMemcpyAsync(h.data(), p_, sizeof(T) * n_, cudaMemcpyDeviceToHost, ctx_.stream()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(ctx_.stream()) == cudaSuccess);
    return h;
  }

 private:
  cu::Context& ctx_;
  size_t n_;
  T* p_ = nullptr;
};

}  // namespace fusert::cudatest
