// Unary elementwise kernels (activations and math functions). The op is chosen once per call
// and inlined into a contiguous loop; large counts split across the OpenMP team.
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

template <class F>
void map_unary(int64_t count, const float* x, float* y, F f) {
  if (count <= 0) return;
  const int team = detail::team_size(count);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < count; ++i) y[i] = f(x[i]);
}

// Every comparison below is written so that a NaN input fails it and falls through to the
// value itself: Relu(NaN), Clip(NaN), HardSigmoid(NaN) all stay NaN, as in ONNX Runtime.
// Ops are function objects, not function pointers: a pointer captured into the OpenMP outlined
// loop would be an indirect call per element.
struct Relu {
  float operator()(float v) const { return v < 0.f ? 0.f : v; }
};

inline float clamp_nan(float v, float lo, float hi) {
  v = v < lo ? lo : v;
  return v > hi ? hi : v;
}

// 1 / (1 + e^-v); exp overflows to inf for v < -88, giving exactly 0 rather than NaN.
struct Sigmoid {
  float operator()(float v) const { return 1.f / (1.f + std::exp(-v)); }
};

}  // namespace

void unary(UnaryKind kind, int64_t count, const float* x, float* y) {
  switch (kind) {
    case UnaryKind::kRelu:
      return map_unary(count, x, y, Relu());
    case UnaryKind::kSigmoid:
      return map_unary(count, x, y, Sigmoid());
    case UnaryKind::kTanh:
      return map_unary(count, x, y, [](float v) { return std::tanh(v); });
    case UnaryKind::kErf:
      return map_unary(count, x, y, [](float v) { return std::erf(v); });
    case UnaryKind::kSqrt:
      return map_unary(count, x, y, [](float v) { return std::sqrt(v); });
    case UnaryKind::kNeg:
      return map_unary(count, x, y, [](float v) { return -v; });
    case UnaryKind::kExp:
      return map_unary(count, x, y, [](float v) { return std::exp(v); });
    case UnaryKind::kAbs:
      return map_unary(count, x, y, [](float v) { return std::fabs(v); });
    case UnaryKind::kIdentity:
      if (x != y) map_unary(count, x, y, [](float v) { return v; });
      return;
  }
}

void clip(int64_t count, const float* x, float lo, float hi, float* y) {
  map_unary(count, x, y, [lo, hi](float v) { return clamp_nan(v, lo, hi); });
}

void hard_sigmoid(int64_t count, const float* x, float alpha, float beta, float* y) {
  map_unary(count, x, y, [alpha, beta](float v) { return clamp_nan(alpha * v + beta, 0.f, 1.f); });
}

// x * HardSigmoid(x; 1/6, 1/2). Dividing by 6 (not multiplying by a rounded 1/6) keeps the
// gate exactly 0 at x = -3 and exactly 1 at x = 3.
void hard_swish(int64_t count, const float* x, float* y) {
  map_unary(count, x, y, [](float v) { return v * clamp_nan(v / 6.f + 0.5f, 0.f, 1.f); });
}

}  // namespace fusert::cpu
