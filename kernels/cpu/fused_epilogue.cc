// Epilogue steps: the elementwise ops every fused kernel applies to a tile while it is in
// cache. Each op is selected once per run and inlined into a flat loop over the run, with the
// tensor operand read through a pointer and a stride (0 = broadcast, 1 = contiguous).
#include <cassert>
#include <cmath>
#include <functional>

#include "graph/base/unary_math.h"
#include "kernels/cpu/erf_vec.h"
#include "kernels/cpu/fused_internal.h"

namespace fusert::cpu::detail {
namespace {

// `omp simd` because in, out and t may alias (always at the same index, which is safe):
// without it the compiler needs runtime alias checks, which -O2 will not emit, and Relu's
// select then compiles to a branch that mispredicts on every sign change (measured 4 ns/elt).
template <class F>
void map_unary(const float* in, int64_t n, float* out, F f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

// The three stride cases get separate loops so the broadcast and contiguous ones vectorise.
template <class F>
void map_binary(const float* in, const float* t, int64_t ts, int64_t n, float* out, F f) {
  if (ts == 0) {
    const float tv = t[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i], tv);
  } else if (ts == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i], t[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i], t[i * ts]);
  }
}

void apply_binary(EpOp op, bool first, const float* in, const float* t, int64_t ts, int64_t n, float* out) {
  switch (op) {
    case EpOp::kAddTensor:
      return map_binary(in, t, ts, n, out, [](float v, float u) { return v + u; });
    case EpOp::kMulTensor:
      return map_binary(in, t, ts, n, out, [](float v, float u) { return v * u; });
    case EpOp::kSubTensor:
      if (first) return map_binary(in, t, ts, n, out, [](float v, float u) { return u - v; });
      return map_binary(in, t, ts, n, out, [](float v, float u) { return v - u; });
    case EpOp::kDivTensor:
      if (first) return map_binary(in, t, ts, n, out, [](float v, float u) { return u / v; });
      return map_binary(in, t, ts, n, out, [](float v, float u) { return v / u; });
    case EpOp::kPowTensor:
      if (first) return map_binary(in, t, ts, n, out, [](float v, float u) { return std::pow(u, v); });
      return map_binary(in, t, ts, n, out, [](float v, float u) { return std::pow(v, u); });
    default:
      assert(false && "not a tensor op");
  }
}

void apply_unary(EpOp op, float a, float b, const float* in, int64_t n, float* out) {
  if (op == EpOp::kErf) return erf_span(in, n, out);  // vectorised (erf_vec.h)
  if (op == EpOp::kGelu) return gelu_span(in, n, out);
  switch (op) {
    // The formula of every row of graph/base/unary_ops.def, inlined into its own loop.
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) \
  case EpOp::k##Name:                                           \
    return map_unary(in, n, out, [a, b](float v) {              \
      (void)a;                                                  \
      (void)b;                                                  \
      return Expr;                                              \
    });
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
    default:
      assert(false && "tensor op without operand");
  }
}

}  // namespace

void apply_op(EpOp op, float a, float b, bool operand_first, const float* in, const float* t, int64_t t_stride,
              int64_t n, float* out) {
  if (n <= 0) return;
  if (is_tensor_op(op)) {
    assert(t != nullptr);
    apply_binary(op, operand_first, in, t, t_stride, n, out);
  } else {
    apply_unary(op, a, b, in, n, out);
  }
}

// Dims of size 1 vanish; an outer dim merges into the inner one when the operand offset stays
// affine across both (stride_outer == stride_inner * dim_inner), which covers contiguous and
// fully broadcast stretches alike.
StridedIndex::StridedIndex(const std::vector<int64_t>& out_shape, const std::vector<int64_t>& operand_strides) {
  assert(out_shape.size() == operand_strides.size());
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (out_shape[d] == 1) continue;
    const int64_t s = operand_strides[d];
    if (!dims.empty() && strides.back() == s * out_shape[d]) {
      dims.back() *= out_shape[d];
      strides.back() = s;
    } else {
      dims.push_back(out_shape[d]);
      strides.push_back(s);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(0);
  }
}

int64_t StridedIndex::locate(int64_t flat, int64_t* run) const {
  int64_t offset = 0;
  for (size_t d = dims.size(); d-- > 0;) {
    const int64_t i = flat % dims[d];
    flat /= dims[d];
    offset += i * strides[d];
    if (d + 1 == dims.size()) *run = dims[d] - i;
  }
  return offset;
}

PreparedSteps::PreparedSteps(const std::vector<EpilogueStep>& steps, const std::vector<int64_t>& out_shape,
                             int64_t channels, int64_t spatial)
    : channels_(channels > 0 ? channels : 1), spatial_(spatial > 0 ? spatial : 1) {
  steps_.reserve(steps.size());
  for (const EpilogueStep& s : steps) {
    if (s.op == EpOp::kIdentity) continue;
    Step prepared{s, {}};
    if (is_tensor_op(s.op) && s.mode == OperandMode::kStrided) prepared.index = StridedIndex(out_shape, s.strides);
    prepared.desc.strides.clear();  // the merged copy in `index` is what runs read
    steps_.push_back(std::move(prepared));
  }
}

void PreparedSteps::apply(int64_t flat0, int64_t count, float* v) const {
  for (const Step& s : steps_) apply_step(s, flat0, count, v);
}

// Splits [flat0, flat0 + count) into runs over which the operand is one pointer and one
// stride; kFull and kScalar are a single run, the others break where their index wraps.
void PreparedSteps::apply_step(const Step& s, int64_t flat0, int64_t count, float* v) const {
  const EpilogueStep& d = s.desc;
  if (!is_tensor_op(d.op)) return apply_unary(d.op, d.a, d.b, v, count, v);
  if (d.mode == OperandMode::kFull) return apply_binary(d.op, d.operand_first, v, d.operand + flat0, 1, count, v);
  if (d.mode == OperandMode::kScalar) return apply_binary(d.op, d.operand_first, v, d.operand, 0, count, v);
  const int64_t row = channels_ * spatial_;
  for (int64_t done = 0; done < count;) {
    const int64_t f = flat0 + done;
    int64_t run = 0, offset = 0, stride = 0;
    if (d.mode == OperandMode::kPerChannel && spatial_ == 1) {
      offset = f % channels_, run = channels_ - offset, stride = 1;
    } else if (d.mode == OperandMode::kPerChannel) {
      offset = (f / spatial_) % channels_, run = spatial_ - f % spatial_;
    } else if (d.mode == OperandMode::kPerRow) {
      offset = f / row, run = row - f % row;
    } else {
      offset = s.index.locate(f, &run);
      stride = s.index.strides.back();
    }
    run = run < count - done ? run : count - done;
    apply_binary(d.op, d.operand_first, v + done, d.operand + offset, stride, run, v + done);
    done += run;
  }
}

bool epilogue_reads(const Epilogue& ep, const float* y, int64_t count) {
  const std::less<const float*> lt;
  for (const auto* steps : {&ep.steps, &ep.post}) {
    for (const EpilogueStep& s : *steps) {
      if (is_tensor_op(s.op) && s.operand != nullptr && !lt(s.operand, y) && lt(s.operand, y + count)) return true;
    }
  }
  return false;
}

}  // namespace fusert::cpu::detail

namespace fusert::cpu {

void apply_epilogue_steps(const std::vector<EpilogueStep>& steps, const std::vector<int64_t>& out_shape, int64_t flat0,
                          int64_t count, int64_t channels, int64_t spatial, float* v) {
  detail::PreparedSteps(steps, out_shape, channels, spatial).apply(flat0, count, v);
}

}  // namespace fusert::cpu
