// Element-indexed ops (kernels/cpu/index_kernels.h): GatherElements, ScatterElements, GatherND,
// ScatterND, OneHot, TopK, Trilu, CumSum.
#include "kernels/cpu/index_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

namespace fusert::cpu {
namespace {

int64_t index_at(const void* idx, bool i32, int64_t k, int64_t len) {
  const int64_t v = i32 ? static_cast<const int32_t*>(idx)[k] : static_cast<const int64_t*>(idx)[k];
  return v < 0 ? v + len : v;
}

// a (op)= b for a reduction of ScatterElements; NaN propagates through max / min (as numpy's
// maximum, ONNX's reference).
void combine(ScatterReduce op, float* a, float b) {
  switch (op) {
    case ScatterReduce::kNone:
      *a = b;
      break;
    case ScatterReduce::kAdd:
      *a += b;
      break;
    case ScatterReduce::kMul:
      *a *= b;
      break;
    case ScatterReduce::kMax:
      *a = (std::isnan(*a) || std::isnan(b)) ? std::nanf("") : std::max(*a, b);
      break;
    case ScatterReduce::kMin:
      *a = (std::isnan(*a) || std::isnan(b)) ? std::nanf("") : std::min(*a, b);
      break;
  }
}

template <typename T, typename Acc>
void cumsum_t(const AxisView& v, bool exclusive, bool reverse, const T* x, T* y) {
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      Acc acc = 0;
      for (int64_t s = 0; s < v.len; ++s) {
        const int64_t l = reverse ? v.len - 1 - s : s;
        const int64_t at = (o * v.len + l) * v.inner + i;
        const T xv = x[at];  // read before y is written: x may alias y
        if (exclusive) {
          y[at] = static_cast<T>(acc);
          acc = static_cast<Acc>(acc + static_cast<Acc>(xv));
        } else {
          acc = static_cast<Acc>(acc + static_cast<Acc>(xv));
          y[at] = static_cast<T>(acc);
        }
      }
    }
  }
}

template <typename T>
void top_k_t(const AxisView& v, int64_t k, bool largest, const T* x, T* vals, int64_t* idx) {
  // a before b in the output: the larger (smaller) first, NaN the largest, then the lower index
  auto before = [largest](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
    bool an = false, bn = false;
    if constexpr (std::is_floating_point_v<T>) an = std::isnan(a.first), bn = std::isnan(b.first);
    if (an || bn) {
      if (an && bn) return a.second < b.second;
      return largest ? an : bn;
    }
    if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
    return a.second < b.second;
  };
  const int64_t lines = v.outer * v.inner;
#pragma omp parallel for schedule(static) if (lines * v.len > 65536)
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t o = line / v.inner, i = line % v.inner;
    std::vector<std::pair<T, int64_t>> row(static_cast<size_t>(v.len));
    for (int64_t l = 0; l < v.len; ++l) row[static_cast<size_t>(l)] = {x[(o * v.len + l) * v.inner + i], l};
    std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      vals[(o * k + j) * v.inner + i] = row[static_cast<size_t>(j)].first;
      idx[(o * k + j) * v.inner + i] = row[static_cast<size_t>(j)].second;
    }
  }
}

// Calls f(k, at) for every element k of the indices' [outer, len, inner] view `iv`, `at` being
// the element of the `xv` view it addresses (same outer and inner, the index along the axis).
template <typename F>
void for_each_index(const AxisView& xv, const AxisView& iv, const void* idx, bool i32, F f) {
  for (int64_t o = 0; o < iv.outer; ++o) {
    for (int64_t l = 0; l < iv.len; ++l) {
      for (int64_t i = 0; i < iv.inner; ++i) {
        const int64_t k = (o * iv.len + l) * iv.inner + i;
        f(k, (o * xv.len + index_at(idx, i32, k, xv.len)) * xv.inner + i);
      }
    }
  }
}

// Offset (in slices) of index tuple `t` of batch `b` inside the batch's data block.
int64_t nd_offset(const NdView& v, const int64_t* idx, int64_t b, int64_t t) {
  const int64_t* tuple = idx + (b * v.count + t) * v.m;
  int64_t off = 0;
  for (int64_t j = 0; j < v.m; ++j) {
    const int64_t d = v.dims[static_cast<size_t>(j)], i = tuple[j];
    off = off * d + (i < 0 ? i + d : i);
  }
  return off;
}

int64_t block_slices(const NdView& v) {
  int64_t n = 1;
  for (int64_t d : v.dims) n *= d;
  return n;
}

}  // namespace

AxisView axis_view_of(const Shape& s, int64_t axis) {
  AxisView v;
  for (int64_t d = 0; d < axis; ++d) v.outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d) v.inner *= s[d];
  v.len = s[static_cast<size_t>(axis)];
  return v;
}

void gather_elements(const AxisView& xv, const AxisView& iv, size_t esize, const void* x, const void* idx, bool idx_i32,
                     void* y) {
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* yb = static_cast<uint8_t*>(y);
  for_each_index(xv, iv, idx, idx_i32, [&](int64_t k, int64_t src) {
    std::memcpy(yb + static_cast<size_t>(k) * esize, xb + static_cast<size_t>(src) * esize, esize);
  });
}

void scatter_elements(const AxisView& xv, const AxisView& uv, size_t esize, ScatterReduce op, const void* x,
                      const void* idx, bool idx_i32, const void* upd, void* y) {
  const size_t total = static_cast<size_t>(xv.outer * xv.len * xv.inner) * esize;
  if (x != y) std::memcpy(y, x, total);
  const auto* ub = static_cast<const uint8_t*>(upd);
  auto* yb = static_cast<uint8_t*>(y);
  for_each_index(xv, uv, idx, idx_i32, [&](int64_t k, int64_t dst) {
    if (op == ScatterReduce::kNone) {
      std::memcpy(yb + static_cast<size_t>(dst) * esize, ub + static_cast<size_t>(k) * esize, esize);
    } else {
      combine(op, reinterpret_cast<float*>(yb) + dst, static_cast<const float*>(upd)[k]);
    }
  });
}

void top_k(const AxisView& v, int64_t k, bool largest, ElemType t, const void* x, void* vals, int64_t* idx) {
  switch (t) {
    case ElemType::kF32:
      return top_k_t(v, k, largest, static_cast<const float*>(x), static_cast<float*>(vals), idx);
    case ElemType::kI32:
      return top_k_t(v, k, largest, static_cast<const int32_t*>(x), static_cast<int32_t*>(vals), idx);
    case ElemType::kI64:
      return top_k_t(v, k, largest, static_cast<const int64_t*>(x), static_cast<int64_t*>(vals), idx);
    case ElemType::kBool:
      return;  // shape inference refuses bool
  }
}

void gather_nd(const NdView& v, size_t esize, const void* x, const int64_t* idx, void* y) {
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* yb = static_cast<uint8_t*>(y);
  const size_t slice = static_cast<size_t>(v.slice) * esize;
  const int64_t block = block_slices(v);
  for (int64_t b = 0; b < v.batches; ++b) {
    for (int64_t t = 0; t < v.count; ++t) {
      const int64_t src = b * block + nd_offset(v, idx, b, t);
      std::memcpy(yb + static_cast<size_t>(b * v.count + t) * slice, xb + static_cast<size_t>(src) * slice, slice);
    }
  }
}

void scatter_nd(const NdView& v, size_t esize, ScatterReduce op, const void* x, int64_t x_elems, const int64_t* idx,
                const void* upd, void* y) {
  if (x != y) std::memcpy(y, x, static_cast<size_t>(x_elems) * esize);
  auto* yb = static_cast<uint8_t*>(y);
  const auto* ub = static_cast<const uint8_t*>(upd);
  const size_t slice = static_cast<size_t>(v.slice) * esize;
  for (int64_t t = 0; t < v.count; ++t) {
    const int64_t dst = nd_offset(v, idx, 0, t);
    if (op == ScatterReduce::kNone) {
      std::memcpy(yb + static_cast<size_t>(dst) * slice, ub + static_cast<size_t>(t) * slice, slice);
      continue;
    }
    float* out = reinterpret_cast<float*>(yb) + dst * v.slice;
    const float* in = static_cast<const float*>(upd) + t * v.slice;
    for (int64_t e = 0; e < v.slice; ++e) combine(op, out + e, in[e]);
  }
}

void one_hot(int64_t outer, int64_t depth, int64_t inner, ElemType it, const void* idx, size_t esize, const void* off,
             const void* on, void* y) {
  auto* yb = static_cast<uint8_t*>(y);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t k = o * inner + i;
      double v = it == ElemType::kF32   ? static_cast<const float*>(idx)[k]
                 : it == ElemType::kI32 ? static_cast<const int32_t*>(idx)[k]
                                        : static_cast<double>(static_cast<const int64_t*>(idx)[k]);
      v = std::trunc(v);
      if (v < 0) v += static_cast<double>(depth);
      const bool inside = v >= 0 && v < static_cast<double>(depth);  // NaN: outside
      for (int64_t d = 0; d < depth; ++d) {
        const bool hot = inside && static_cast<int64_t>(v) == d;
        std::memcpy(yb + static_cast<size_t>((o * depth + d) * inner + i) * esize, hot ? on : off, esize);
      }
    }
  }
}

void trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k, bool upper, size_t esize, const void* x, void* y) {
  const auto* xb = static_cast<const uint8_t*>(x);
  auto* yb = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows; ++r) {
      const size_t row = static_cast<size_t>((b * rows + r) * cols) * esize;
      // Kept columns: [max(0, r + k), cols) for upper, [0, min(cols, r + k + 1)) for lower.
      const int64_t lo = upper ? std::clamp<int64_t>(r + k, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(r + k + 1, 0, cols);
      if (hi <= lo) {
        std::memset(yb + row, 0, static_cast<size_t>(cols) * esize);
        continue;
      }
      std::memset(yb + row, 0, static_cast<size_t>(lo) * esize);  // x may alias y: the kept run is not touched
      if (xb != yb) {
        std::memcpy(yb + row + static_cast<size_t>(lo) * esize, xb + row + static_cast<size_t>(lo) * esize,
                    static_cast<size_t>(hi - lo) * esize);
      }
      std::memset(yb + row + static_cast<size_t>(hi) * esize, 0, static_cast<size_t>(cols - hi) * esize);
    }
  }
}

void cumsum(const AxisView& v, bool exclusive, bool reverse, ElemType t, const void* x, void* y) {
  switch (t) {
    case ElemType::kF32:
      return cumsum_t<float, double>(v, exclusive, reverse, static_cast<const float*>(x), static_cast<float*>(y));
    case ElemType::kI32:
      return cumsum_t<int32_t, uint32_t>(v, exclusive, reverse, static_cast<const int32_t*>(x),
                                         static_cast<int32_t*>(y));
    case ElemType::kI64:
      return cumsum_t<int64_t, uint64_t>(v, exclusive, reverse, static_cast<const int64_t*>(x),
                                         static_cast<int64_t*>(y));
    case ElemType::kBool:
      return;  // shape inference refuses bool
  }
}

}  // namespace fusert::cpu
