// Reductions over the middle axis (kernels/cuda/reduce.cuh): one thread per output element, a
// grid-stride loop, 64-bit indices.
#include <cuda_runtime.h>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/reduce.cuh"

namespace fusert::cuda {

namespace {

using grid::blocks_for;
using grid::kThreads;

__device__ float pre(ReduceKind::Pre p, float v) {
  return p == ReduceKind::kAbs ? fabsf(v) : p == ReduceKind::kSquare ? v * v : v;
}

__device__ float window(int64_t len, int64_t inner, const ReduceKind& k, const float* x) {
  if (k.combine == ReduceKind::kMax || k.combine == ReduceKind::kMin) {
    if (len == 0) return k.combine == ReduceKind::kMax ? -INFINITY : INFINITY;
    float acc = pre(k.pre, x[0]);
    for (int64_t l = 1; l < len && !isnan(acc); ++l) {
      const float v = pre(k.pre, x[l * inner]);
      acc = isnan(v) ? v : (k.combine == ReduceKind::kMax ? fmaxf(acc, v) : fminf(acc, v));
    }
    return acc;
  }
  if (k.combine == ReduceKind::kLogSumExp) {
    double m = -INFINITY;
    for (int64_t l = 0; l < len; ++l) {
      const double v = pre(k.pre, x[l * inner]);
      if (isnan(v)) return static_cast<float>(v);
      m = fmax(m, v);
    }
    if (len == 0 || isinf(m)) return static_cast<float>(m);
    double acc = 0;
    for (int64_t l = 0; l < len; ++l) acc += exp(static_cast<double>(pre(k.pre, x[l * inner])) - m);
    return static_cast<float>(m + log(acc));
  }
  double acc = k.combine == ReduceKind::kProd ? 1.0 : 0.0;
  for (int64_t l = 0; l < len; ++l) {
    const double v = pre(k.pre, x[l * inner]);
    acc = k.combine == ReduceKind::kProd ? acc * v : acc + v;
  }
  return static_cast<float>(acc);
}

__global__ void reduce_kernel(int64_t outer, int64_t len, int64_t inner, ReduceKind k, const float* __restrict__ x,
                              float* __restrict__ y) {
  const int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = t / inner, i = t % inner;
    const float r = window(len, inner, k, x + o * len * inner + i);
    y[t] = k.post == ReduceKind::kSqrt ? sqrtf(r) : k.post == ReduceKind::kLog ? logf(r) : r;
  }
}

__global__ void arg_kernel(int64_t outer, int64_t len, int64_t inner, bool min, bool last, const float* __restrict__ x,
                           int64_t* __restrict__ y) {
  const int64_t total = outer * inner;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const float* w = x + (t / inner) * len * inner + t % inner;
    int64_t best = 0;
    float bv = w[0];
    for (int64_t l = 1; l < len && !isnan(bv); ++l) {
      const float v = w[l * inner];
      if (isnan(v) || (min ? v < bv : v > bv) || (last && v == bv)) {
        bv = v;
        best = l;
      }
    }
    y[t] = best;
  }
}

__global__ void lrn_kernel(int64_t n, int64_t c, int64_t s, int64_t size, float alpha, float beta, float bias,
                           const float* __restrict__ x, float* __restrict__ y) {
  const int64_t total = n * c * s, lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < total; t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = t % s, ch = (t / s) % c, b = t / (s * c);
    double sq = 0;
    for (int64_t k = ch - lo < 0 ? 0 : ch - lo; k <= (ch + hi < c - 1 ? ch + hi : c - 1); ++k) {
      const double v = x[(b * c + k) * s + i];
      sq += v * v;
    }
    const double scale = static_cast<double>(alpha) / static_cast<double>(size);
    y[t] = static_cast<float>(x[t] / pow(bias + scale * sq, static_cast<double>(beta)));
  }
}

template <typename T, typename Acc>
__global__ void cumsum_kernel(int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse,
                              const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < outer * inner;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = t / inner, i = t % inner;
    Acc acc = 0;
    for (int64_t s = 0; s < len; ++s) {
      const int64_t at = (o * len + (reverse ? len - 1 - s : s)) * inner + i;
      const T xv = x[at];
      if (exclusive) y[at] = static_cast<T>(acc);
      acc = static_cast<Acc>(acc + static_cast<Acc>(xv));
      if (!exclusive) y[at] = static_cast<T>(acc);
    }
  }
}

}  // namespace

cudaError_t cumsum(int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, ScanType t, const void* x,
                   void* y, cudaStream_t stream) {
  if (outer * inner == 0 || len == 0) return cudaSuccess;
  const int blocks = blocks_for(outer * inner);
  switch (t) {
    case ScanType::kF32:
      cumsum_kernel<float, double><<<blocks, kThreads, 0, stream>>>(
          outer, len, inner, exclusive, reverse, static_cast<const float*>(x), static_cast<float*>(y));
      break;
    case ScanType::kI32:
      cumsum_kernel<int32_t, uint32_t><<<blocks, kThreads, 0, stream>>>(
          outer, len, inner, exclusive, reverse, static_cast<const int32_t*>(x), static_cast<int32_t*>(y));
      break;
    case ScanType::kI64:
      cumsum_kernel<int64_t, uint64_t><<<blocks, kThreads, 0, stream>>>(
          outer, len, inner, exclusive, reverse, static_cast<const int64_t*>(x), static_cast<int64_t*>(y));
      break;
  }
  return cudaGetLastError();
}

cudaError_t lrn(int64_t n, int64_t c, int64_t s, int64_t size, float alpha, float beta, float bias, const float* x,
                float* y, cudaStream_t stream) {
  if (size < 1) return cudaErrorInvalidValue;
  if (n * c * s == 0) return cudaSuccess;
  lrn_kernel<<<blocks_for(n * c * s), kThreads, 0, stream>>>(n, c, s, size, alpha, beta, bias, x, y);
  return cudaGetLastError();
}

cudaError_t reduce_axis(int64_t outer, int64_t len, int64_t inner, const ReduceKind& k, const float* x, float* y,
                        cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  reduce_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(outer, len, inner, k, x, y);
  return cudaGetLastError();
}

cudaError_t arg_extreme(int64_t outer, int64_t len, int64_t inner, bool min, bool last, const float* x, int64_t* y,
                        cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  if (len <= 0) return cudaErrorInvalidValue;
  arg_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(outer, len, inner, min, last, x, y);
  return cudaGetLastError();
}

}  // namespace fusert::cuda
