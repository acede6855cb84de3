// CPU lowering of GridSample (kernels/cpu/grid_sample.h) and LRN (kernels/cpu/lrn.h): one opaque
// step each. The CUDA backend runs the same steps through its host fallback.
#include "kernels/cpu/grid_sample.h"
#include "kernels/cpu/lrn.h"
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

}  // namespace fusert
