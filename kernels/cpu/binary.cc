// Numpy-broadcast binary ops (ONNX Add/Sub/Mul/Div/Pow). Dims are merged wherever both operands
// broadcast the same way, so the common cases (same shape, scalar, per-channel) reduce to a
// few long contiguous inner loops with a stride-0 or stride-1 operand.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

// The output as merged dims; a/b strides are 0 along a dim the operand broadcasts.
struct BroadcastPlan {
  std::vector<int64_t> dims, a_stride, b_stride;
  int64_t total = 1;
};

BroadcastPlan plan_broadcast(const std::vector<int64_t>& out, const std::vector<int64_t>& a,
                             const std::vector<int64_t>& b) {
  assert(a.size() == out.size() && b.size() == out.size());
  std::vector<int64_t> dims;
  std::vector<bool> a_full, b_full;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;  // size-1 dims never move an index
    const bool af = a[d] != 1, bf = b[d] != 1;
    if (!dims.empty() && a_full.back() == af && b_full.back() == bf) {
      dims.back() *= out[d];
    } else {
      dims.push_back(out[d]);
      a_full.push_back(af);
      b_full.push_back(bf);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    a_full.push_back(true);
    b_full.push_back(true);
  }
  BroadcastPlan plan;
  plan.dims = dims;
  plan.a_stride.assign(dims.size(), 0);
  plan.b_stride.assign(dims.size(), 0);
  int64_t a_run = 1, b_run = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (a_full[d]) {
      plan.a_stride[d] = a_run;
      a_run *= dims[d];
    }
    if (b_full[d]) {
      plan.b_stride[d] = b_run;
      b_run *= dims[d];
    }
    plan.total *= dims[d];
  }
  return plan;
}

// y[i] = op(a[i * sa], b[i * sb]) with sa, sb each 0 or 1; the branches give the compiler
// stride-1 loops it can vectorise.
template <class Op>
void inner_loop(Op op, int64_t len, const float* a, int64_t sa, const float* b, int64_t sb, float* y) {
  if (sa && sb) {
    for (int64_t i = 0; i < len; ++i) y[i] = op(a[i], b[i]);
  } else if (sa) {
    const float bv = b[0];
    for (int64_t i = 0; i < len; ++i) y[i] = op(a[i], bv);
  } else if (sb) {
    const float av = a[0];
    for (int64_t i = 0; i < len; ++i) y[i] = op(av, b[i]);
  } else {
    std::fill(y, y + len, op(a[0], b[0]));
  }
}

// Work items are (row, chunk) pairs: rows cover the outer merged dims, chunks split a long
// inner dim, so a same-shape or scalar op (a single row) still spreads over the team.
template <class Op>
void run_broadcast(const BroadcastPlan& plan, const float* a, const float* b, float* y, Op op) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t rank = static_cast<int64_t>(plan.dims.size());
  const int64_t inner = plan.dims.back(), rows = plan.total / inner;
  const int64_t chunks = (inner + kChunk - 1) / kChunk;
  const int64_t sa = plan.a_stride.back(), sb = plan.b_stride.back();
  const int team = detail::team_size(plan.total);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t item = 0; item < rows * chunks; ++item) {
    const int64_t row = item / chunks, begin = (item % chunks) * kChunk;
    const int64_t len = std::min(kChunk, inner - begin);
    int64_t a_off = begin * sa, b_off = begin * sb;
    for (int64_t d = rank - 2, rem = row; d >= 0; --d) {
      const int64_t idx = rem % plan.dims[d];
      rem /= plan.dims[d];
      a_off += idx * plan.a_stride[d];
      b_off += idx * plan.b_stride[d];
    }
    inner_loop(op, len, a + a_off, sa, b + b_off, sb, y + row * inner + begin);
  }
}

}  // namespace

void binary(BinaryKind kind, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& a_shape, const float* a,
            const std::vector<int64_t>& b_shape, const float* b, float* y) {
  for (int64_t d : out_shape) {
    if (d == 0) return;
  }
  const BroadcastPlan plan = plan_broadcast(out_shape, a_shape, b_shape);
  switch (kind) {
    case BinaryKind::kAdd:
      return run_broadcast(plan, a, b, y, std::plus<float>());
    case BinaryKind::kSub:
      return run_broadcast(plan, a, b, y, std::minus<float>());
    case BinaryKind::kMul:
      return run_broadcast(plan, a, b, y, std::multiplies<float>());
    case BinaryKind::kDiv:
      return run_broadcast(plan, a, b, y, std::divides<float>());
    case BinaryKind::kPow:
      return run_broadcast(plan, a, b, y, [](float u, float v) { return std::pow(u, v); });
  }
}

}  // namespace fusert::cpu
