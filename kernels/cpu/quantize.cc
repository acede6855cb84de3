// CPU kernels of the quantisation ops (kernels/cpu/quantize.h).
#include "kernels/cpu/quantize.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/data_movement.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

using IntMatrix = Eigen::Matrix<int32_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using IntMap = Eigen::Map<IntMatrix>;

// Element i of an i8, u8 or i32 buffer (0 for a null one).
int32_t load(const void* p, DType t, int64_t i) {
  if (!p) return 0;
  switch (t) {
    case DType::kI8:
      return static_cast<const int8_t*>(p)[i];
    case DType::kU8:
      return static_cast<const uint8_t*>(p)[i];
    default:
      return static_cast<const int32_t*>(p)[i];
  }
}

// Calls f(c, begin, end) on X's elements [begin, end), blocks that share channel c, in parallel
// (a per-tensor X, one row, still splits).
template <typename F>
void for_each_block(const QuantAxis& a, F f) {
  const int64_t rows = a.outer * a.channels, block = std::max<int64_t>(1, std::min<int64_t>(a.inner, 8192));
  const int64_t per_row = (a.inner + block - 1) / block;
  const int team = detail::team_size(rows * a.inner);
#pragma omp parallel for num_threads(team) if (team > 1)
  for (int64_t k = 0; k < rows * per_row; ++k) {
    const int64_t row = k / per_row, b = (k % per_row) * block;
    f(row % a.channels, row * a.inner + b, row * a.inner + std::min(a.inner, b + block));
  }
}

// quant::quantize_one over n values with the constants in locals and y restrict: an 8-bit store
// may alias anything, which otherwise reloads them per element and keeps the loop scalar.
template <typename T>
void quantize_span(const float* __restrict x, float s, int z, quant::Range r, int64_t n, T* __restrict y) {
  const float zf = static_cast<float>(z), lo = static_cast<float>(r.lo), hi = static_cast<float>(r.hi);
  for (int64_t i = 0; i < n; ++i) {  // quantize_one's expressions, in its order
    float q = std::rint(x[i] / s) + zf;
    q = q > lo ? q : lo;
    q = q < hi ? q : hi;
    y[i] = static_cast<T>(static_cast<int>(q));
  }
}

template <typename T>
void quantize_blocks(const QuantAxis& a, const float* x, const float* scale, const void* zp, DType t, quant::Range r,
                     T* y) {
  for_each_block(a, [&](int64_t c, int64_t begin, int64_t end) {
    quantize_span(x + begin, scale[c], load(zp, t, c), r, end - begin, y + begin);
  });
}

template <typename T>
void dequantize_blocks(const QuantAxis& a, const T* x, DType t, const float* scale, const void* zp, float* y) {
  for_each_block(a, [&](int64_t c, int64_t begin, int64_t end) {
    const float s = scale[c];
    const int32_t z = load(zp, t, c);
    if (sizeof(T) == 1) {  // 8-bit: the difference fits int32, which vectorises (int64 does not)
      for (int64_t i = begin; i < end; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - z) * s;
    } else {
      for (int64_t i = begin; i < end; ++i) y[i] = quant::dequantize_one(x[i], z, s);
    }
  });
}

// The operand [rows, cols] widened to int32 with its zero point subtracted: per row (`per_row`)
// or per column when the zero point has more than one value.
IntMatrix widen(const void* p, DType t, int64_t rows, int64_t cols, const void* zp, int64_t zp_count, bool per_row) {
  IntMatrix m(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t zi = zp_count == 1 ? 0 : (per_row ? r : c);
      m(r, c) = load(p, t, r * cols + c) - load(zp, t, zi);
    }
  return m;
}

}  // namespace

void quantize_linear(const QuantAxis& a, const float* x, const float* scale, const void* zero_point, DType t, void* y) {
  if (t == DType::kI8)
    quantize_blocks(a, x, scale, zero_point, t, quant::kI8Range, static_cast<int8_t*>(y));
  else
    quantize_blocks(a, x, scale, zero_point, t, quant::kU8Range, static_cast<uint8_t*>(y));
}

void dequantize_linear(const QuantAxis& a, const void* x, DType t, const float* scale, const void* zero_point,
                       float* y) {
  if (t == DType::kI8) return dequantize_blocks(a, static_cast<const int8_t*>(x), t, scale, zero_point, y);
  if (t == DType::kU8) return dequantize_blocks(a, static_cast<const uint8_t*>(x), t, scale, zero_point, y);
  dequantize_blocks(a, static_cast<const int32_t*>(x), t, scale, zero_point, y);
}

namespace {

template <typename T>
void dequantize_nhwc_blocks(const T* x, int64_t n, int64_t c, int64_t pixels, int32_t z, float s, float* y) {
  constexpr int64_t kBlock = 32;  // a 32 x 32 tile: its rows of x and of y stay in L1
  for (int64_t b = 0; b < n; ++b, x += c * pixels, y += c * pixels)
    for (int64_t p0 = 0; p0 < pixels; p0 += kBlock)
      for (int64_t c0 = 0; c0 < c; c0 += kBlock) {
        const int64_t p1 = std::min(pixels, p0 + kBlock), c1 = std::min(c, c0 + kBlock);
        for (int64_t ch = c0; ch < c1; ++ch)
          for (int64_t p = p0; p < p1; ++p)
            y[ch * pixels + p] = static_cast<float>(static_cast<int32_t>(x[p * c + ch]) - z) * s;
      }
}

}  // namespace

void dequantize_nhwc(const void* x, DType t, int64_t n, int64_t c, int64_t pixels, float scale, int32_t zero_point,
                     float* y) {
  if (t == DType::kI8) return dequantize_nhwc_blocks(static_cast<const int8_t*>(x), n, c, pixels, zero_point, scale, y);
  dequantize_nhwc_blocks(static_cast<const uint8_t*>(x), n, c, pixels, zero_point, scale, y);
}

namespace {

// min(0, x...) and max(0, x...), NaN skipped (as std::min / std::max with the running value
// first): 16 lanes side by side, which vectorise (one running value does not), then combined; the
// same result, as min and max are exact.
void range_with_zero(int64_t n, const float* __restrict x, float* lo_out, float* hi_out) {
  constexpr int kLanes = 16;
  float lo[kLanes] = {}, hi[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = x[i + j];
      lo[j] = v < lo[j] ? v : lo[j];
      hi[j] = v > hi[j] ? v : hi[j];
    }
  for (; i < n; ++i) {
    lo[0] = x[i] < lo[0] ? x[i] : lo[0];
    hi[0] = x[i] > hi[0] ? x[i] : hi[0];
  }
  *lo_out = *std::min_element(lo, lo + kLanes);
  *hi_out = *std::max_element(hi, hi + kLanes);
}

}  // namespace

void dynamic_quantize_linear(int64_t n, const float* x, uint8_t* y, float* scale, uint8_t* zero_point) {
  float lo = 0.f, hi = 0.f;
  range_with_zero(n, x, &lo, &hi);
  const float s = (hi - lo) / 255.f;
  if (!(s > 0.f)) {  // all zero (or empty): scale 1 as ONNX Runtime, every value 0
    *scale = 1.f;
    *zero_point = 0;
    std::fill(y, y + n, uint8_t{0});
    return;
  }
  // zero point = saturate(round(0 - min / scale)), as ONNX's reference (qmin 0)
  const int z = quant::quantize_one(-lo, s, 0, quant::kU8Range);
  *scale = s;
  *zero_point = static_cast<uint8_t>(z);
  const QuantAxis all{1, 1, n};
  quantize_linear(all, x, scale, zero_point, DType::kU8, y);
}

void matmul_integer(const IntGemm& g, const void* a, const void* b, int32_t* y) {
  const IntMatrix am = widen(a, g.at, g.m, g.k, g.za, g.za_count, true);
  const IntMatrix bm = widen(b, g.bt, g.k, g.n, g.zb, g.zb_count, false);
  IntMap(y, g.m, g.n).noalias() = am * bm;
}

void conv_integer(const ConvParams& p, const void* x, DType xt, const void* x_zero_point, const void* w, DType wt,
                  const void* w_zero_point, int64_t wz_count, int32_t* y) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group, kk = cg * p.kh * p.kw, spatial = p.oh * p.ow;
  const int32_t zx = load(x_zero_point, xt, 0);
  IntMatrix wm(p.m, kk);  // W - w_zero_point, one row per output channel
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t i = 0; i < kk; ++i) wm(m, i) = load(w, wt, m * kk + i) - load(w_zero_point, wt, wz_count == 1 ? 0 : m);
  IntMatrix cols(kk, spatial);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t c = 0; c < cg; ++c)  // im2col of X - zx: a tap in the padding is 0
        for (int64_t i = 0; i < p.kh; ++i)
          for (int64_t j = 0; j < p.kw; ++j) {
            const int64_t row = (c * p.kh + i) * p.kw + j, plane = (n * p.c + g * cg + c) * p.h * p.w;
            for (int64_t oy = 0; oy < p.oh; ++oy) {
              const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dil_h;
              for (int64_t ox = 0; ox < p.ow; ++ox) {
                const int64_t ix = ox * p.stride_w - p.pad_left + j * p.dil_w;
                const bool in = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
                cols(row, oy * p.ow + ox) = in ? load(x, xt, plane + iy * p.w + ix) - zx : 0;
              }
            }
          }
      IntMap(y + (n * p.m + g * mg) * spatial, mg, spatial).noalias() = wm.middleRows(g * mg, mg) * cols;
    }
}

void qlinear_conv(const ConvParams& p, const void* x, DType xt, const void* x_zero_point, const void* w, DType wt,
                  const void* w_zero_point, int64_t wz_count, const Requant& r, void* y) {
  const int64_t plane = p.oh * p.ow, total = p.n * p.m * plane;
  std::vector<int32_t> acc(static_cast<size_t>(total));
  conv_integer(p, x, xt, x_zero_point, w, wt, w_zero_point, wz_count, acc.data());
  for (int64_t i = 0; i < total; ++i) {
    const int q = requantize_one(r, acc[static_cast<size_t>(i)], (i / plane) % p.m);
    if (r.out == DType::kI8)
      static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
    else
      static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
}

namespace {

// requantize_nhwc on `pixels` [p0, p1) of image b: the block's accumulators (p1 - p0 rows of m) stay
// in cache while every channel reads its column.
template <typename T>
void requantize_block(const Requant& r, int64_t pixels, int64_t m, const int32_t* acc, int64_t b, int64_t p0,
                      int64_t p1, T* y) {
  const quant::Range range = r.out == DType::kI8 ? quant::kI8Range : quant::kU8Range;
  for (int64_t c = 0; c < m; ++c) {
    const int32_t bias = r.bias.empty() ? 0 : r.bias[static_cast<size_t>(c)];
    const float mult = r.multiplier[static_cast<size_t>(c)];
    const int32_t* a = acc + b * pixels * m + c;
    T* o = y + (b * m + c) * pixels;
    for (int64_t p = p0; p < p1; ++p) {  // requantize_one with the channel's constants hoisted
      float v = static_cast<float>(a[p * m] + bias) * mult;
      v = v < r.lo ? r.lo : (v > r.hi ? r.hi : v);
      o[p] = static_cast<T>(quant::quantize_one(v, 1.f, r.zero_point, range));
    }
  }
}

}  // namespace

// requantize_nhwc into NHWC, rows [r0, r1) of [n * pixels, m]: element by element in order.
// The channel constants are locals and y is restrict: an 8-bit store may alias anything, which
// otherwise reloads them per element and keeps the loop scalar (7x slower on MobileNetV2).
template <typename T>
void requantize_rows(const Requant& r, int64_t m, const int32_t* acc, int64_t r0, int64_t r1, T* __restrict y) {
  const quant::Range range = r.out == DType::kI8 ? quant::kI8Range : quant::kU8Range;
  const bool has_bias = !r.bias.empty();  // a loop-invariant test (no per-call zero vector)
  const int32_t* __restrict bias = r.bias.data();
  const float* __restrict mult = r.multiplier.data();
  const float lo = r.lo, hi = r.hi;
  const int32_t zp = r.zero_point;
  for (int64_t row = r0; row < r1; ++row) {
    const int32_t* __restrict a = acc + row * m;
    T* __restrict o = y + row * m;
    for (int64_t c = 0; c < m; ++c) {
      float v = static_cast<float>(a[c] + (has_bias ? bias[c] : 0)) * mult[c];
      v = v < lo ? lo : (v > hi ? hi : v);
      o[c] = static_cast<T>(quant::quantize_one(v, 1.f, zp, range));
    }
  }
}

void requantize_nhwc(const Requant& r, int64_t n, int64_t pixels, int64_t m, const int32_t* acc, void* y,
                     bool nhwc_out) {
  const int64_t block = 64, blocks = (pixels + block - 1) / block;
  const int team = detail::team_size(n * pixels * m);
  if (nhwc_out) {
    const int64_t rows = n * pixels, row_blocks = (rows + block - 1) / block;
#pragma omp parallel for num_threads(team) if (team > 1)
    for (int64_t k = 0; k < row_blocks; ++k) {
      const int64_t r0 = k * block, r1 = std::min(rows, r0 + block);
      if (r.out == DType::kI8)
        requantize_rows(r, m, acc, r0, r1, static_cast<int8_t*>(y));
      else
        requantize_rows(r, m, acc, r0, r1, static_cast<uint8_t*>(y));
    }
    return;
  }
#pragma omp parallel for num_threads(team) if (team > 1)
  for (int64_t k = 0; k < n * blocks; ++k) {
    const int64_t b = k / blocks, p0 = (k % blocks) * block, p1 = std::min(pixels, p0 + block);
    if (r.out == DType::kI8)
      requantize_block(r, pixels, m, acc, b, p0, p1, static_cast<int8_t*>(y));
    else
      requantize_block(r, pixels, m, acc, b, p0, p1, static_cast<uint8_t*>(y));
  }
}

namespace {

// QLinearAdd in the arithmetic ONNX Runtime uses for the same pattern, which its users compare with.
// Where ONNX Runtime fuses it (A, B and Y of one type, no clamp left: a Relu whose zero point is the
// type's minimum is dropped), its QLinearAdd kernel: in y's units
// v = a * (sa / sy) + (b * (sb / sy) + (zy - (sa / sy * za + sb / sy * zb))), each product and sum one
// fused multiply-add, then rounded half to even and saturated. Elsewhere it runs DequantizeLinear,
// Add, the activation and QuantizeLinear as written: ((a - za) * sa + (b - zb) * sb), clamped, divided
// by sy, rounded, + zy. The two differ next to a tie now and then (MobileNetV2: one value in 12,544 at
// the 9th block's Add, which later layers carried to 1.9e-2 relative L2 at the logits) and at an exact
// tie (power-of-two scale ratios), where the fused kernel rounds after adding an odd zero point
// (0.5 + 105 -> 106, where 0.5 -> 0, + 105 gives 105). tools/ort_cases_quant.py checks both.
bool ort_fused_form(const QAddParams& p) {
  if (p.at != p.bt || p.at != p.yt) return false;
  if (!(p.lo > -3.4e38f || p.hi < 3.4e38f)) return true;
  const quant::Range r = p.yt == DType::kI8 ? quant::kI8Range : quant::kU8Range;
  const double b0 = static_cast<double>(p.lo) / p.sy + p.zy, b1 = static_cast<double>(p.hi) / p.sy + p.zy;
  return std::min(b0, b1) <= r.lo && std::max(b0, b1) >= r.hi;  // the clamp changes nothing
}

template <typename A, typename B, typename Y>
void qlinear_add_fused_form(const QAddParams& p, int64_t n, const A* __restrict a, const B* __restrict b,
                            Y* __restrict y) {
  const quant::Range range = p.yt == DType::kI8 ? quant::kI8Range : quant::kU8Range;
  const float ra = p.sa / p.sy, rb = p.sb / p.sy;
  const float fixed = static_cast<float>(p.zy) - (ra * static_cast<float>(p.za) + rb * static_cast<float>(p.zb));
  const float qlo = static_cast<float>(range.lo), qhi = static_cast<float>(range.hi);
  const int team = detail::team_size(n);
#pragma omp parallel for num_threads(team) if (team > 1)
  for (int64_t i = 0; i < n; ++i) {
    float q = std::rint(std::fma(static_cast<float>(a[i]), ra, std::fma(static_cast<float>(b[i]), rb, fixed)));
    q = q > qlo ? q : qlo;
    q = q < qhi ? q : qhi;
    y[i] = static_cast<Y>(static_cast<int>(q));
  }
}

template <typename A, typename B, typename Y>
void qlinear_add_typed(const QAddParams& p, int64_t n, const A* __restrict a, const B* __restrict b, Y* __restrict y) {
  if (ort_fused_form(p)) return qlinear_add_fused_form(p, n, a, b, y);
  const quant::Range range = p.yt == DType::kI8 ? quant::kI8Range : quant::kU8Range;
  const float sa = p.sa, sb = p.sb, sy = p.sy, lo = p.lo, hi = p.hi;
  const int32_t za = p.za, zb = p.zb, zy = p.zy;
  const int team = detail::team_size(n);
#pragma omp parallel for num_threads(team) if (team > 1)
  for (int64_t i = 0; i < n; ++i) {
    // DequantizeLinear's formula on 8-bit values: the difference fits int32 (vectorises, unlike int64)
    float v = static_cast<float>(static_cast<int32_t>(a[i]) - za) * sa +
              static_cast<float>(static_cast<int32_t>(b[i]) - zb) * sb;
    v = v < lo ? lo : (v > hi ? hi : v);
    y[i] = static_cast<Y>(quant::quantize_one(v, sy, zy, range));
  }
}

template <typename A, typename B>
void qlinear_add_y(const QAddParams& p, int64_t n, const A* a, const B* b, void* y) {
  if (p.yt == DType::kI8)
    qlinear_add_typed(p, n, a, b, static_cast<int8_t*>(y));
  else
    qlinear_add_typed(p, n, a, b, static_cast<uint8_t*>(y));
}

template <typename A>
void qlinear_add_b(const QAddParams& p, int64_t n, const A* a, const void* b, void* y) {
  if (p.bt == DType::kI8)
    qlinear_add_y(p, n, a, static_cast<const int8_t*>(b), y);
  else
    qlinear_add_y(p, n, a, static_cast<const uint8_t*>(b), y);
}

}  // namespace

void qlinear_add(const QAddParams& p, int64_t n, const void* a, const void* b, void* y) {
  if (p.at == DType::kI8)
    qlinear_add_b(p, n, static_cast<const int8_t*>(a), b, y);
  else
    qlinear_add_b(p, n, static_cast<const uint8_t*>(a), b, y);
}

void relayout_8bit(const void* x, bool from_nhwc, int64_t n, int64_t c, int64_t pixels, void* y) {
  const Shape shape = from_nhwc ? Shape{n, pixels, c} : Shape{n, c, pixels};
  transpose_bytes(shape, {0, 2, 1}, static_cast<const uint8_t*>(x), static_cast<uint8_t*>(y));
}

namespace {

// x [n, c, pixels] 8-bit in one layout copied into the other in `out` (relayout_8bit).
const void* relayout(const void* x, bool from_nhwc, const QAddLayouts& l, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(l.n * l.c * l.pixels));
  relayout_8bit(x, from_nhwc, l.n, l.c, l.pixels, out->data());
  return out->data();
}

}  // namespace

void qlinear_add(const QAddParams& p, const QAddLayouts& l, const void* a, const void* b, void* y) {
  thread_local std::vector<uint8_t> a_copy, b_copy;  // per thread: concurrent runs never share one
  if (l.a_nhwc != l.y_nhwc) a = relayout(a, l.a_nhwc, l, &a_copy);
  if (l.b_nhwc != l.y_nhwc) b = relayout(b, l.b_nhwc, l, &b_copy);
  qlinear_add(p, l.n * l.c * l.pixels, a, b, y);
}

}  // namespace fusert::cpu
