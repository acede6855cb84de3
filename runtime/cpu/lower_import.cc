// CPU lowering of the ops ONNX exports bring (kernels/cpu/import_kernels.h): comparisons and
// logic, Max/Min, Sum/Mean, PRelu, Resize (its sampling tables built here, once; the last two dims on
// the threaded row kernel) and ConvTranspose (GEMM + col2im). Each is one opaque step; the CUDA
// backend runs the same steps through its host fallback.
#include <array>
#include <cmath>

#include "kernels/cpu/conv_transpose.h"
#include "kernels/cpu/import_kernels.h"
#include "kernels/cpu/resample.h"
#include "runtime/cpu/layout_follow.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

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

// Source coordinate of output coordinate `o` along one dim (ONNX Resize's
// coordinate_transformation_mode; scale as given, or out/in when sizes were given). The resized
// length is in * scale unrounded, as ONNX's reference implementation has it (it differs from the
// output size when scales do not divide evenly: 4 * 0.6 = 2.4, 2 outputs).
double source_coord(const std::string& mode, int64_t o, int64_t in, double scale) {
  const double x = static_cast<double>(o), resized = static_cast<double>(in) * scale;
  if (mode == "pytorch_half_pixel") return resized > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {  // opset 19: half_pixel, re-centred when in * scale is not whole
    const double adjustment = std::floor(resized) / resized,
                 offset = static_cast<double>(in) / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const std::string& mode, double x) {
  const double f = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1.0 : f);
  return static_cast<int64_t>(std::round(x));
}

// Cubic convolution weights (Keys, coefficient a) of the taps floor(x) - 1 .. floor(x) + 2 at
// fraction r = x - floor(x), as ONNX's reference writes them.
std::array<double, 4> cubic_weights(double r, double a) {
  const auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
  const auto far = [a](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

cpu::ResizeAxis resize_axis(const Node& n, int64_t in, int64_t out, double scale) {
  const std::string mode = n.attr_s("mode");
  const bool linear = mode == "linear", cubic = mode == "cubic";
  const std::string ct = n.attr_s("coordinate_transformation_mode"), nm = n.attr_s("nearest_mode");
  cpu::ResizeAxis a;
  a.taps = cubic ? 4 : linear ? 2 : 1;
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(ct, o, in, scale);
    if (cubic) {  // the input extended by its edge values; exclude_outside drops those taps instead
      const double f = std::floor(x);
      const std::array<double, 4> w = cubic_weights(x - f, n.attr_f("cubic_coeff_a"));
      double kept = 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(f) - 1 + t;
        const bool outside = i < 0 || i >= in;
        kept += outside ? 0.0 : w[static_cast<size_t>(t)];
      }
      const bool exclude = n.attr_i("exclude_outside") != 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(f) - 1 + t;
        const bool outside = i < 0 || i >= in;
        a.index.push_back(std::min(std::max<int64_t>(i, 0), in - 1));
        const double wt = exclude ? (outside ? 0.0 : w[static_cast<size_t>(t)] / kept) : w[static_cast<size_t>(t)];
        a.weight.push_back(static_cast<float>(wt));
      }
      continue;
    }
    if (!linear) {
      a.index.push_back(std::min(std::max<int64_t>(nearest_index(nm, x), 0), in - 1));
      a.weight.push_back(1.0f);
      continue;
    }
    x = std::min(std::max(x, 0.0), static_cast<double>(in - 1));
    const int64_t i0 = static_cast<int64_t>(std::floor(x)), i1 = std::min(i0 + 1, in - 1);
    const double r = x - static_cast<double>(i0);
    a.index.insert(a.index.end(), {i0, i1});
    a.weight.insert(a.weight.end(), {static_cast<float>(1.0 - r), static_cast<float>(r)});
  }
  return a;
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
  const bool has_scales = n.inputs.size() > 2 && n.inputs[2] != kNoValue && g.value(n.inputs[2]).data.numel() > 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 0 && ys[d] > 0)
      return error(StatusCode::kInvalidArgument)
             << "input '" << g.value(n.inputs[0]).name << "' " << shape_str(xs) << " is empty along dim " << d
             << " and cannot be resized to " << ys[d];
  }
  std::vector<cpu::ResizeAxis> axes;
  for (size_t d = 0; d < xs.size(); ++d) {
    const double scale = has_scales ? static_cast<double>(g.value(n.inputs[2]).data.f32()[d])
                                    : static_cast<double>(ys[d]) / static_cast<double>(xs[d]);
    axes.push_back(resize_axis(n, xs[d], ys[d], scale));
  }
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
  const Shape x = shape_of(g, n.inputs[0]), w = shape_of(g, n.inputs[1]), y = shape_of(g, n.outputs[0]);
  const auto st = n.attr_ints("strides"), dl = n.attr_ints("dilations"), pd = n.attr_ints("pads");
  const cpu::ConvTransposeParams p{x[0],  x[1],  x[2],  x[3],  y[1],  y[2], y[3], w[2], w[3], n.attr_i("group"),
                                   st[0], st[1], dl[0], dl[1], pd[0], pd[1]};
  const ValueId xi = n.inputs[0], wi = n.inputs[1], yi = n.outputs[0];
  const ValueId bi = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  s.kernel = cpu::conv_transpose_direct(p) ? "conv_transpose_2x2" : "conv_transpose_gemm";
  s.run = [=](const BufferTable& b) {
    cpu::conv_transpose_gemm(p, b.f32(xi), b.f32(wi), bi == kNoValue ? nullptr : b.f32(bi), b.f32(yi));
  };
  return Status();
}

}  // namespace fusert
