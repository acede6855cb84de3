// CPU lowering of GridSample (kernels/cpu/grid_sample.h), LRN (kernels/cpu/lrn.h), ReverseSequence
// and Det (kernels/cpu/sequence_ops.h): one opaque step each; sequence lengths are checked to lie in
// [0, T] before the kernel runs. The CUDA backend runs the same steps through its host fallback.
#include <cmath>

#include "kernels/cpu/grid_sample.h"
#include "kernels/cpu/lrn.h"
#include "kernels/cpu/roi_align.h"
#include "kernels/cpu/sequence_ops.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(GridSample) {
  const Node& n = NODE;
  const Shape x = cpu_lowering::shape_of(g, n.inputs[0]), y = cpu_lowering::shape_of(g, n.outputs[0]);
  cpu::GridSampleParams p;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.oh = y[2];
  p.ow = y[3];
  const std::string &mode = n.attr_s("mode"), &pad = n.attr_s("padding_mode");
  p.mode = mode == "nearest"                      ? cpu::GridMode::kNearest
           : mode == "bicubic" || mode == "cubic" ? cpu::GridMode::kCubic
                                                  : cpu::GridMode::kLinear;
  p.padding = pad == "border"       ? cpu::GridPadding::kBorder
              : pad == "reflection" ? cpu::GridPadding::kReflection
                                    : cpu::GridPadding::kZeros;
  p.align_corners = n.attr_i("align_corners") != 0;
  const ValueId xi = n.inputs[0], gi = n.inputs[1], yi = n.outputs[0];
  s.kernel = "grid_sample";
  s.run = [=](const BufferTable& b) { cpu::grid_sample(p, b.f32(xi), b.f32(gi), b.f32(yi)); };
  return Status();
}

LOWER(LRN) {
  const Node& n = NODE;
  const Shape x = cpu_lowering::shape_of(g, n.inputs[0]);
  cpu::LrnParams p;
  p.n = x[0];
  p.c = x[1];
  p.s = shape_numel(x) / std::max<int64_t>(1, x[0] * x[1]);
  p.size = n.attr_i("size");
  p.alpha = static_cast<float>(n.attr_f("alpha"));
  p.beta = static_cast<float>(n.attr_f("beta"));
  p.bias = static_cast<float>(n.attr_f("bias"));
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.kernel = "lrn";
  s.run = [=](const BufferTable& b) { cpu::lrn(p, b.f32(xi), b.f32(yi)); };
  return Status();
}

LOWER(ReverseSequence) {
  const Node& n = NODE;
  const Shape x = cpu_lowering::shape_of(g, n.inputs[0]);
  const bool time_first = n.attr_i("time_axis") == 0;
  const int64_t steps = time_first ? x[0] : x[1], batch = time_first ? x[1] : x[0];
  const int64_t inner = shape_numel(x) / std::max<int64_t>(1, x[0] * x[1]);
  const int64_t time_stride = time_first ? batch * inner : inner, batch_stride = time_first ? inner : steps * inner;
  const size_t es = cpu_lowering::esize_of(g, n.inputs[0]);
  const ValueId xi = n.inputs[0], li = n.inputs[1], yi = n.outputs[0];
  const std::string node = n.name, tensor = g.value(li).name;
  s.check = [=](const BufferTable& b) -> Status {
    for (int64_t k = 0; k < batch; ++k) {
      const int64_t v = static_cast<const int64_t*>(b.raw(li))[k];
      if (v >= 0 && v <= steps) continue;
      return error(StatusCode::kInvalidArgument)
             << "node '" << node << "' (ReverseSequence): length " << v << " at position " << k << " of '" << tensor
             << "' is outside [0, " << steps << "]";
    }
    return Status();
  };
  s.run = [=](const BufferTable& b) {
    cpu::reverse_sequence(steps, batch, time_stride, batch_stride, inner, es, static_cast<const int64_t*>(b.raw(li)),
                          b.raw(xi), b.raw(yi));
  };
  return Status();
}

LOWER(Det) {
  const Node& n = NODE;
  const Shape x = cpu_lowering::shape_of(g, n.inputs[0]);
  const int64_t m = x.back(), count = shape_numel(x) / std::max<int64_t>(1, m * m);
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::det(count, m, b.f32(xi), b.f32(yi)); };
  return Status();
}

// RoiAlign: batch indices checked in [0, N), each region's coordinates finite and the adaptive
// sample grid at most 64 x 64 per bin (a region a million pixels wide is an error, not a hang).
LOWER(RoiAlign) {
  const Node& n = NODE;
  const Shape x = cpu_lowering::shape_of(g, n.inputs[0]), y = cpu_lowering::shape_of(g, n.outputs[0]);
  cpu::RoiAlignParams p;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.rois = y[0];
  p.oh = y[2];
  p.ow = y[3];
  p.sampling = n.attr_i("sampling_ratio");
  p.scale = static_cast<float>(n.attr_f("spatial_scale"));
  p.max = n.attr_s("mode") == "max";
  p.half_pixel = n.attr_s("coordinate_transformation_mode") == "half_pixel";
  const ValueId xi = n.inputs[0], ri = n.inputs[1], bi = n.inputs[2], yi = n.outputs[0];
  const std::string node = n.name, rname = g.value(ri).name, bname = g.value(bi).name;
  s.check = [=](const BufferTable& b) -> Status {
    const auto* idx = static_cast<const int64_t*>(b.raw(bi));
    const float* r = b.f32(ri);
    for (int64_t k = 0; k < p.rois; ++k) {
      if (idx[k] < 0 || idx[k] >= p.n)
        return error(StatusCode::kInvalidArgument)
               << "node '" << node << "' (RoiAlign): batch index " << idx[k] << " at position " << k << " of '" << bname
               << "' is outside [0, " << p.n << ")";
      for (int j = 0; j < 4; ++j) {
        const double v = static_cast<double>(r[k * 4 + j]) * p.scale;
        if (!std::isfinite(v) || std::fabs(v) > 1e7)
          return error(StatusCode::kInvalidArgument)
                 << "node '" << node << "' (RoiAlign): region " << k << " of '" << rname << "' has coordinate "
                 << r[k * 4 + j] << " (finite, |x * spatial_scale| <= 1e7)";
      }
      const double rw = std::fabs(static_cast<double>(r[k * 4 + 2] - r[k * 4])) * p.scale,
                   rh = std::fabs(static_cast<double>(r[k * 4 + 3] - r[k * 4 + 1])) * p.scale;
      if (p.sampling == 0 &&
          (std::ceil(rw / static_cast<double>(p.ow)) > 64 || std::ceil(rh / static_cast<double>(p.oh)) > 64))
        return error(StatusCode::kInvalidArgument) << "node '" << node << "' (RoiAlign): region " << k << " of '"
                                                   << rname << "' needs more than 64 x 64 samples per bin (give "
                                                   << "sampling_ratio)";
    }
    return Status();
  };
  s.run = [=](const BufferTable& b) {
    cpu::roi_align(p, b.f32(xi), b.f32(ri), static_cast<const int64_t*>(b.raw(bi)), b.f32(yi));
  };
  return Status();
}

}  // namespace fusert
