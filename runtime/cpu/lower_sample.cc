// CPU lowering of GridSample (kernels/cpu/grid_sample.h): one opaque step. The CUDA backend runs
// the same step through its host fallback.
#include "kernels/cpu/grid_sample.h"
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

}  // namespace fusert
