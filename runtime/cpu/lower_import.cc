// CPU lowering of the ops ONNX exports bring (kernels/cpu/import_kernels.h): comparisons and
// logic, Max/Min, Sum/Mean, PRelu, Resize (its sampling tables from runtime/lowering/resize.h, built
// once; the last two dims on the threaded row kernel) and ConvTranspose (GEMM + col2im). Each is one
// opaque step; the CUDA backend runs those it has no kernel for through its host fallback.
#include <array>
#include <cmath>

#include "kernels/cpu/conv_transpose.h"
#include "kernels/cpu/import_kernels.h"
#include "kernels/cpu/resample.h"
#include "runtime/cpu/layout_follow.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"
#include "runtime/lowering/resize.h"
#include "runtime/lowering/spec.h"

namespace fusert {

namespace {

using cpu_lowering::esize_of;
using cpu_lowering::padded;
using cpu_lowering::shape_of;

cpu::ElemType elem_type(DType t) {
  switch (t) {
    case DType::kI32:
      return cpu::ElemType::kI32;
    case DType::kI64:
      return cpu::ElemType::kI64;
    case DType::kBool:
      return cpu::ElemType::kBool;
    default:
      return cpu::ElemType::kF32;
  }
}

Status lower_compare(const Graph& g, const Node& n, cpu::CompareOp op, Step& s) {
  const Shape ys = shape_of(g, n.outputs[0]);
  const Shape as = padded(shape_of(g, n.inputs[0]), ys.size()), bs = padded(shape_of(g, n.inputs[1]), ys.size());
  const cpu::ElemType t = elem_type(g.value(n.inputs[0]).dtype);
  const ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    cpu::compare(op, t, ys, as, b.raw(ai), bs, b.raw(bi), static_cast<uint8_t*>(b.raw(yi)));
  };
  return Status();
}

// Element-wise ops of any number of broadcast inputs: Max, Min (f32, i32, i64, bool) and Sum,
// Mean (f32; shape inference refused the rest).
enum class Variadic { kMax, kMin, kSum, kMean };

Status lower_variadic(const Graph& g, const Node& n, Variadic op, Step& s) {
  const Shape ys = shape_of(g, n.outputs[0]);
  std::vector<Shape> shapes;
  for (ValueId id : n.inputs) shapes.push_back(padded(shape_of(g, id), ys.size()));
  const cpu::ElemType t = elem_type(g.value(n.outputs[0]).dtype);
  const std::vector<ValueId> ins = n.inputs;
  const ValueId yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    std::vector<const void*> xs;
    for (ValueId id : ins) xs.push_back(b.raw(id));
    if (op == Variadic::kMax || op == Variadic::kMin) {
      cpu::extremum(op == Variadic::kMax, t, ys, shapes, xs, b.raw(yi));
    } else {
      cpu::sum_inputs(op == Variadic::kMean, ys, shapes, xs, b.f32(yi));
    }
  };
  return Status();
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(Equal) { return lower_compare(g, NODE, cpu::CompareOp::kEqual, s); }
LOWER(Less) { return lower_compare(g, NODE, cpu::CompareOp::kLess, s); }
LOWER(Greater) { return lower_compare(g, NODE, cpu::CompareOp::kGreater, s); }
LOWER(LessOrEqual) { return lower_compare(g, NODE, cpu::CompareOp::kLessOrEqual, s); }
LOWER(GreaterOrEqual) { return lower_compare(g, NODE, cpu::CompareOp::kGreaterOrEqual, s); }
LOWER(And) { return lower_compare(g, NODE, cpu::CompareOp::kAnd, s); }
LOWER(Or) { return lower_compare(g, NODE, cpu::CompareOp::kOr, s); }
LOWER(Xor) { return lower_compare(g, NODE, cpu::CompareOp::kXor, s); }
LOWER(Max) { return lower_variadic(g, NODE, Variadic::kMax, s); }
LOWER(Min) { return lower_variadic(g, NODE, Variadic::kMin, s); }
LOWER(Sum) { return lower_variadic(g, NODE, Variadic::kSum, s); }
LOWER(Mean) { return lower_variadic(g, NODE, Variadic::kMean, s); }

LOWER(Not) {
  const Node& n = NODE;
  const int64_t count = shape_numel(shape_of(g, n.outputs[0]));
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::logical_not(count, static_cast<const uint8_t*>(b.raw(xi)), static_cast<uint8_t*>(b.raw(yi)));
  };
  return Status();
}

LOWER(PRelu) {
  const Node& n = NODE;
  const Shape xs = shape_of(g, n.inputs[0]), ss = padded(shape_of(g, n.inputs[1]), xs.size());
  const ValueId xi = n.inputs[0], si = n.inputs[1], yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) { cpu::prelu(xs, b.f32(xi), ss, b.f32(si), b.f32(yi)); };
  return Status();
}

LOWER(Resize) {
  const Node& n = NODE;
  const Shape xs = shape_of(g, n.inputs[0]), ys = shape_of(g, n.outputs[0]);
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 0 && ys[d] > 0)
      return error(StatusCode::kInvalidArgument)
             << "input '" << g.value(n.inputs[0]).name << "' " << shape_str(xs) << " is empty along dim " << d
             << " and cannot be resized to " << ys[d];
  }
  const std::vector<cpu::ResizeAxis> axes = lowering::resize_axes(g, n);
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  // The last two dims resized, the others kept: the threaded row kernel; else the reference.
  const size_t r = xs.size();
  bool two_d = r >= 2;
  for (size_t d = 0; two_d && d + 2 < r; ++d) two_d = xs[d] == ys[d] && cpu::resize_axis_is_identity(axes[d], ys[d]);
  if (two_d) {
    const int64_t outer = shape_numel(Shape(ys.begin(), ys.end() - 2));
    const int64_t ih = xs[r - 2], iw = xs[r - 1], oh = ys[r - 2], ow = ys[r - 1];
    const cpu::ResizeAxis rows = axes[r - 2], cols = axes[r - 1];
    s.kernel = "resize_2d";
    s.run = [=](const BufferTable& b) { cpu::resize_2d(outer, ih, iw, oh, ow, rows, cols, b.f32(xi), b.f32(yi)); };
    if (r == 4) cpu_lowering::follow_resize_2d(g, n, rows, cols, s);
    return Status();
  }
  s.kernel = "resize";
  s.reference_loop = true;
  s.detail = "reference loop: a dim other than the last two is resized";
  s.run = [=](const BufferTable& b) { cpu::resize(xs, ys, axes, b.f32(xi), b.f32(yi)); };
  return Status();
}

LOWER(ConvTranspose) {
  const Node& n = NODE;
  const cpu::ConvTransposeParams p = lowering::conv_transpose_params(g, n);
  const ValueId xi = n.inputs[0], wi = n.inputs[1], yi = n.outputs[0];
  const ValueId bi = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  s.kernel = cpu::conv_transpose_direct(p) ? "conv_transpose_2x2" : "conv_transpose_gemm";
  s.run = [=](const BufferTable& b) {
    cpu::conv_transpose_gemm(p, b.f32(xi), b.f32(wi), bi == kNoValue ? nullptr : b.f32(bi), b.f32(yi));
  };
  return Status();
}

}  // namespace fusert
