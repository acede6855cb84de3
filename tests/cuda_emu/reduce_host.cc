// Host implementations of kernels/cuda/reduce.cuh for fusert_emu (in place of reduce.cu): the same
// functions and argument checks, written from the header's contract; each call checks its read and
// write ranges against the device allocations, then enqueues the work on the stream.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cuda/reduce.cuh"
#include "tests/cuda_emu/emu.h"

namespace fusert::cuda {

namespace {

namespace emu = fusert::emu;

float pre(ReduceKind::Pre p, float v) {
  return p == ReduceKind::kAbs ? std::fabs(v) : p == ReduceKind::kSquare ? v * v : v;
}

float window(int64_t len, int64_t inner, const ReduceKind& k, const float* x) {
  if (k.combine == ReduceKind::kMax || k.combine == ReduceKind::kMin) {
    const bool max = k.combine == ReduceKind::kMax;
    if (len == 0) return max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    float acc = pre(k.pre, x[0]);
    for (int64_t l = 1; l < len && !std::isnan(acc); ++l) {
      const float v = pre(k.pre, x[l * inner]);
      acc = std::isnan(v) ? v : (max ? std::fmax(acc, v) : std::fmin(acc, v));
    }
    return acc;
  }
  if (k.combine == ReduceKind::kLogSumExp) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t l = 0; l < len; ++l) {
      const double v = pre(k.pre, x[l * inner]);
      if (std::isnan(v)) return static_cast<float>(v);
      m = std::fmax(m, v);
    }
    if (len == 0 || std::isinf(m)) return static_cast<float>(m);
    double acc = 0;
    for (int64_t l = 0; l < len; ++l) acc += std::exp(static_cast<double>(pre(k.pre, x[l * inner])) - m);
    return static_cast<float>(m + std::log(acc));
  }
  double acc = k.combine == ReduceKind::kProd ? 1.0 : 0.0;
  for (int64_t l = 0; l < len; ++l) {
    const double v = pre(k.pre, x[l * inner]);
    acc = k.combine == ReduceKind::kProd ? acc * v : acc + v;
  }
  return static_cast<float>(acc);
}

bool ranges_ok(const void* x, size_t xb, const void* y, size_t yb, const char* what) {
  bool ok = emu::check_device_range(x, xb, emu::Access::kRead, std::string(what) + " x");
  ok &= emu::check_device_range(y, yb, emu::Access::kWrite, std::string(what) + " y");
  return ok;
}

}  // namespace

cudaError_t reduce_axis(int64_t outer, int64_t len, int64_t inner, const ReduceKind& k, const float* x, float* y,
                        cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  if (!ranges_ok(x, 4 * static_cast<size_t>(outer * len * inner), y, 4 * static_cast<size_t>(outer * inner),
                 "reduce_axis"))
    return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t t = 0; t < outer * inner; ++t) {
      const float r = window(len, inner, k, x + (t / inner) * len * inner + t % inner);
      y[t] = k.post == ReduceKind::kSqrt ? std::sqrt(r) : k.post == ReduceKind::kLog ? std::log(r) : r;
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t arg_extreme(int64_t outer, int64_t len, int64_t inner, bool min, bool last, const float* x, int64_t* y,
                        cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  if (len <= 0) return cudaErrorInvalidValue;
  if (!ranges_ok(x, 4 * static_cast<size_t>(outer * len * inner), y, 8 * static_cast<size_t>(outer * inner),
                 "arg_extreme"))
    return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t t = 0; t < outer * inner; ++t) {
      const float* w = x + (t / inner) * len * inner + t % inner;
      int64_t best = 0;
      float bv = w[0];
      for (int64_t l = 1; l < len && !std::isnan(bv); ++l) {
        const float v = w[l * inner];
        if (std::isnan(v) || (min ? v < bv : v > bv) || (last && v == bv)) {
          bv = v;
          best = l;
        }
      }
      y[t] = best;
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

namespace {

template <typename T, typename Acc>
void scan(int64_t outer, int64_t len, int64_t inner, bool exclusive, bool reverse, const T* x, T* y) {
  for (int64_t t = 0; t < outer * inner; ++t) {
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
  const size_t bytes = (t == ScanType::kI64 ? 8 : 4) * static_cast<size_t>(outer * len * inner);
  if (!ranges_ok(x, bytes, y, bytes, "cumsum")) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    switch (t) {
      case ScanType::kF32:
        scan<float, double>(outer, len, inner, exclusive, reverse, static_cast<const float*>(x),
                            static_cast<float*>(y));
        break;
      case ScanType::kI32:
        scan<int32_t, uint32_t>(outer, len, inner, exclusive, reverse, static_cast<const int32_t*>(x),
                                static_cast<int32_t*>(y));
        break;
      case ScanType::kI64:
        scan<int64_t, uint64_t>(outer, len, inner, exclusive, reverse, static_cast<const int64_t*>(x),
                                static_cast<int64_t*>(y));
        break;
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t lrn(int64_t n, int64_t c, int64_t s, int64_t size, float alpha, float beta, float bias, const float* x,
                float* y, cudaStream_t stream) {
  if (size < 1) return cudaErrorInvalidValue;
  const int64_t total = n * c * s;
  if (total == 0) return cudaSuccess;
  if (!ranges_ok(x, 4 * static_cast<size_t>(total), y, 4 * static_cast<size_t>(total), "lrn"))
    return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    const double scale = static_cast<double>(alpha) / static_cast<double>(size);
    for (int64_t t = 0; t < total; ++t) {
      const int64_t i = t % s, ch = (t / s) % c, b = t / (s * c);
      double sq = 0;
      for (int64_t k = std::max<int64_t>(0, ch - lo); k <= std::min(c - 1, ch + hi); ++k) {
        const double v = x[(b * c + k) * s + i];
        sq += v * v;
      }
      y[t] = static_cast<float>(x[t] / std::pow(bias + scale * sq, static_cast<double>(beta)));
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

}  // namespace fusert::cuda
