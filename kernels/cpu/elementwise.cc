// Unfused unary elementwise kernels (activations and math functions): the formula of each row
// of graph/base/unary_ops.def, chosen once per call and inlined into a contiguous loop; large
// counts split across the OpenMP team.
#include <cassert>
#include <cmath>

#include "graph/base/unary_math.h"
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

}  // namespace

// Ops are lambdas, not function pointers: a pointer captured into the OpenMP outlined loop
// would be an indirect call per element.
void unary(EpOp op, float a, float b, int64_t count, const float* x, float* y) {
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
