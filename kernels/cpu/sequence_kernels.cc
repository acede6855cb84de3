// Sequence-model kernels: LayerNorm, GELU, reductions, slice/gather/where/cast.
#include "kernels/cpu/sequence_kernels.h"

#include "kernels/cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace fusert::cpu {

void layer_norm(int64_t outer, int64_t inner, const float* x, const float* scale, const float* bias, float epsilon,
                float* y) {
#pragma omp parallel for schedule(static) if (outer > 4)
  for (int64_t r = 0; r < outer; ++r) {
    const float* xr = x + r * inner;
    float* yr = y + r * inner;
    // Sums in double, in vector lanes (a serial double reduction is bound by add latency: 2.8 ns
    // an element, ConvNeXt's 23 LayerNorms over 96-768 channels took 6.9 ms of 94).
    double sum = 0, sq = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < inner; ++i) sum += xr[i];
    const double mean = sum / static_cast<double>(inner);
#pragma omp simd reduction(+ : sq)
    for (int64_t i = 0; i < inner; ++i) {
      const double d = xr[i] - mean;
      sq += d * d;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / static_cast<double>(inner) + epsilon));
    const float m = static_cast<float>(mean);
#pragma omp simd
    for (int64_t i = 0; i < inner; ++i) yr[i] = (xr[i] - m) * inv * scale[i] + (bias ? bias[i] : 0.0f);
  }
}

namespace {

double reduce_window(int64_t len, int64_t inner, ReduceOp op, const float* x) {
  if (op == ReduceOp::kLogSumExp) {
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t l = 0; l < len; ++l) {
      const double v = x[l * inner];
      if (std::isnan(v)) return v;
      m = std::max(m, v);
    }
    if (len == 0 || std::isinf(m)) return m;  // empty, all -inf, or a +inf in the window
    double acc = 0;
    for (int64_t l = 0; l < len; ++l) acc += std::exp(static_cast<double>(x[l * inner]) - m);
    return m + std::log(acc);
  }
  double acc = op == ReduceOp::kProd ? 1.0 : 0.0;
  for (int64_t l = 0; l < len; ++l) {
    const double v = x[l * inner];
    acc = op == ReduceOp::kProd ? acc * v : acc + v;
  }
  return op == ReduceOp::kMean ? acc / static_cast<double>(len) : acc;
}

}  // namespace

void reduce(int64_t outer, int64_t len, int64_t inner, ReduceOp op, const float* x, float* y) {
#pragma omp parallel for schedule(static) if (outer * inner > 4096)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i)
      y[o * inner + i] = static_cast<float>(reduce_window(len, inner, op, x + o * len * inner + i));
  }
}

void expand(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y) {
  const size_t r = ys.size();
  std::vector<int64_t> st(r, 0);  // x's stride per output dim, 0 where x broadcasts
  int64_t acc = 1;
  for (size_t k = 0; k < xs.size(); ++k) {
    const size_t d = xs.size() - 1 - k, o = r - 1 - k;
    st[o] = xs[d] == 1 ? 0 : acc;
    acc *= xs[d];
  }
  const int64_t n = shape_numel(ys);
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0;
    for (size_t k = r; k-- > 0;) {
      off += (rem % ys[k]) * st[k];
      rem /= ys[k];
    }
    std::memcpy(dst + static_cast<size_t>(i) * esize, src + static_cast<size_t>(off) * esize, esize);
  }
}

void pad(const Shape& xs, const std::vector<int64_t>& pads, int mode, const void* value, size_t esize, const void* x,
         void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  const size_t r = xs.size();
  Shape ys = xs;
  for (size_t d = 0; d < r; ++d) ys[d] += pads[d] + pads[d + r];
  const int64_t n = shape_numel(ys);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0, stride = 1;
    bool outside = false;
    for (size_t k = r; k-- > 0;) {
      int64_t j = rem % ys[k] - pads[k];  // index into x along k
      rem /= ys[k];
      if (j < 0 || j >= xs[k]) {
        if (mode == 0) {
          outside = true;
        } else if (mode == 1) {
          j = j < 0 ? -j : 2 * (xs[k] - 1) - j;
        } else {
          j = j < 0 ? 0 : xs[k] - 1;
        }
      }
      off += j * stride;
      stride *= xs[k];
    }
    std::memcpy(dst + static_cast<size_t>(i) * esize, outside ? value : src + static_cast<size_t>(off) * esize, esize);
  }
}

void tile(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y) {
  const size_t r = ys.size();
  const int64_t n = shape_numel(ys);
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0, stride = 1;
    for (size_t k = r; k-- > 0;) {
      off += (rem % ys[k]) % xs[k] * stride;
      rem /= ys[k];
      stride *= xs[k];
    }
    std::memcpy(dst + static_cast<size_t>(i) * esize, src + static_cast<size_t>(off) * esize, esize);
  }
}

void argmax(int64_t outer, int64_t len, int64_t inner, bool last, const float* x, int64_t* y, bool min) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      float bv = x[o * len * inner + i];
      for (int64_t l = 1; l < len && !std::isnan(bv); ++l) {
        const float v = x[(o * len + l) * inner + i];
        if (std::isnan(v) || (min ? v < bv : v > bv) || (last && v == bv)) {
          bv = v;
          best = l;
        }
      }
      y[o * inner + i] = best;
    }
  }
}

void hardmax(int64_t outer, int64_t len, int64_t inner, const float* x, float* y) {
  if (outer <= 0 || len <= 0 || inner <= 0) return;
  std::vector<int64_t> best(static_cast<size_t>(outer * inner));
  argmax(outer, len, inner, false, x, best.data());
  std::fill(y, y + outer * len * inner, 0.f);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) y[(o * len + best[static_cast<size_t>(o * inner + i)]) * inner + i] = 1.f;
  }
}

void reduce_extreme(int64_t outer, int64_t len, int64_t inner, bool max, const float* x, float* y) {
#pragma omp parallel for schedule(static) if (outer * inner > 4096)
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      if (len == 0) {  // the empty max is -inf, the empty min +inf (as ONNX Runtime)
        y[o * inner + i] = max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
        continue;
      }
      float acc = x[o * len * inner + i];
      for (int64_t l = 1; l < len && !std::isnan(acc); ++l) {
        const float v = x[(o * len + l) * inner + i];
        acc = std::isnan(v) ? v : (max ? std::max(acc, v) : std::min(acc, v));
      }
      y[o * inner + i] = acc;
    }
  }
}

void slice_axis(int64_t outer, int64_t len_in, int64_t inner, int64_t start, int64_t step, int64_t len_out,
                size_t esize, const void* x, void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  const size_t row = static_cast<size_t>(inner) * esize;
  if (step == 1) {  // one block per outer index (a last-axis q/k/v split is 1 copy per row, not 1 per element)
    const size_t block = static_cast<size_t>(len_out) * row;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + static_cast<size_t>(o) * block, src + static_cast<size_t>(o * len_in + start) * row, block);
    return;
  }
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < len_out; ++j) {
      int64_t s = start + j * step;
      std::memcpy(dst + static_cast<size_t>(o * len_out + j) * row, src + static_cast<size_t>(o * len_in + s) * row,
                  row);
    }
  }
}

void gather(int64_t outer, int64_t len, int64_t inner, const int64_t* indices, int64_t n_indices, size_t esize,
            const void* x, void* y) {
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  const size_t row = static_cast<size_t>(inner) * esize;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < n_indices; ++j) {
      int64_t k = indices[j] < 0 ? indices[j] + len : indices[j];
      std::memcpy(dst + static_cast<size_t>(o * n_indices + j) * row, src + static_cast<size_t>(o * len + k) * row,
                  row);
    }
  }
}

namespace {
// Flat source offset of output index `flat` in a broadcast operand of shape `s`.
int64_t broadcast_offset(int64_t flat, const std::vector<int64_t>& out, const std::vector<int64_t>& s) {
  int64_t off = 0, stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    int64_t idx = flat % out[d];
    flat /= out[d];
    off += (s[d] == 1 ? 0 : idx) * stride;
    stride *= s[d];
  }
  return off;
}
}  // namespace

void where(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& c_shape, const uint8_t* cond,
           const std::vector<int64_t>& a_shape, const void* a, const std::vector<int64_t>& b_shape, const void* b,
           size_t esize, void* y) {
  int64_t n = 1;
  for (int64_t d : out_shape) n *= d;
  const auto* pa = static_cast<const uint8_t*>(a);
  const auto* pb = static_cast<const uint8_t*>(b);
  auto* py = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    bool c = cond[broadcast_offset(i, out_shape, c_shape)] != 0;
    const uint8_t* src = c ? pa + broadcast_offset(i, out_shape, a_shape) * static_cast<int64_t>(esize)
                           : pb + broadcast_offset(i, out_shape, b_shape) * static_cast<int64_t>(esize);
    std::memcpy(py + i * static_cast<int64_t>(esize), src, esize);
  }
}

namespace {
int64_t load_as_int64(int type, const void* x, int64_t i) {
  switch (type) {
    case 2:
      return static_cast<const uint8_t*>(x)[i];
    case 3:
      return static_cast<const int8_t*>(x)[i];
    case 6:
      return static_cast<const int32_t*>(x)[i];
    case 7:
      return static_cast<const int64_t*>(x)[i];
    default:
      return static_cast<const uint8_t*>(x)[i] != 0;
  }
}

// v into element i of a `to` integer or bool array: an integer keeps its low bits (two's complement
// wrap, as numpy and ONNX Runtime do: int64 -> int32, 300 -> uint8 44).
void store_int64(int to, int64_t v, void* y, int64_t i) {
  const uint64_t u = static_cast<uint64_t>(v);
  switch (to) {
    case 2:
      static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(u);
      break;
    case 3:
      static_cast<int8_t*>(y)[i] = static_cast<int8_t>(static_cast<uint8_t>(u));
      break;
    case 6:
      static_cast<int32_t*>(y)[i] = static_cast<int32_t>(static_cast<uint32_t>(u));
      break;
    case 7:
      static_cast<int64_t*>(y)[i] = v;
      break;
    default:
      static_cast<uint8_t*>(y)[i] = v != 0 ? 1 : 0;
      break;
  }
}

// Integer (or bool) to anything without a double: an i64 beyond 2^53 stays exact, i64 -> f32
// rounds once.
void cast_integer(int64_t count, int from, const void* x, int to, void* y) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = load_as_int64(from, x, i);
    if (to == 1)
      static_cast<float*>(y)[i] = static_cast<float>(v);
    else
      store_int64(to, v, y, i);
  }
}

// float to an integer type: truncated toward zero. NaN and values out of range, which C++ leaves
// undefined, give what x86's conversion gives (and so ONNX Runtime there): the type's minimum for
// int32 and int64, and for 8 bits the low byte of int32's minimum, 0, as a float goes to 8 bits
// through int32 (300.5 -> uint8 44). To bool: v != 0 (NaN is true).
void cast_float(int64_t count, const float* x, int to, void* y) {
  for (int64_t i = 0; i < count; ++i) {
    const double v = x[i];
    const bool in32 = v >= -2147483648.0 && v < 2147483648.0;
    if (to == 9)
      static_cast<uint8_t*>(y)[i] = v != 0 ? 1 : 0;
    else if (to == 1)
      static_cast<float*>(y)[i] = x[i];
    else if (to == 7)
      static_cast<int64_t*>(y)[i] = v >= -9.2233720368547758e18 && v < 9.2233720368547758e18
                                        ? static_cast<int64_t>(v)
                                        : std::numeric_limits<int64_t>::min();
    else
      store_int64(to, in32 ? static_cast<int32_t>(v) : std::numeric_limits<int32_t>::min(), y, i);
  }
}
}  // namespace

void cast(int64_t count, int from, const void* x, int to, void* y) {
  if (from == 6 && to == 1) {  // int32 -> float (an int8 GEMM's accumulator): one rounding, vectorised
    const auto* __restrict xi = static_cast<const int32_t*>(x);
    auto* __restrict yf = static_cast<float*>(y);
    const int team = detail::team_size(count);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t i = 0; i < count; ++i) yf[i] = static_cast<float>(xi[i]);
    return;
  }
  if (from != 1) return cast_integer(count, from, x, to, y);
  cast_float(count, static_cast<const float*>(x), to, y);
}

}  // namespace fusert::cpu
