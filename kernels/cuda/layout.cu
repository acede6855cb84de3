// Data-movement and dtype kernels: strided N-d copy, Gather with a device-side index check,
// Cast and Where. Index math is 64-bit; each kernel walks its output with a grid-stride loop
// and takes its shape/strides (rank <= kMaxCopyRank) in one small struct passed by value.
#include <cuda_runtime.h>

#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/layout.cuh"

namespace fusert::cuda {

namespace {

using grid::blocks_for;
using grid::kThreads;

struct CopyArgs {
  int rank;
  int64_t numel, in_offset, out_offset;
  int64_t shape[kMaxCopyRank], in_strides[kMaxCopyRank], out_strides[kMaxCopyRank];
};

struct WhereArgs {
  int rank;
  int64_t numel;
  int64_t shape[kMaxCopyRank], c_strides[kMaxCopyRank], a_strides[kMaxCopyRank], b_strides[kMaxCopyRank];
};

template <typename T>
static __global__ void strided_copy_kernel(CopyArgs p, const T* __restrict__ x, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < p.numel; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = i, src = p.in_offset, dst = p.out_offset;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % p.shape[d];
      rem /= p.shape[d];
      src += idx * p.in_strides[d];
      dst += idx * p.out_strides[d];
    }
    y[dst] = x[src];
  }
}

// y[o, j, r] = x[o, idx[j], r]; a bad index flags *bad and writes zero.
template <typename T, typename I>
static __global__ void gather_kernel(int64_t outer, int64_t axis_len, int64_t inner, int64_t count,
                                     const T* __restrict__ x, const I* __restrict__ idx, T* __restrict__ y, int* bad) {
  const int64_t total = outer * count * inner;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t o = i / (inner * count);
    int64_t k = static_cast<int64_t>(idx[j]);
    if (k < 0) k += axis_len;
    if (k < 0 || k >= axis_len) {
      if (bad) *bad = 1;
      y[i] = T(0);
    } else {
      y[i] = x[(o * axis_len + k) * inner + r];
    }
  }
}

// Through double, as the CPU oracle converts; bool reads/writes one byte, nonzero = true.
template <typename From, typename To>
static __global__ void cast_kernel(int64_t count, const From* __restrict__ x, To* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const double v = static_cast<double>(x[i]);
    y[i] = static_cast<To>(v);
  }
}

template <typename From>
static __global__ void cast_to_bool_kernel(int64_t count, const From* __restrict__ x, uint8_t* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[i] != From(0) ? 1 : 0;
  }
}

static __global__ void where_kernel(WhereArgs p, const uint8_t* __restrict__ cond, const float* __restrict__ a,
                                    const float* __restrict__ b, float* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < p.numel; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = i, ci = 0, ai = 0, bi = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t idx = rem % p.shape[d];
      rem /= p.shape[d];
      ci += idx * p.c_strides[d];
      ai += idx * p.a_strides[d];
      bi += idx * p.b_strides[d];
    }
    y[i] = cond[ci] ? a[ai] : b[bi];
  }
}

// One output element per thread: its row taps, each a weighted sum of its column taps (the CPU's
// order: the first row tap's sum scaled, the others added).
static __global__ void resize_2d_kernel(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, ResizeTables t,
                                        const float* __restrict__ x, float* __restrict__ y) {
  const int64_t total = outer * oh * ow;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = i % ow, r = (i / ow) % oh, p = i / (ow * oh);
    const float* plane = x + p * ih * iw;
    float acc = 0.0f;
    for (int tr = 0; tr < t.row_taps; ++tr) {
      const float* src = plane + t.row_index[r * t.row_taps + tr] * iw;
      const int64_t c0 = o * t.col_taps;
      float v = t.col_taps == 1 ? src[t.col_index[c0]] : t.col_weight[c0] * src[t.col_index[c0]];
      for (int k = 1; k < t.col_taps; ++k) v += t.col_weight[c0 + k] * src[t.col_index[c0 + k]];
      const float w = t.row_weight[r * t.row_taps + tr];
      acc = tr == 0 ? (t.row_taps == 1 ? v : w * v) : acc + w * v;
    }
    y[i] = acc;
  }
}

struct PadArgs {
  int rank, mode;
  int64_t numel;
  int64_t out_shape[kMaxCopyRank], in_shape[kMaxCopyRank], begin[kMaxCopyRank];
};

// The source index of output index o along a dim (PadMode), or -1 for the constant.
__device__ int64_t pad_source(int64_t o, int64_t begin, int64_t len, int mode) {
  int64_t j = o - begin;
  if (j >= 0 && j < len) return j;
  switch (static_cast<PadMode>(mode)) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kReflect:
      return j < 0 ? -j : 2 * (len - 1) - j;
    case PadMode::kEdge:
      return j < 0 ? 0 : len - 1;
    default:  // kWrap
      j %= len;
      return j < 0 ? j + len : j;
  }
}

template <typename T>
static __global__ void pad_map_kernel(PadArgs p, const T* __restrict__ value, const T* __restrict__ x,
                                      T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < p.numel; i += int64_t{gridDim.x} * blockDim.x) {
    int64_t rem = i, src = 0, stride = 1;
    bool outside = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t j = pad_source(rem % p.out_shape[d], p.begin[d], p.in_shape[d], p.mode);
      rem /= p.out_shape[d];
      outside |= j < 0;
      src += j * stride;
      stride *= p.in_shape[d];
    }
    y[i] = outside ? value[0] : x[src];
  }
}

template <typename T>
cudaError_t launch_pad(const PadArgs& p, const void* value, const void* x, void* y, cudaStream_t stream) {
  pad_map_kernel<T><<<blocks_for(p.numel), kThreads, 0, stream>>>(p, static_cast<const T*>(value),
                                                                  static_cast<const T*>(x), static_cast<T*>(y));
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_copy(const CopyArgs& p, const void* x, void* y, cudaStream_t stream) {
  strided_copy_kernel<T><<<blocks_for(p.numel), kThreads, 0, stream>>>(p, static_cast<const T*>(x), static_cast<T*>(y));
  return cudaGetLastError();
}

template <typename T, typename I>
cudaError_t launch_gather(int64_t outer, int64_t axis_len, int64_t inner, const void* x, const void* idx, int64_t count,
                          void* y, int* bad, cudaStream_t stream) {
  gather_kernel<T, I><<<blocks_for(outer * count * inner), kThreads, 0, stream>>>(
      outer, axis_len, inner, count, static_cast<const T*>(x), static_cast<const I*>(idx), static_cast<T*>(y), bad);
  return cudaGetLastError();
}

template <typename From>
cudaError_t launch_cast_from(int64_t count, const From* x, void* y, CastType to, cudaStream_t stream) {
  const int blocks = blocks_for(count);
  switch (to) {
    case CastType::kF32:
      cast_kernel<From, float><<<blocks, kThreads, 0, stream>>>(count, x, static_cast<float*>(y));
      break;
    case CastType::kI64:
      cast_kernel<From, int64_t><<<blocks, kThreads, 0, stream>>>(count, x, static_cast<int64_t*>(y));
      break;
    case CastType::kI32:
      cast_kernel<From, int32_t><<<blocks, kThreads, 0, stream>>>(count, x, static_cast<int32_t*>(y));
      break;
    case CastType::kBool:
      cast_to_bool_kernel<From><<<blocks, kThreads, 0, stream>>>(count, x, static_cast<uint8_t*>(y));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int64_t volume(int rank, const int64_t* shape) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

}  // namespace

cudaError_t strided_copy(int rank, const int64_t* shape, const void* x, int64_t in_offset, const int64_t* in_strides,
                         void* y, int64_t out_offset, const int64_t* out_strides, int elem_bytes, cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  CopyArgs p{};
  p.rank = rank;
  p.numel = volume(rank, shape);
  p.in_offset = in_offset;
  p.out_offset = out_offset;
  for (int d = 0; d < rank; ++d) {
    p.shape[d] = shape[d];
    p.in_strides[d] = in_strides[d];
    p.out_strides[d] = out_strides[d];
  }
  if (p.numel == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1:
      return launch_copy<uint8_t>(p, x, y, stream);
    case 4:
      return launch_copy<uint32_t>(p, x, y, stream);
    case 8:
      return launch_copy<uint64_t>(p, x, y, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t gather(int64_t outer, int64_t axis_len, int64_t inner, const void* x, int elem_bytes, const void* idx,
                   bool idx_i64, int64_t count, void* y, int* bad_index, cudaStream_t stream) {
  if (outer * count * inner == 0) return cudaSuccess;
  if (elem_bytes == 4) {
    return idx_i64 ? launch_gather<uint32_t, int64_t>(outer, axis_len, inner, x, idx, count, y, bad_index, stream)
                   : launch_gather<uint32_t, int32_t>(outer, axis_len, inner, x, idx, count, y, bad_index, stream);
  }
  if (elem_bytes == 8) {
    return idx_i64 ? launch_gather<uint64_t, int64_t>(outer, axis_len, inner, x, idx, count, y, bad_index, stream)
                   : launch_gather<uint64_t, int32_t>(outer, axis_len, inner, x, idx, count, y, bad_index, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t cast(int64_t count, const void* x, CastType from, void* y, CastType to, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  switch (from) {
    case CastType::kF32:
      return launch_cast_from(count, static_cast<const float*>(x), y, to, stream);
    case CastType::kI64:
      return launch_cast_from(count, static_cast<const int64_t*>(x), y, to, stream);
    case CastType::kI32:
      return launch_cast_from(count, static_cast<const int32_t*>(x), y, to, stream);
    case CastType::kBool:
      return launch_cast_from(count, static_cast<const uint8_t*>(x), y, to, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t where(int rank, const int64_t* out_shape, const uint8_t* cond, const int64_t* c_strides, const float* a,
                  const int64_t* a_strides, const float* b, const int64_t* b_strides, float* y, cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  WhereArgs p{};
  p.rank = rank;
  p.numel = volume(rank, out_shape);
  for (int d = 0; d < rank; ++d) {
    p.shape[d] = out_shape[d];
    p.c_strides[d] = c_strides[d];
    p.a_strides[d] = a_strides[d];
    p.b_strides[d] = b_strides[d];
  }
  if (p.numel == 0) return cudaSuccess;
  where_kernel<<<blocks_for(p.numel), kThreads, 0, stream>>>(p, cond, a, b, y);
  return cudaGetLastError();
}

cudaError_t pad_map(int rank, const int64_t* out_shape, const int64_t* in_shape, const int64_t* begin, PadMode mode,
                    const void* value, const void* x, void* y, int elem_bytes, cudaStream_t stream) {
  if (rank < 1 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  PadArgs p{};
  p.rank = rank;
  p.mode = static_cast<int>(mode);
  p.numel = volume(rank, out_shape);
  for (int d = 0; d < rank; ++d) {
    if (in_shape[d] <= 0 && out_shape[d] > 0 && mode != PadMode::kConstant)
      return cudaErrorInvalidValue;  // nothing to reflect, clamp to or wrap
    p.out_shape[d] = out_shape[d];
    p.in_shape[d] = in_shape[d];
    p.begin[d] = begin[d];
  }
  if (p.numel == 0) return cudaSuccess;
  switch (elem_bytes) {
    case 1:
      return launch_pad<uint8_t>(p, value, x, y, stream);
    case 4:
      return launch_pad<uint32_t>(p, value, x, y, stream);
    case 8:
      return launch_pad<uint64_t>(p, value, x, y, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t resize_2d(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const ResizeTables& t,
                      const float* x, float* y, cudaStream_t stream) {
  if (t.row_taps < 1 || t.col_taps < 1) return cudaErrorInvalidValue;
  const int64_t total = outer * oh * ow;
  if (total == 0) return cudaSuccess;
  resize_2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(outer, ih, iw, oh, ow, t, x, y);
  return cudaGetLastError();
}

}  // namespace fusert::cuda
