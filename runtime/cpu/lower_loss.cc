// CPU lowering of the losses (kernels/cpu/loss_kernels.h): NegativeLogLikelihoodLoss, one opaque
// step whose targets are range-checked before the kernel runs (an error names node, tensor and
// position). The CUDA backend runs the same step through its host fallback.
#include <limits>

#include "kernels/cpu/loss_kernels.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(NegativeLogLikelihoodLoss) {
  const Node& n = NODE;
  const Shape& x = cpu_lowering::shape_of(g, n.inputs[0]);
  cpu::NllView v;
  v.n = x[0];
  v.c = x[1];
  for (size_t d = 2; d < x.size(); ++d) v.d *= x[d];
  const std::string& red = n.attr_s("reduction");
  const cpu::LossReduce r = red == "none"  ? cpu::LossReduce::kNone
                            : red == "sum" ? cpu::LossReduce::kSum
                                           : cpu::LossReduce::kMean;
  const int64_t ignore = n.attr_i("ignore_index");
  const bool has_ignore = ignore != std::numeric_limits<int64_t>::min();
  const bool i32 = g.value(n.inputs[1]).dtype == DType::kI32;
  const bool weighted = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  const ValueId xi = n.inputs[0], ti = n.inputs[1], wi = weighted ? n.inputs[2] : kNoValue, yi = n.outputs[0];
  const std::string node = n.name, tensor = g.value(ti).name;
  s.check = [=](const BufferTable& b) -> Status {
    for (int64_t k = 0; k < v.n * v.d; ++k) {
      const int64_t t = i32 ? static_cast<const int32_t*>(b.raw(ti))[k] : static_cast<const int64_t*>(b.raw(ti))[k];
      if ((has_ignore && t == ignore) || (t >= 0 && t < v.c)) continue;
      return error(StatusCode::kInvalidArgument)
             << "node '" << node << "' (NegativeLogLikelihoodLoss): target " << t << " at position " << k << " of '"
             << tensor << "' is not a class in [0, " << v.c << ")" << (has_ignore ? " nor ignore_index" : "");
    }
    return Status();
  };
  s.run = [=](const BufferTable& b) {
    cpu::nll_loss(v, b.f32(xi), b.raw(ti), i32, weighted ? b.f32(wi) : nullptr, has_ignore, ignore, r, b.f32(yi));
  };
  return Status();
}

}  // namespace fusert
