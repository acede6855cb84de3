// Unfused unary elementwise kernels (activations and math functions): the formula of each row
// of graph/base/unary_ops.def, chosen once per call and inlined into a contiguous loop; large
// counts split across the OpenMP team.
#include <Eigen/Core>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "graph/base/unary_math.h"
#include "kernels/cpu/erf_vec.h"
#include "kernels/cpu/fused_kernels.h"
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

// span(begin, n) over chunks of 2^14 elements across the team (each element some 8 flops' work).
template <class F>
void for_chunks(int64_t count, F span) {
  if (count <= 0) return;
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  const int team = detail::team_size(count * 8);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) span(c * kChunk, std::min(kChunk, count - c * kChunk));
}

// Sigmoid with Eigen's vectorised exp (a few ulps from libm's expf, which ran scalar: 3.4 ns an
// element, DBNet's 640 x 640 probability map 1.4 ms). Results under FLT_MIN (x below about -87)
// become 0, as libm's overflowing exp gives, never a denormal; NaN stays NaN.
void sigmoid(int64_t count, const float* x, float* y) {
  for_chunks(count, [x, y](int64_t b, int64_t n) {
    Eigen::Map<Eigen::ArrayXf> ya(y + b, n);
    ya = ((-Eigen::Map<const Eigen::ArrayXf>(x + b, n)).exp() + 1.0f).inverse();
    constexpr float kMin = std::numeric_limits<float>::min();
    float* yb = y + b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) yb[i] = yb[i] < kMin ? 0.0f : yb[i];
  });
}

// Erf and Gelu with Eigen's vectorised erf (erf_vec.h).
void erf_family(EpOp op, int64_t count, const float* x, float* y) {
  for_chunks(count, [op, x, y](int64_t b, int64_t n) {
    if (op == EpOp::kErf)
      detail::erf_span(x + b, n, y + b);
    else
      detail::gelu_span(x + b, n, y + b);
  });
}

}  // namespace

// Ops are lambdas, not function pointers: a pointer captured into the OpenMP outlined loop
// would be an indirect call per element.
void unary(EpOp op, float a, float b, int64_t count, const float* x, float* y) {
  if (op == EpOp::kSigmoid) return sigmoid(count, x, y);
  if (op == EpOp::kErf || op == EpOp::kGelu) return erf_family(op, count, x, y);
  switch (op) {
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) \
  case EpOp::k##Name:                                           \
    return map_unary(count, x, y, [a, b](float v) {             \
      (void)a;                                                  \
      (void)b;                                                  \
      return Expr;                                              \
    });
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
    default:
      assert(false && "cpu::unary of a tensor op");
  }
}

}  // namespace fusert::cpu
