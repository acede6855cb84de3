// Naive references for the fused-kernel tests: scalar epilogue ops, operand indexing by full
// unravel, direct convolution and GEMM in double, LayerNorm and softmax rows. They share no
// code with kernels/cpu, so a fused kernel is always checked against an independent composition.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/fused_kernels.h"

namespace fusert::test {

namespace cpu = fusert::cpu;

/// The fused kernels size their tiles and row blocks from Eigen's L2 estimate. Shrinking it
/// (to the kernels' floor) makes the tiling independent of the test machine, so small test
/// shapes still span several pixel tiles, channel blocks and row blocks. Restored on exit.
class SmallTiles {
 public:
  SmallTiles() : l1_(Eigen::l1CacheSize()), l2_(Eigen::l2CacheSize()), l3_(Eigen::l3CacheSize()) {
    Eigen::setCpuCacheSizes(l1_, 256 * 1024, l3_);  // 64 KiB hangs Eigen 3.4's threaded GEMM
  }
  ~SmallTiles() { Eigen::setCpuCacheSizes(l1_, l2_, l3_); }
  SmallTiles(const SmallTiles&) = delete;
  SmallTiles& operator=(const SmallTiles&) = delete;

 private:
  std::ptrdiff_t l1_, l2_, l3_;
};

/// One epilogue op on one value, written from the op table's definition.
inline float ref_op(const cpu::EpilogueStep& s, float v, float t) {
  using cpu::EpOp;
  const double x = v;
  switch (s.op) {
    case EpOp::kAddTensor:
      return v + t;
    case EpOp::kSubTensor:
      return s.operand_first ? t - v : v - t;
    case EpOp::kMulTensor:
      return v * t;
    case EpOp::kDivTensor:
      return s.operand_first ? t / v : v / t;
    case EpOp::kPowTensor:
      return s.operand_first ? std::pow(t, v) : std::pow(v, t);
    case EpOp::kRelu:
      return std::isnan(v) ? v : std::max(v, 0.f);
    case EpOp::kClip:
      return std::isnan(v) ? v : std::min(std::max(v, s.a), s.b);
    case EpOp::kSigmoid:
      return static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    case EpOp::kHardSigmoid: {
      const float g = s.a * v + s.b;
      return std::isnan(g) ? g : std::max(0.f, std::min(1.f, g));
    }
    case EpOp::kHardSwish:
      return std::isnan(v) ? v : v * std::max(0.f, std::min(1.f, v / 6.f + 0.5f));
    case EpOp::kFakeQuantize: {  // QuantizeLinear (round half to even, saturate; NaN low) then DequantizeLinear
      if (std::isnan(v)) return s.b * s.a;
      const float r = std::nearbyint(v / s.a);
      return std::min(std::max(r, s.b), s.b + 255.f) * s.a;
    }
    case EpOp::kGelu:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    case EpOp::kGeluTanh: {
      const double k = std::sqrt(2.0 / 3.14159265358979323846);
      return static_cast<float>(0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))));
    }
    case EpOp::kTanh:
      return static_cast<float>(std::tanh(x));
    case EpOp::kErf:
      return static_cast<float>(std::erf(x));
    case EpOp::kSqrt:
      return static_cast<float>(std::sqrt(x));
    case EpOp::kNeg:
      return -v;
    case EpOp::kExp:
      return static_cast<float>(std::exp(x));
    case EpOp::kAbs:
      return std::fabs(v);
    case EpOp::kLog:
      return static_cast<float>(std::log(x));
    case EpOp::kReciprocal:
      return static_cast<float>(1.0 / x);
    case EpOp::kLeakyRelu:
      return std::isnan(v) ? v : (v < 0.f ? s.a * v : v);
    case EpOp::kSoftplus:
      return static_cast<float>(std::log1p(std::exp(x)));
    case EpOp::kSwish:
      return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(s.a) * x)));
    case EpOp::kIdentity:
      return v;
    case EpOp::kElu:
      return std::isnan(v) ? v : static_cast<float>(x < 0 ? s.a * (std::exp(x) - 1.0) : x);
    case EpOp::kSelu:
      return std::isnan(v) ? v : static_cast<float>(s.b * (x <= 0 ? s.a * (std::exp(x) - 1.0) : x));
    case EpOp::kCelu:
      return std::isnan(v) ? v : static_cast<float>(std::max(0.0, x) + std::min(0.0, s.a * (std::exp(x / s.a) - 1.0)));
    case EpOp::kThresholdedRelu:
      return v > s.a ? v : 0.f;
    case EpOp::kShrink:
      return v < -s.a ? v + s.b : (v > s.a ? v - s.b : 0.f);
    case EpOp::kSoftsign:
      return static_cast<float>(x / (1.0 + std::fabs(x)));
    case EpOp::kSign:
      return std::isnan(v) ? v : static_cast<float>((v > 0) - (v < 0));
    case EpOp::kFloor:
      return std::floor(v);
    case EpOp::kCeil:
      return std::ceil(v);
    case EpOp::kRound:
      return std::nearbyint(v);
    case EpOp::kSin:
      return static_cast<float>(std::sin(x));
    case EpOp::kCos:
      return static_cast<float>(std::cos(x));
    case EpOp::kTan:
      return static_cast<float>(std::tan(x));
    case EpOp::kAsin:
      return static_cast<float>(std::asin(x));
    case EpOp::kAcos:
      return static_cast<float>(std::acos(x));
    case EpOp::kAtan:
      return static_cast<float>(std::atan(x));
    case EpOp::kSinh:
      return static_cast<float>(std::sinh(x));
    case EpOp::kCosh:
      return static_cast<float>(std::cosh(x));
    case EpOp::kAsinh:
      return static_cast<float>(std::asinh(x));
    case EpOp::kAcosh:
      return static_cast<float>(std::acosh(x));
    case EpOp::kAtanh:
      return static_cast<float>(std::atanh(x));
  }
  return v;
}

/// Operand element of flat output index `flat` under the documented indexing rules.
inline float ref_operand(const cpu::EpilogueStep& s, const std::vector<int64_t>& shape, int64_t flat, int64_t channels,
                         int64_t spatial) {
  using cpu::OperandMode;
  if (s.operand == nullptr) return 0.f;
  switch (s.mode) {
    case OperandMode::kFull:
      return s.operand[flat];
    case OperandMode::kPerChannel:
      return s.operand[(flat / spatial) % channels];
    case OperandMode::kPerRow:
      return s.operand[flat / (channels * spatial)];
    case OperandMode::kScalar:
      return s.operand[0];
    case OperandMode::kStrided: {
      int64_t offset = 0, rest = flat;
      for (size_t d = shape.size(); d-- > 0;) {
        offset += (rest % shape[d]) * s.strides[d];
        rest /= shape[d];
      }
      return s.operand[offset];
    }
  }
  return 0.f;
}

/// Applies steps to every element of y, element by element.
inline void ref_steps(const std::vector<cpu::EpilogueStep>& steps, const std::vector<int64_t>& shape, int64_t channels,
                      int64_t spatial, std::vector<float>& y) {
  for (int64_t f = 0; f < static_cast<int64_t>(y.size()); ++f) {
    for (const cpu::EpilogueStep& s : steps) y[f] = ref_op(s, y[f], ref_operand(s, shape, f, channels, spatial));
  }
}

/// Direct ONNX Conv in double (bias nullable), output [N, M, OH, OW].
inline std::vector<float> ref_conv(const cpu::ConvParams& p, const float* x, const float* w, const float* bias) {
  const int64_t cg = p.c / p.group, mg = p.m / p.group;
  std::vector<float> y(static_cast<size_t>(p.n * p.m * p.oh * p.ow));
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t m = 0; m < p.m; ++m)
      for (int64_t oy = 0; oy < p.oh; ++oy)
        for (int64_t ox = 0; ox < p.ow; ++ox) {
          double acc = bias ? bias[m] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t ky = 0; ky < p.kh; ++ky)
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dil_h;
                const int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dil_w;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                acc += double(x[((n * p.c + m / mg * cg + ci) * p.h + iy) * p.w + ix]) *
                       w[((m * cg + ci) * p.kh + ky) * p.kw + kx];
              }
          y[static_cast<size_t>(((n * p.m + m) * p.oh + oy) * p.ow + ox)] = static_cast<float>(acc);
        }
  return y;
}

/// ConvParams with oh/ow derived from explicit pads as ONNX does.
inline cpu::ConvParams conv_params(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t stride,
                                   int64_t pad, int64_t group = 1) {
  cpu::ConvParams p;
  p.n = n, p.c = c, p.h = h, p.w = w, p.m = m, p.kh = k, p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.group = group;
  p.oh = (h + 2 * pad - k) / stride + 1;
  p.ow = (w + 2 * pad - k) / stride + 1;
  return p;
}

/// In-place LayerNorm of one row in double (shift nullable).
inline void ref_layer_norm(float* v, int64_t n, const float* scale, const float* shift, float eps) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += v[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
  var /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((v[i] - mean) / std::sqrt(var + eps) * scale[i] + (shift ? shift[i] : 0.0));
}

/// In-place softmax of one row in double; all -inf gives zeros.
inline void ref_softmax(float* v, int64_t n) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::max<double>(mx, v[i]);
  if (std::isinf(mx) && mx < 0) {
    std::fill(v, v + n, 0.f);
    return;
  }
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(v[i] - mx);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::exp(v[i] - mx) / sum);
}

/// Gemm-style epilogue over [rows, n]: steps, optional LayerNorm per row, post.
inline void ref_row_epilogue(const cpu::Epilogue& ep, int64_t n, std::vector<float>& y) {
  const int64_t rows = static_cast<int64_t>(y.size()) / n;
  ref_steps(ep.steps, ep.out_shape, n, 1, y);
  if (ep.tail == cpu::EpTail::kLayerNorm) {
    for (int64_t r = 0; r < rows; ++r) ref_layer_norm(y.data() + r * n, n, ep.ln_scale, ep.ln_shift, ep.ln_epsilon);
  }
  ref_steps(ep.post, ep.out_shape, n, 1, y);
}

/// Conv-style epilogue over [N, channels, plane]: steps, optional GlobalAveragePool, post.
inline std::vector<float> ref_conv_epilogue(const cpu::Epilogue& ep, int64_t n, int64_t channels, int64_t plane,
                                            std::vector<float> y) {
  ref_steps(ep.steps, ep.out_shape, channels, plane, y);
  if (ep.tail != cpu::EpTail::kGlobalAvgPool) {
    ref_steps(ep.post, ep.out_shape, channels, plane, y);
    return y;
  }
  std::vector<float> pooled(static_cast<size_t>(n * channels));
  for (int64_t i = 0; i < n * channels; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < plane; ++j) sum += y[static_cast<size_t>(i * plane + j)];
    pooled[static_cast<size_t>(i)] = static_cast<float>(sum / static_cast<double>(plane));
  }
  ref_steps(ep.post, {n, channels}, channels, 1, pooled);
  return pooled;
}

/// A tensor step reading `operand` in `mode`.
inline cpu::EpilogueStep tensor_step(cpu::EpOp op, const float* operand, cpu::OperandMode mode,
                                     std::vector<int64_t> strides = {}, bool operand_first = false) {
  cpu::EpilogueStep s;
  s.op = op, s.operand = operand, s.mode = mode, s.strides = std::move(strides), s.operand_first = operand_first;
  return s;
}

/// A unary step (a, b: Clip bounds or HardSigmoid alpha/beta).
inline cpu::EpilogueStep unary_step(cpu::EpOp op, float a = 0.f, float b = 0.f) {
  cpu::EpilogueStep s;
  s.op = op, s.a = a, s.b = b;
  return s;
}

}  // namespace fusert::test
