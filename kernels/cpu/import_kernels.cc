// Reference kernels of kernels/cpu/import_kernels.h: plain loops, one output element at a time,
// with an odometer over the output coordinate that keeps each operand's offset (stride 0 on a
// broadcast dim) instead of dividing per element.
#include "kernels/cpu/import_kernels.h"

#include <cmath>
#include <cstring>

#include "kernels/cpu/broadcast_iter.h"

namespace fusert::cpu {

namespace {

template <typename T>
bool cmp(CompareOp op, T a, T b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kLessOrEqual:
      return a <= b;
    case CompareOp::kGreaterOrEqual:
      return a >= b;
    case CompareOp::kAnd:
      return a && b;
    case CompareOp::kOr:
      return a || b;
    case CompareOp::kXor:
      return static_cast<bool>(a) != static_cast<bool>(b);
  }
  return false;
}

template <typename T>
void compare_t(CompareOp op, const Shape& ys, const Shape& as, const T* a, const Shape& bs, const T* b, uint8_t* y) {
  for_each_broadcast(ys, {as, bs},
                     [&](int64_t k, const std::vector<int64_t>& o) { y[k] = cmp(op, a[o[0]], b[o[1]]) ? 1 : 0; });
}

template <typename T>
void extremum_t(bool max, const Shape& ys, const std::vector<Shape>& shapes, const std::vector<const void*>& xs, T* y) {
  for_each_broadcast(ys, shapes, [&](int64_t k, const std::vector<int64_t>& o) {
    T v = static_cast<const T*>(xs[0])[o[0]];
    for (size_t j = 1; j < xs.size(); ++j) {
      const T u = static_cast<const T*>(xs[j])[o[j]];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) continue;
        if (std::isnan(u)) {
          v = u;
          continue;
        }
      }
      v = max ? (u > v ? u : v) : (u < v ? u : v);
    }
    y[k] = v;
  });
}

}  // namespace

void compare(CompareOp op, ElemType t, const Shape& ys, const Shape& as, const void* a, const Shape& bs, const void* b,
             uint8_t* y) {
  switch (t) {
    case ElemType::kF32:
      return compare_t(op, ys, as, static_cast<const float*>(a), bs, static_cast<const float*>(b), y);
    case ElemType::kI32:
      return compare_t(op, ys, as, static_cast<const int32_t*>(a), bs, static_cast<const int32_t*>(b), y);
    case ElemType::kI64:
      return compare_t(op, ys, as, static_cast<const int64_t*>(a), bs, static_cast<const int64_t*>(b), y);
    case ElemType::kBool:
      return compare_t(op, ys, as, static_cast<const uint8_t*>(a), bs, static_cast<const uint8_t*>(b), y);
  }
}

void logical_not(int64_t count, const uint8_t* x, uint8_t* y) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] ? 0 : 1;
}

void sum_inputs(bool mean, const Shape& ys, const std::vector<Shape>& shapes, const std::vector<const void*>& xs,
                float* y) {
  const float inv = 1.0f / static_cast<float>(xs.size());
  for_each_broadcast(ys, shapes, [&](int64_t k, const std::vector<int64_t>& o) {
    float v = static_cast<const float*>(xs[0])[o[0]];
    for (size_t j = 1; j < xs.size(); ++j) v += static_cast<const float*>(xs[j])[o[j]];
    y[k] = mean ? v * inv : v;
  });
}

void extremum(bool max, ElemType t, const Shape& ys, const std::vector<Shape>& shapes,
              const std::vector<const void*>& xs, void* y) {
  switch (t) {
    case ElemType::kF32:
      return extremum_t(max, ys, shapes, xs, static_cast<float*>(y));
    case ElemType::kI32:
      return extremum_t(max, ys, shapes, xs, static_cast<int32_t*>(y));
    case ElemType::kI64:
      return extremum_t(max, ys, shapes, xs, static_cast<int64_t*>(y));
    case ElemType::kBool:
      return extremum_t(max, ys, shapes, xs, static_cast<uint8_t*>(y));
  }
}

void prelu(const Shape& xs, const float* x, const Shape& ss, const float* slope, float* y) {
  for_each_broadcast(xs, {xs, ss}, [&](int64_t k, const std::vector<int64_t>& o) {
    const float v = x[o[0]];
    y[k] = v < 0.0f ? slope[o[1]] * v : v;  // v < 0 (not v >= 0): NaN takes the v branch
  });
}

void resize(const Shape& xs, const Shape& ys, const std::vector<ResizeAxis>& axes, const float* x, float* y) {
  const size_t r = ys.size();
  std::vector<int64_t> xstride(r, 1);
  for (size_t d = r; d-- > 1;) xstride[d - 1] = xstride[d] * xs[d];
  int64_t total = 1;
  for (int64_t d : ys) total *= d;
  std::vector<int64_t> coord(r, 0), tap(r, 0);
  for (int64_t k = 0; k < total; ++k) {
    // Sum over every combination of taps (2^linear dims terms; 1 for nearest).
    double acc = 0.0;
    std::fill(tap.begin(), tap.end(), 0);
    for (;;) {
      int64_t off = 0;
      double w = 1.0;
      for (size_t d = 0; d < r; ++d) {
        const ResizeAxis& a = axes[d];
        const size_t e = static_cast<size_t>(coord[d] * a.taps + tap[d]);
        off += a.index[e] * xstride[d];
        w *= a.weight[e];
      }
      acc += w * x[off];
      size_t d = r;
      while (d-- > 0) {
        if (++tap[d] < axes[d].taps) break;
        tap[d] = 0;
      }
      if (d == static_cast<size_t>(-1)) break;
    }
    y[k] = static_cast<float>(acc);
    for (size_t d = r; d-- > 0;) {
      if (++coord[d] < ys[d]) break;
      coord[d] = 0;
    }
  }
}

void conv_transpose(const ConvTransposeParams& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, plane = p.oh * p.ow;
  std::vector<double> acc(static_cast<size_t>(p.m * plane));
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t m = 0; m < p.m; ++m) {
      std::fill(acc.begin() + m * plane, acc.begin() + (m + 1) * plane, bias ? static_cast<double>(bias[m]) : 0.0);
    }
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ci = g * cg + c;
        const float* xp = x + ((n * p.c + ci) * p.h) * p.w;
        for (int64_t m = 0; m < mg; ++m) {
          const float* wp = w + ((ci * mg + m) * p.kh) * p.kw;
          double* ap = acc.data() + (g * mg + m) * plane;
          for (int64_t ih = 0; ih < p.h; ++ih) {
            for (int64_t iw = 0; iw < p.w; ++iw) {
              const double v = xp[ih * p.w + iw];
              for (int64_t kh = 0; kh < p.kh; ++kh) {
                const int64_t oh = ih * p.sh - p.pt + kh * p.dh;
                if (oh < 0 || oh >= p.oh) continue;
                for (int64_t kw = 0; kw < p.kw; ++kw) {
                  const int64_t ow = iw * p.sw - p.pl + kw * p.dw;
                  if (ow < 0 || ow >= p.ow) continue;
                  ap[oh * p.ow + ow] += v * wp[kh * p.kw + kw];
                }
              }
            }
          }
        }
      }
    }
    float* yp = y + n * p.m * plane;
    for (int64_t i = 0; i < p.m * plane; ++i) yp[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
  }
}

}  // namespace fusert::cpu
